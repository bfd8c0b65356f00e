"""``evalkit smoke``: a few real steps, measured phase by phase beside ``evalkit plan``.

read (base folder, tokenizer, split) -> validate (options through the
plan's own checks, the device, the data) -> plan (the bound of every phase
under exactly the settings that run) -> run (:mod:`evalkit.model.smoke_run`:
load, train, generate, save, reload in a fresh process) -> a
:class:`~evalkit.records._smoke.SmokeReport`. Everything that can be
wrong with the input is found before the model loads.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalkit._version import __version__
from evalkit.model.options import SmokeParams, check_trainer_args
from evalkit.model.smoke_prepare import Prepared, one_table, prepare
from evalkit.options import takes
from evalkit.records._smoke import (
    PHASE_NAMES,
    SMOKE_VERSION,
    MemoryMeasure,
    PhasePeak,
    SmokeData,
    SmokeReport,
    Throughput,
)

if TYPE_CHECKING:
    from evalkit.io import TableLike
    from evalkit.model.smoke_run import Outcome

GB = 10**9
DIGITS = 4


def _gb(amount: int | None) -> float | None:
    return None if amount is None else round(amount / GB, DIGITS)


def _phases(prepared: Prepared, peaks: dict[str, int], comparable: bool) -> dict[str, PhasePeak]:
    phases = {}
    for name in PHASE_NAMES:
        measured = peaks.get(name)
        bound = prepared.bounds[name]
        ratio = round(bound / measured, DIGITS) if comparable and measured else None
        phases[name] = PhasePeak(measured_gb=_gb(measured), bound_gb=_gb(bound) or 0.0, ratio=ratio)
    return phases


def _rate(amount: float, seconds: float | None) -> float | None:
    return round(amount / seconds, 3) if seconds and amount else None


def _device_memory_gb(device: str) -> float | None:
    if device != "cuda":
        return None
    from evalkit.model import runtime

    return round(runtime.torch_module().cuda.get_device_properties(0).total_memory / GB, 2)


def throughput(prepared: Prepared, outcome: Outcome) -> Throughput:
    """Rates of the phases that ran: training after its warm-up step, the pass, the save.

    A training step computes every position of its batch, ``batch_size`` x
    ``seq_len`` (each row is padded to it).
    """
    from evalkit.model.generate import device_record

    timed = outcome.step_seconds[1:]
    tokens = len(timed) * prepared.settings.batch * prepared.settings.seq_len
    seconds = sum(timed)
    eval_seconds = outcome.eval_seconds or 0.0
    return Throughput(
        train_tokens_per_second=_rate(tokens, seconds),
        train_tokens=tokens,
        train_seconds=round(seconds, 6),
        eval_tokens_per_second=_rate(outcome.eval_new_tokens, eval_seconds),
        eval_new_tokens=outcome.eval_new_tokens,
        eval_seconds=round(eval_seconds, 6),
        save_seconds=None if outcome.save_seconds is None else round(outcome.save_seconds, 6),
        reload_seconds=(
            None if outcome.reload_seconds is None else round(outcome.reload_seconds, 6)
        ),
        device=device_record(prepared.device),
        device_memory_gb=_device_memory_gb(prepared.device),
    )


@takes(SmokeParams)
def smoke(
    base: Path | str,
    data: TableLike,
    params: SmokeParams | None = None,
    /,
    *,
    progress: bool = False,
    debug: bool = False,
    json: str | os.PathLike[str] | None = None,
    force: bool = False,
    **values: Any,
) -> SmokeReport:
    """Run ``steps`` real optimizer steps of ``method`` on ``data`` and measure every phase.

    ``data`` is one split file (``hf_split`` picks a DatasetDict folder's
    split), or a polars, pandas or pyarrow frame. ``params`` is a
    :class:`~evalkit.model.options.SmokeParams` (the command's options), or
    its fields as keywords.

    The base in ``base`` is loaded on ``device`` in ``dtype``; a new LoRA
    adapter of rank ``r`` (PEFT's default targets unless ``targets``), or
    the whole model, trains with AdamW on batches of ``batch_size`` rows of the
    conversations in ``text``, each cut and padded to ``seq_len`` tokens, the
    loss on the tokens ``evalkit tokens`` reports as supervised. Then a short
    greedy generation, the adapter (or model) saved and reloaded in a fresh
    process, its logits compared with the trained model's. Each phase's
    peak is measured beside the plan's bound for exactly these settings.
    With ``trainer="hf"`` and ``resume_at`` K, the resume check follows
    (:mod:`evalkit.model.resume`): transformers' Trainer run straight twice and
    killed after checkpoint K then resumed, each in a fresh process.
    Bad input raises an ``EvalkitError`` (exit 2) before the model loads; a
    failed step or reload is in the report (``verdict`` ``fail``).

    With ``json`` the report is written there too, as ``evalkit smoke --json``
    writes it (which is this call): atomically, never over an input, and over
    an existing file only with ``force`` (checked before the model loads).
    """
    from evalkit.io import ReportFile, is_path

    given = SmokeParams.build(params, values)
    read = (base, data, given.tokenizer, given.trainer_args)
    target = ReportFile.checked(json, force=force, inputs=filter(is_path, read))
    report = _smoke(base, data, given, progress, debug)
    target.write(report.model_dump_json(indent=2) + "\n")
    return report


def _smoke(
    base: Path | str, data: TableLike, given: SmokeParams, progress: bool, debug: bool
) -> SmokeReport:
    """The smoke run of ``given`` (see :func:`smoke`)."""
    from evalkit.io import FRAME_SOURCE
    from evalkit.model.generate import device_record
    from evalkit.model.memory import NOTES
    from evalkit.model.resume import plan_resume, run_resume_check
    from evalkit.model.smoke_run import run_phases

    check_trainer_args(given)
    columns = list(given.text)
    prepared = prepare(base, one_table(data, given.hf_split), given)
    resume_plan = plan_resume(prepared, given)  # its bad input too before any model loads
    outcome = run_phases(prepared, progress=progress, debug=debug)
    resume = None
    if resume_plan is not None:
        resume = run_resume_check(prepared, resume_plan, progress=progress, debug=debug)
        outcome.problems.extend(resume.problems)
    measured = list(outcome.peaks.values())
    split = prepared.data.split
    return SmokeReport(
        format_version=SMOKE_VERSION,
        evalkit_version=__version__,
        base=str(prepared.base),
        tokenizer=str(prepared.tokenizer_folder),
        data=SmokeData(
            path=str(split.path) if split.path is not None else None,
            sha256=split.sha256,
            source=FRAME_SOURCE if split.path is None else None,
            rows=len(split.chat),
            text_columns=columns,
            loss=prepared.data.loss,
            skipped_rows=prepared.skipped_rows,
        ),
        settings=prepared.settings,
        plan=prepared.plan,
        device=device_record(prepared.device),
        memory=MemoryMeasure(
            kind=outcome.measure, comparable=outcome.comparable, note=NOTES[outcome.measure]
        ),
        measured_peak_gb=_gb(max(measured)) if measured else None,
        phases=_phases(prepared, outcome.peaks, outcome.comparable),
        steps=given.steps,
        losses=[value if math.isfinite(value) else None for value in outcome.losses],
        batches=[list(b.rows) for b in prepared.batches],
        targets=[b.targets for b in prepared.batches],
        trainable_params=outcome.trainable,
        generation=outcome.generation,
        reload=outcome.reload,
        throughput=throughput(prepared, outcome),
        resume=resume,
        problems=outcome.problems,
        verdict="fail" if outcome.problems else "pass",
    )
