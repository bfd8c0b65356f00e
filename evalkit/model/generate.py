"""``evalkit generate``: greedy predictions from local model folders, pinned.

read (pin the input files, load the model, render the prompts) → compute
(greedy decoding in left-padded batches) → write (``predictions.jsonl`` that
``evalkit score`` reads, ``tokens.parquet`` with the ids and top logits,
``run.json`` with every pin). The outputs are deterministic: the same files
on the same device, dtype and library versions give the same bytes.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalkit._version import __version__
from evalkit.errors import NO_VALUE, ParameterError, Ref, UsageError
from evalkit.io import sha256_file
from evalkit.model.decode import DecodeSettings, Generation, decode_batches, plan_batches
from evalkit.model.load import LoadedModel
from evalkit.model.options import GenerateParams
from evalkit.model.pins import tokenizer_files
from evalkit.model.prompts import PromptSet
from evalkit.options import takes
from evalkit.records._run import (
    PREDICTIONS_FILE,
    RUN_FILE,
    RUN_VERSION,
    TOKENS_FILE,
    AdapterPins,
    BasePins,
    DataInfo,
    DeviceInfo,
    GenerationSettings,
    OutputsInfo,
    RunRecord,
    TokenizerPins,
    VllmSettings,
)

if TYPE_CHECKING:
    from evalkit.io import TableLike

OUTPUT_COLUMN = "output"
# generation_config.json keys that name tokens rather than decoding choices.
_TOKEN_KEYS = {"eos_token_id", "pad_token_id", "bos_token_id", "transformers_version"}


@dataclass(frozen=True)
class GenerateResult:
    """Everything ``generate`` computed, ready to write."""

    run: RunRecord
    """``run.json`` (its ``outputs`` block is filled in by :meth:`write`)."""
    predictions: Any
    """polars frame ``{<id column>, output}`` in data order."""
    tokens: Any
    """polars frame: per example its batch, prompt ids, output ids, stop, top logits."""
    batches: int
    """How many batches were decoded."""

    def write(self, out: Path, *, force: bool = False) -> RunRecord:
        """Write the three files into ``out`` atomically; ``run.json`` with the outputs' hashes."""
        from evalkit.io import atomic_directory, write_table
        from evalkit.records._run import write_run

        run = self.run
        inputs = [Path(run.base.path), Path(run.tokenizer.path)]
        if run.data.path is not None:
            inputs.append(Path(run.data.path))
        if run.adapter is not None:
            inputs.append(Path(run.adapter.path))
        with atomic_directory(out, force, inputs=inputs, marker=RUN_FILE) as staging:
            write_table(self.predictions, staging / PREDICTIONS_FILE)
            write_table(self.tokens, staging / TOKENS_FILE)
            stops = self.tokens["stop"]
            outputs = OutputsInfo(
                predictions_sha256=sha256_file(staging / PREDICTIONS_FILE),
                tokens_sha256=sha256_file(staging / TOKENS_FILE),
                stopped_at_eos=int((stops == "eos").sum()),
                stopped_at_length=int((stops == "length").sum()),
            )
            run = run.model_copy(update={"outputs": outputs})
            write_run(staging / RUN_FILE, run)
        return run


def output_texts(tokenizer: Any, generations: Sequence[Generation], stops: set[int]) -> list[str]:
    """The text of each output: its ids without the stop token, special tokens dropped."""
    trimmed = [
        g.output_ids[:-1] if g.output_ids and g.output_ids[-1] in stops else g.output_ids
        for g in generations
    ]
    texts = tokenizer.batch_decode(trimmed, skip_special_tokens=True)
    return [str(text) for text in texts]


def tokens_frame(
    prompts: PromptSet, generations: Sequence[Generation], batches: Sequence[Sequence[int]]
) -> Any:
    """The ``tokens.parquet`` frame, one row per example in data order."""
    import polars as pl

    batch_of = [0] * len(prompts)
    place_of = [0] * len(prompts)
    for number, batch in enumerate(batches):
        for place, row in enumerate(batch):
            batch_of[row], place_of[row] = number, place
    return pl.DataFrame(
        {
            prompts.id_column: prompts.ids,
            "batch": batch_of,
            "batch_row": place_of,
            "prompt_ids": prompts.prompt_ids,
            "output_ids": [g.output_ids for g in generations],
            "stop": [g.stop for g in generations],
            "top_ids": [g.top_ids for g in generations],
            "top_logits": [g.top_logits for g in generations],
        },
        schema={
            prompts.id_column: tokens_id_dtype(prompts),
            "batch": pl.Int32,
            "batch_row": pl.Int32,
            "prompt_ids": pl.List(pl.Int32),
            "output_ids": pl.List(pl.Int32),
            "stop": pl.String,
            "top_ids": pl.List(pl.List(pl.Int32)),
            "top_logits": pl.List(pl.List(pl.Float32)),
        },
    )


def settings_record(
    loaded: LoadedModel, settings: DecodeSettings, batch_size: int
) -> GenerationSettings:
    """The generation block of ``run.json``."""
    own = loaded.generation_config
    return GenerationSettings(
        strategy="greedy",
        max_new_tokens=settings.max_new_tokens,
        batch_size=batch_size,
        padding_side="left",
        batch_order="longest_first",
        eos_token_ids=list(settings.eos_token_ids),
        pad_token_id=settings.pad_token_id,
        top_k_logits=settings.top_k,
        model_generation_config=dict(own),
        not_applied={k: v for k, v in own.items() if k not in _TOKEN_KEYS and v is not None},
    )


def tokenizer_record(loaded: LoadedModel, files: dict[str, str]) -> TokenizerPins:
    """The tokenizer block of ``run.json``."""
    from evalkit.tokens.load import chat_template_sha256, tokenizer_sha256

    return TokenizerPins(
        path=str(loaded.tokenizer_folder),
        files=files,
        sha256=tokenizer_sha256(loaded.tokenizer_folder),
        chat_template_sha256=chat_template_sha256(loaded.tokenizer),
        vocab_size=len(loaded.tokenizer),
    )


def device_record(device: str) -> DeviceInfo:
    """The device block of ``run.json``."""
    from evalkit.model import runtime

    return DeviceInfo(
        type="cuda" if device == "cuda" else "cpu",
        name=runtime.device_name(device),
        cuda=runtime.cuda_version(),
    )


@takes(GenerateParams)
def generate(
    base: Path | str,
    data: TableLike,
    params: GenerateParams | None = None,
    /,
    *,
    progress: bool = False,
    debug: bool = False,
    out: str | os.PathLike[str] | None = None,
    force: bool = False,
    **values: Any,
) -> GenerateResult:
    """Greedy outputs of ``base`` (+ ``adapter``) for every conversation of ``data``.

    ``data`` is a split file (``hf_split`` picks a DatasetDict folder's
    split), or a polars, pandas or pyarrow frame (then ``run.json`` records
    ``path: null`` and ``source: "frame"``, and ``reload-check``, which reads
    the data again, needs the run made from a file). ``params`` is a
    :class:`~evalkit.model.options.GenerateParams` (the command's options),
    or its fields as keywords (``id_column`` and ``text`` required).

    Each prompt is the conversation without its last assistant turn, rendered
    by the tokenizer's chat template with the generation prompt added (the
    render ``evalkit tokens`` checks). ``backend`` picks who decodes: ``hf``
    (transformers + PEFT, in this process) or ``vllm`` (vLLM's engine in a
    worker process; ``debug`` shows its log). ``progress`` draws a bar on
    stderr when it is a terminal (hf).

    With ``out`` the run folder is written too, as ``evalkit generate --out``
    writes it (which is this call): ``predictions.jsonl``, ``tokens.parquet``
    and ``run.json``, all or nothing; ``out`` is never an input, and an
    existing run folder is replaced only with ``force``, checked before any
    model is loaded. The result then holds the ``run.json`` written.
    """
    from evalkit.io import CommandFiles, is_path, resolve_hf_split
    from evalkit.model.backends import implementation, require_backend

    given = GenerateParams.build(params, values)
    spec = require_backend(given.backend)
    if out is not None:
        files = CommandFiles(force=force).reads(base, given.adapter, given.tokenizer)
        files.reads(data if is_path(data) else None)
        files.writes(out, option="out", marker=RUN_FILE).check()
    if is_path(data):
        data = resolve_hf_split(Path(data), given.hf_split)
    elif given.hf_split is not None:
        raise ParameterError("hf_split", "applies to a DatasetDict folder, not to a frame")
    if given.id_column == OUTPUT_COLUMN:
        raise UsageError(
            f"{{id_column}} {OUTPUT_COLUMN}: predictions.jsonl has an {OUTPUT_COLUMN!r} column "
            "of its own; rename the id column",
            refs=["id_column"],
        )
    run_backend = implementation(spec, "generate")
    result: GenerateResult = run_backend(Path(base), data, given, progress=progress, debug=debug)
    if out is None:
        return result
    return replace(result, run=result.write(Path(out), force=force))


def generate_hf(
    base_path: Path, data: Any, given: GenerateParams, *, progress: bool, debug: bool
) -> GenerateResult:
    """The hf backend: transformers' ``model.generate`` (+ PEFT) in this process."""
    from evalkit.io import read_table
    from evalkit.leakage.progress import Progress
    from evalkit.model.decode import default_settings
    from evalkit.model.load import load_model
    from evalkit.model.pins import adapter_record, base_pins
    from evalkit.model.prompts import read_prompts

    id_column, text_columns = given.id_column, given.text
    max_new_tokens, batch_size = given.max_new_tokens, given.batch_size
    adapter_path = given.adapter
    loaded = load_model(
        base_path, adapter_path, tokenizer=given.tokenizer, device=given.device, dtype=given.dtype
    )
    table = read_table(data, name="data", ids=[id_column])
    prompts = read_prompts(
        table,
        id_column,
        text_columns,
        loaded.tokenizer,
        tokenizer_folder=loaded.tokenizer_folder,
    )
    check_context(loaded, prompts, max_new_tokens)
    # Pins after loading: the files hashed are the files transformers just read.
    pinned_base: BasePins = base_pins(base_path)
    pinned_adapter: AdapterPins | None = (
        adapter_record(adapter_path, base_path) if adapter_path is not None else None
    )
    settings = default_settings(loaded, max_new_tokens)
    batches = plan_batches([len(ids) for ids in prompts.prompt_ids], batch_size)
    with Progress(progress).stage("generating", len(prompts), "examples") as advance:
        by_row = decode_batches(loaded, prompts.prompt_ids, batches, settings, advance=advance)
    generations = [by_row[row] for row in range(len(prompts))]
    return assemble(
        loaded,
        table,
        prompts,
        generations,
        batches,
        base=pinned_base,
        adapter=pinned_adapter,
        generation=settings_record(loaded, settings, batch_size),
        device=device_record(loaded.device),
        dtype=loaded.dtype,
        text_columns=text_columns,
    )


def assemble(
    loaded: LoadedModel,
    table: Any,
    prompts: PromptSet,
    generations: Sequence[Generation],
    batches: Sequence[Sequence[int]],
    *,
    base: BasePins,
    adapter: AdapterPins | None,
    generation: GenerationSettings,
    device: DeviceInfo,
    dtype: str,
    text_columns: Sequence[str],
    vllm: VllmSettings | None = None,
) -> GenerateResult:
    """The result of either backend: predictions, tokens and ``run.json`` from its generations."""
    import polars as pl

    from evalkit.model.runtime import library_versions

    texts = output_texts(loaded.tokenizer, generations, set(generation.eos_token_ids))
    id_column = prompts.id_column
    predictions = pl.DataFrame(
        {id_column: prompts.ids, OUTPUT_COLUMN: texts},
        schema={id_column: tokens_id_dtype(prompts), OUTPUT_COLUMN: pl.String},
    )
    versions = library_versions()
    if vllm is not None:
        versions["vllm"] = vllm.version
    run = RunRecord(
        format_version=RUN_VERSION,
        evalkit_version=__version__,
        kind="base+adapter" if adapter is not None else "base",
        backend="vllm" if vllm is not None else "hf",
        vllm=vllm,
        base=base,
        adapter=adapter,
        tokenizer=tokenizer_record(loaded, tokenizer_files(loaded.tokenizer_folder)),
        generation=generation,
        device=device,
        dtype=dtype,  # type: ignore[arg-type]
        versions=versions,
        data=DataInfo(
            path=str(table.path) if table.path is not None else None,
            sha256=table.sha256,
            source=table.source,
            n=len(prompts),
            id_column=id_column,
            text_columns=list(text_columns),
        ),
        outputs=OutputsInfo(
            predictions_sha256="", tokens_sha256="", stopped_at_eos=0, stopped_at_length=0
        ),
    )
    return GenerateResult(
        run, predictions, tokens_frame(prompts, generations, batches), len(batches)
    )


def tokens_id_dtype(prompts: PromptSet) -> Any:
    """The polars dtype of the id column: strings stay strings, integers integers."""
    import polars as pl

    return pl.String if isinstance(prompts.ids[0], str) else pl.Int64


def check_context(loaded: LoadedModel, prompts: PromptSet, max_new_tokens: int) -> None:
    """A prompt that is empty, or that with its new tokens overruns the context, is refused.

    Checked before the first batch, naming the id: past the context a model
    of learned positions fails deep in torch, after the batches before it.
    """
    from evalkit.model.folders import context_length

    context = context_length(loaded.config)
    for row, ids in enumerate(prompts.prompt_ids):
        if not ids:
            raise UsageError(
                f"id {prompts.ids[row]!r}: the chat template renders this prompt as no tokens; "
                "there is nothing to answer"
            )
        if context is None:
            continue
        key, limit = context
        if len(ids) >= limit:
            raise UsageError(
                f"id {prompts.ids[row]!r}: the prompt has {len(ids)} tokens but the model's "
                f"context is {limit} ({key}); shorten or drop it"
            )
        if len(ids) + max_new_tokens > limit:
            raise UsageError(
                f"id {prompts.ids[row]!r}: the prompt has {len(ids)} tokens and "
                f"{{max_new_tokens}} is {max_new_tokens}, beyond the model's context of {limit} "
                f"({key}); use {{fewer}} or less, or shorten the prompt",
                refs={
                    "max_new_tokens": NO_VALUE,
                    "fewer": Ref("max_new_tokens", limit - len(ids)),
                },
            )
