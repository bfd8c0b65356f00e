"""``evalkit.plan``: the memory plan of a fine-tuning cycle, from a model config.

read (config.json) -> validate (keys, options) -> compute (bounds per moment
and phase) -> recommend; rendering is :mod:`evalkit.report.plan_table`'s.
No torch: the plan is arithmetic, so it runs anywhere before a GPU is rented.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

from evalkit._version import __version__
from evalkit.io import sha256_file
from evalkit.options import takes
from evalkit.plan.config import ModelShape, load_model_shape
from evalkit.plan.gpus import GpuSpec, choose, memory_classes, registry
from evalkit.plan.options import Options, PlanParams, resolve_options
from evalkit.plan.phases import PHASES, TRAIN_STEPS, Bounds, Moment, compute_bounds
from evalkit.plan.recommend import (
    ALLOCATOR_SLACK,
    CUDA_CONTEXT_BYTES,
    GB,
    needs,
    recommend,
    smallest_class,
)
from evalkit.plan.stacks import stack_for
from evalkit.plan.storage import disk_bytes, host_bytes
from evalkit.plan.time_api import TimeRequest, plan_time, wants_time
from evalkit.records._plan import (
    ApartFromBound,
    ModelSummary,
    PhaseFit,
    PlanInputs,
    PlanOptions,
    PlanRecommendation,
    PlanResult,
    Step,
)
from evalkit.records._plan_sheet import DiskPlan, HostPlan, StackPlan

DIGITS = 4
SHEET_FIGURES = 6


def _gb(amount: int) -> float:
    return round(amount / GB, DIGITS)


def _sheet_gb(amount: int) -> float:
    """Six significant figures: a tiny adapter's kB and a 70B model's disk both keep theirs."""
    return float(f"{amount / GB:.{SHEET_FIGURES}g}")


def _step(moment: Moment) -> Step:
    return Step(
        gb=_gb(moment.total), terms={name: _gb(value) for name, value in moment.terms.items()}
    )


def _components(bounds: Bounds) -> dict[str, float]:
    names = list(bounds.steps[TRAIN_STEPS[0]].terms)
    return {
        name: _gb(max(bounds.steps[step].terms[name] for step in TRAIN_STEPS)) for name in names
    }


def _summary(shape: ModelShape, bounds: Bounds) -> ModelSummary:
    return ModelSummary(
        path=shape.path,
        sha256=sha256_file(Path(shape.path)),
        model_type=shape.model_type,
        known_family=shape.known_family,
        hidden_size=shape.hidden_size,
        num_layers=shape.num_layers,
        num_heads=shape.num_heads,
        num_kv_heads=shape.num_kv_heads,
        head_dim=shape.head_dim,
        intermediate_size=shape.intermediate_size,
        vocab_size=shape.vocab_size,
        tied_embeddings=shape.tied_embeddings,
        total_params=bounds.counts.total,
    )


def _options(options: Options) -> PlanOptions:
    return PlanOptions(
        method=options.method,
        r=options.r,
        targets=list(options.targets),
        targets_spec=options.targets_spec,
        quant=options.quant,
        kbit_prep=options.kbit_prep,
        seq_len=options.seq_len,
        batch=options.batch_size,  # the record keeps its key
        grad_checkpointing=options.grad_checkpointing,
        optimizer=options.optimizer,
        precision=options.precision,
        attention=options.attention,
        gpus=options.gpus,
        eval_batch=options.eval_batch_size,  # the record keeps its key
        eval_tokens=options.eval_tokens,
        export=options.export,
        save_total_limit=options.save_total_limit,
    )


def phase_bounds(shape: ModelShape, options: Options) -> dict[str, int]:
    """Bytes of each phase (load, train, eval, export), per GPU: what smoke compares with."""
    bounds = compute_bounds(shape, options)
    return {name: bounds.phases[name].total for name in PHASES}


def _order_sheet(
    shape: ModelShape,
    options: Options,
    bounds: Bounds,
    shown: tuple[GpuSpec, ...],
    needs_gb: float,
) -> tuple[HostPlan, DiskPlan, dict[str, StackPlan]]:
    """Host RAM, disk and each shown GPU class's stack: the rest of what a rental needs."""
    host = host_bytes(shape, options, bounds.counts, bounds.sizes, bounds.trainable)
    disk = disk_bytes(shape, options, bounds.counts, bounds.sizes, bounds.trainable)
    return (
        HostPlan(
            load_gb=_sheet_gb(host.load),
            export_gb=_sheet_gb(host.export),
            peak_gb=_sheet_gb(host.peak),
        ),
        DiskPlan(
            base_gb=_sheet_gb(disk.base),
            checkpoint_gb=_sheet_gb(disk.checkpoint),
            checkpoints=disk.checkpoints,
            export_gb=_sheet_gb(disk.export),
            adapter_gb=_sheet_gb(disk.adapter),
            total_gb=_sheet_gb(disk.total),
        ),
        {gpu.name: stack_for(gpu, shape, options, needs_gb) for gpu in shown},
    )


def plan_shape(shape: ModelShape, options: Options, time: TimeRequest | None = None) -> PlanResult:
    """The plan of an already-read model under resolved options (and its hours, if asked).

    The GPU registry (the shipped table and each ``--gpu`` row of ``time``)
    gives the memory recommendation its classes, the hours their cards and
    the order sheet its stacks: one table for all three.
    """
    specs = tuple(time.gpu) if time is not None else ()
    classes = memory_classes(registry(specs))
    bounds = compute_bounds(shape, options)
    phases = {name: bounds.phases[name].total for name in PHASES}
    chosen = recommend(
        phases,
        options,
        lambda **changes: phase_bounds(shape, replace(options, **changes)),
        classes,
    )
    most = max(_gb(needs(total)) for total in phases.values())
    host, disk, stack = _order_sheet(shape, options, bounds, choose(specs), most)
    train = phases["train"]
    summary = _summary(shape, bounds)
    timed = None
    if wants_time(time):
        assert time is not None
        timed = plan_time(
            shape,
            options,
            time,
            needs_gb=most,
            config_sha256=summary.sha256,
            checkpoint_bytes=disk_bytes(
                shape, options, bounds.counts, bounds.sizes, bounds.trainable
            ).checkpoint,
        )
    return PlanResult(
        evalkit_version=__version__,
        inputs=PlanInputs(config=summary, options=_options(options)),
        components=_components(bounds),
        apart=ApartFromBound(
            cuda_context=_gb(CUDA_CONTEXT_BYTES),
            allocator_slack=_gb(round(ALLOCATOR_SLACK * train)),
            paged_optimizer_states=_gb(bounds.paged_states),
        ),
        lower_bound_gb=_gb(train),
        train_steps={name: _step(bounds.steps[name]) for name in TRAIN_STEPS},
        train_peak_step=bounds.peak_step,
        phases={name: _gb(total) for name, total in phases.items()},
        phase_terms={name: _step(bounds.phases[name]) for name in PHASES},
        phase_fit={
            name: PhaseFit(needs_gb=_gb(needs(total)), gpu_gb=smallest_class(needs(total), classes))
            for name, total in phases.items()
        },
        trainable_params=bounds.trainable,
        recommendation=PlanRecommendation(
            gpu_gb=chosen.gpu_gb,
            gpus=chosen.gpus,
            phase=chosen.phase,
            needs_gb=chosen.needs_gb,
            advice=chosen.advice,
        ),
        time=timed,
        host=host,
        disk=disk,
        stack=stack,
    )


@takes(PlanParams)
def plan(
    config: Path | str,
    params: PlanParams | None = None,
    /,
    *,
    time: TimeRequest | None = None,
    json: str | os.PathLike[str] | None = None,
    force: bool = False,
    **options: Any,
) -> PlanResult:
    """Plan the GPU memory of loading, training, evaluating and exporting a model.

    ``config`` is a model's config.json or its folder; ``params`` a
    :class:`~evalkit.plan.options.PlanParams` (the command's options), or
    its fields as keywords: ``method``, ``r``, ``targets`` (``"all-linear"``
    or comma-separated names), ``quant``, ``kbit_prep``, ``seq_len``,
    ``batch_size``, ``grad_checkpointing``, ``optimizer``, ``precision``,
    ``attention``, ``gpus``, ``eval_batch_size``, ``eval_tokens``, ``export``.
    Each phase's amount is a lower bound of its peak allocated memory: a GPU
    with less cannot run it. Unset options default as PEFT does (r=8, its
    per-family targets), as QLoRA's recipe does (nf4-dq, k-bit preparation,
    gradient checkpointing), and ``eval_tokens`` to ``seq_len``. ``time`` (a
    :class:`~evalkit.plan.time_api.TimeRequest`: the tokens of an epoch, the
    evaluation's work, a smoke report, a campaign) adds ``result.time``.

    With ``json`` the plan is written there too, as ``evalkit plan --json``
    writes it (which is this call): atomically, never over the config or a
    file ``time`` reads, and over an existing file only with ``force``.
    """
    from evalkit.io import ReportFile

    given = PlanParams.build(params, options)
    read = (config, *((time.tokens_report, time.measured) if time is not None else ()))
    target = ReportFile.checked(json, force=force, inputs=read)
    shape = load_model_shape(Path(config))
    result = plan_shape(shape, resolve_options(shape, given), time)
    target.write(result.model_dump_json(indent=2) + "\n")
    return result
