"""Everything ``evalkit smoke`` reads and checks before a model loads: :class:`Prepared`.

Its own module so that the run (:mod:`evalkit.model.smoke_run`), the resume
check and the report (:mod:`evalkit.model.smoke`) all take it without
importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalkit.errors import ParameterError, UsageError
from evalkit.model.options import SmokeMethod, SmokeParams
from evalkit.options import takes
from evalkit.records._plan import PlanResult
from evalkit.records._smoke import SmokeSettings
from evalkit.tokens.sequences import Batch, TrainingData

if TYPE_CHECKING:
    from evalkit.io import TableLike

# The plan's --precision for the dtype the run trains in (pure 16-bit, or fp32).
PRECISION = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}


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
    method, seq_len, batch = given.method, given.seq_len, given.batch_size
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
        eval_batch_size=len(prompts),
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


def one_table(data: TableLike, hf_split: str | None) -> TableLike:
    """The table ``data`` names once ``hf_split`` picked a DatasetDict folder's split."""
    from evalkit.io import is_path, resolve_hf_split

    if is_path(data):
        return resolve_hf_split(Path(data), hf_split)
    if hf_split is not None:
        raise ParameterError("hf_split", "applies to a DatasetDict folder, not to a frame")
    return data
