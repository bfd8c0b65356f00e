"""``evalkit smoke``: a few real steps, measured phase by phase beside ``evalkit plan``.

read (base folder, tokenizer, split) -> validate (options through the
plan's own checks, the device, the data) -> plan (the bound of every phase
under exactly the settings that run) -> run (:mod:`evalkit.model.smoke_run`:
load, train, generate, save, reload in a fresh process) -> a
:class:`~evalkit.model.smoke_records.SmokeReport`. Everything that can be
wrong with the input is found before the model loads.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalkit._version import __version__
from evalkit.errors import ParameterError, UsageError
from evalkit.model.options import SmokeMethod, SmokeParams, check_trainer_args
from evalkit.model.smoke_records import (
    PHASE_NAMES,
    SMOKE_VERSION,
    MemoryMeasure,
    PhasePeak,
    SmokeData,
    SmokeReport,
    SmokeSettings,
    Throughput,
)
from evalkit.options import takes
from evalkit.plan.models import PlanResult
from evalkit.tokens.sequences import Batch, TrainingData

if TYPE_CHECKING:
    from evalkit.model.smoke_run import Outcome
    from evalkit.table_input import TableLike

# The plan's --precision for the dtype the run trains in (pure 16-bit, or fp32).
PRECISION = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}
GB = 10**9
DIGITS = 4


@dataclass(frozen=True)
class Prepared:
    """Everything read and checked before the model loads."""

    base: Path
    tokenizer_folder: Path
    device: str
    dtype: str
    method: SmokeMethod
    data: TrainingData
    batches: list[Batch]
    skipped_rows: int
    prompts: list[list[int]]
    plan: PlanResult
    bounds: dict[str, int]
    settings: SmokeSettings
    tokenizer: Any = None
    pad_id: int = 0


def _refuse_quantized(config: dict[str, Any], base: Path) -> None:
    """A base stored quantized is refused: smoke trains, and plans, a 16-bit base.

    Its plan would count 16-bit weights that are not there, and ``full``
    cannot train quantized weights at all.
    """
    quantization = config.get("quantization_config")
    if isinstance(quantization, dict):
        method = quantization.get("quant_method", "quantized")
        raise UsageError(
            f"{base / 'config.json'}: 'quantization_config' ({method}): smoke trains lora or "
            "full on a 16-bit base and measures it against that plan; pass the unquantized "
            "base folder"
        )


def _check_context(config: dict[str, Any], base: Path, seq_len: int) -> None:
    """Every row is padded to --seq-len, so it must fit in the model's context."""
    from evalkit.model.folders import context_length

    context = context_length(config)
    if context is not None and seq_len > context[1]:
        key, limit = context
        raise ParameterError(
            "seq_len",
            f"{seq_len}: beyond the context of {limit} tokens of "
            f"{base / 'config.json'} ({key}); use {{seq_len}} {limit} or less",
            refs=["seq_len"],
        )


def _tokenizer(base: Path, tokenizer: Path | None) -> tuple[Any, Path]:
    from evalkit.errors import ModelLoadError
    from evalkit.model.folders import has_tokenizer
    from evalkit.model.load import choose_tokenizer_folder
    from evalkit.tokens.load import load_tokenizer, require_fast
    from evalkit.tokens.render import require_template

    folder = choose_tokenizer_folder(base, None, tokenizer)
    if tokenizer is None and not has_tokenizer(folder):
        raise ModelLoadError(
            f"{folder}: holds no tokenizer files (tokenizer.json, tokenizer_config.json); "
            "pass {tokenizer}, the tokenizer the model is trained with",
            refs={"tokenizer": "DIR"},
        )
    loaded = load_tokenizer(folder)
    require_fast(loaded, folder)
    require_template(loaded, str(folder))
    return loaded, folder


@takes(SmokeParams)
def prepare(
    base: Path | str, data: TableLike, params: SmokeParams | None = None, /, **values: Any
) -> Prepared:
    """Read and check every input, choose the rows, and plan exactly this run.

    ``data`` is the one table (a DatasetDict's split already chosen).
    """
    from evalkit.model import runtime
    from evalkit.model.folders import check_model_folder
    from evalkit.plan import load_model_shape, phase_bounds, plan_shape, resolve_options
    from evalkit.tokens.api import measure_settings
    from evalkit.tokens.load import chat_template, stop_token_ids
    from evalkit.tokens.render import has_generation_markers
    from evalkit.tokens.sequences import (
        choose_sequences,
        make_batches,
        prompt_ids,
        read_training_split,
    )

    given = SmokeParams.build(params, values)
    method, seq_len, batch = given.method, given.seq_len, given.batch
    base_path = Path(base)
    config = check_model_folder(base_path)
    _refuse_quantized(config, base_path)
    _check_context(config, base_path, seq_len)
    shape = load_model_shape(base_path)
    # The plan's own checks, before anything slow: --r/--targets with full, an unknown target.
    planned = given.plan_params()
    resolve_options(shape, planned)
    resolved_device = runtime.resolve_device(given.device)
    resolved_dtype = runtime.resolve_dtype(given.dtype, resolved_device, config)
    loaded_tokenizer, folder = _tokenizer(base_path, given.tokenizer)
    stops = stop_token_ids(loaded_tokenizer, folder)
    settings = measure_settings(loaded_tokenizer, stops, seq_len, "keep_start")
    training = read_training_split(
        data,
        list(given.text),
        loaded_tokenizer,
        settings=settings,
        markers=has_generation_markers(chat_template(loaded_tokenizer)),
        loss=given.loss,
    )
    chosen = choose_sequences(
        training, loaded_tokenizer, steps=given.steps, batch=batch, seq_len=seq_len, seed=given.seed
    )
    pad = settings.pad_id if settings.pad_id is not None else 0
    batches = make_batches(chosen, batch=batch, seq_len=seq_len, pad_id=pad)
    prompts = prompt_ids(training, loaded_tokenizer, batches[0].rows)
    options = resolve_options(
        shape,
        planned,
        precision=PRECISION[resolved_dtype],
        # torch.optim.AdamW's default on a GPU: the foreach kernel, with its sqrt temporary.
        optimizer="adamw-foreach",
        attention="sdpa",
        eval_batch=len(prompts),
        eval_tokens=max(len(ids) for ids in prompts) + given.max_new_tokens,
        export="adapter" if method == "lora" else None,
    )
    return Prepared(
        base=base_path,
        tokenizer_folder=folder,
        device=resolved_device,
        dtype=resolved_dtype,
        method=method,
        data=training,
        batches=batches,
        skipped_rows=chosen.without_targets,
        prompts=prompts,
        plan=plan_shape(shape, options),
        bounds=phase_bounds(shape, options),
        settings=SmokeSettings(
            method=method,
            r=options.r,
            targets=list(options.targets),
            seq_len=seq_len,
            batch=batch,
            lr=float(given.lr),
            grad_checkpointing=given.grad_checkpointing,
            dtype=resolved_dtype,  # type: ignore[arg-type]
            max_new_tokens=given.max_new_tokens,
            seed=given.seed,
        ),
        tokenizer=loaded_tokenizer,
        pad_id=pad,
    )


def _one_table(data: TableLike, hf_split: str | None) -> TableLike:
    """The table ``data`` names once ``hf_split`` picked a DatasetDict folder's split."""
    from evalkit.containers import resolve_hf_split
    from evalkit.table_input import is_path

    if is_path(data):
        return resolve_hf_split(Path(data), hf_split)
    if hf_split is not None:
        raise ParameterError("hf_split", "applies to a DatasetDict folder, not to a frame")
    return data


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

    A training step computes every position of its batch, ``batch`` x
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
    **values: Any,
) -> SmokeReport:
    """Run ``steps`` real optimizer steps of ``method`` on ``data`` and measure every phase.

    ``data`` is one split file (``hf_split`` picks a DatasetDict folder's
    split), or a polars, pandas or pyarrow frame. ``params`` is a
    :class:`~evalkit.model.options.SmokeParams` (the command's options), or
    its fields as keywords.

    The base in ``base`` is loaded on ``device`` in ``dtype``; a new LoRA
    adapter of rank ``r`` (PEFT's default targets unless ``targets``), or
    the whole model, trains with AdamW on batches of ``batch`` rows of the
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
    """
    from evalkit.model.generate import device_record
    from evalkit.model.memory import NOTES
    from evalkit.model.resume import plan_resume, run_resume_check
    from evalkit.model.smoke_run import run_phases
    from evalkit.table_input import FRAME_SOURCE

    given = SmokeParams.build(params, values)
    check_trainer_args(given)
    columns = list(given.text)
    prepared = prepare(base, _one_table(data, given.hf_split), given)
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
