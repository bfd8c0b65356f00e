"""The report of ``evalkit smoke``: the plan, what was measured beside it, the reload.

``--json`` writes a :class:`SmokeReport`; its JSON Schema is committed in
``docs/schemas/smoke-report.schema.json``. Amounts are GB = 10^9 bytes, as
in the plan. Fields are added, never renamed or removed without bumping
``format_version``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from evalkit.io import source_field
from evalkit.records._base import Persisted
from evalkit.records._kinds import MeasureKind
from evalkit.records._plan import PlanResult
from evalkit.records._resume import ResumeCheck
from evalkit.records._run import DeviceInfo
from evalkit.records._versions import FileFormat

SMOKE_VERSION = 1
SMOKE_FORMAT = FileFormat("smoke report", SMOKE_VERSION)
PHASE_NAMES = ("load", "train", "eval", "export")


class _Model(Persisted):
    """The models of this file, on the one persisted base."""


class SmokeData(_Model):
    """The split the steps trained on."""

    path: str | None
    """The data file as given (null for a frame)."""
    sha256: str
    """sha256 of its bytes (of its content, for a frame)."""
    source: Literal["frame"] | None = source_field()
    rows: int
    """Rows in the file."""
    text_columns: list[str]
    """The conversation column(s) read."""
    loss: Literal["assistant", "completion", "all"]
    """Which tokens are supervised (``evalkit tokens --loss``; the same mask)."""
    skipped_rows: int
    """Rows looked at and passed over: no supervised token within ``seq_len``."""


class SmokeSettings(_Model):
    """How the steps ran (the plan was made for exactly these)."""

    method: Literal["lora", "full"]
    """``lora``: a new PEFT adapter trains; ``full``: every weight does."""
    r: int
    """LoRA rank (0 for full)."""
    targets: list[str]
    """The block linears the adapter wraps (empty for full)."""
    seq_len: int
    """Every sequence cut (its start kept) and right-padded to this many tokens."""
    batch: int
    """Sequences per step."""
    lr: float
    """AdamW's learning rate (torch.optim.AdamW, its other defaults)."""
    grad_checkpointing: bool
    """Whether each decoder layer was checkpointed."""
    dtype: Literal["float32", "bfloat16", "float16"]
    """The dtype the base was loaded and trained in."""
    max_new_tokens: int
    """New tokens of the short generation (eval phase)."""
    seed: int
    """Seeds the rows' order and the adapter's initialisation."""


class PhasePeak(_Model):
    """One phase: its measured peak beside the plan's bound."""

    measured_gb: float | None
    """The peak measured (see ``memory``): up to the failure when the phase ran out of memory;
    null when it did not run."""
    bound_gb: float
    """The plan's lower bound of this phase, for these settings."""
    ratio: float | None
    """bound / measured, when both are GPU allocated memory (at most 1 when the bound holds);
    null on the CPU, where the measure is not comparable."""


class MemoryMeasure(_Model):
    """What ``measured_gb`` is."""

    kind: MeasureKind
    """``cuda_max_memory_allocated`` (GPU), ``process_rss`` (CPU, peak RSS reset per phase),
    ``process_rss_since_start`` (CPU, peak RSS of the whole process)."""
    comparable: bool
    """Whether it measures what the plan bounds (only GPU allocated memory does)."""
    note: str
    """The sentence the terminal prints."""


class ReloadCheck(_Model):
    """The saved artifact, loaded in a fresh process, against the trained model in memory."""

    artifact: Literal["adapter", "model"]
    """What was saved and reloaded: the adapter (on the base), or the whole model (full)."""
    saved_bytes: int
    """Bytes of the files ``save_pretrained`` wrote."""
    positions: int
    """Positions compared: those predicting a supervised token of the first batch (capped)."""
    max_logit_diff: float | None
    """Largest |reloaded − trained| logit there (null when the reload produced none)."""
    tolerance: float
    """The largest difference that passes: 4 float32 ulps of the largest logit (the same
    weights, inputs and kernels give the same bits; this absorbs nothing more)."""
    training_effect: float | None
    """Largest |trained − before training| logit at the same positions: what a reload that
    lost the training would differ by. The check has power only when it exceeds the tolerance."""
    ok: bool
    """max_logit_diff <= tolerance < training_effect."""


class GenerationRun(_Model):
    """The short greedy generation of the eval phase."""

    prompts: int
    """Prompts generated for together (the first batch's rows)."""
    prompt_tokens: int
    """Tokens of the longest prompt (the left-padded width)."""
    new_tokens: int
    """Tokens generated for the longest output."""


class Throughput(_Model):
    """How fast each phase ran on this device: what ``evalkit plan --measured`` reads.

    Wall-clock seconds, the device synchronized before each reading. Training
    counts every position the steps computed (``batch`` x ``seq_len``, padding
    included: the rate of packed training), over the steps after the first
    (a warm-up: kernels are chosen and memory is allocated there).
    """

    train_tokens_per_second: float | None
    """train_tokens / train_seconds (null with one step: only the warm-up ran)."""
    train_tokens: int
    """Positions computed by the timed steps: (steps - 1) x batch x seq_len."""
    train_seconds: float
    """Their wall-clock time: forward, backward and the optimizer step."""
    eval_tokens_per_second: float | None
    """eval_new_tokens / eval_seconds: the greedy pass's new tokens per second."""
    eval_new_tokens: int
    """Tokens generated in the pass, over its prompts (up to each one's stop)."""
    eval_seconds: float
    """The pass's wall-clock time, prefill included."""
    save_seconds: float | None
    """Saving the adapter (or the whole model, full) with ``save_pretrained``."""
    reload_seconds: float | None
    """The reload check: a fresh process loads the saved artifact and computes the logits."""
    device: DeviceInfo
    """The device it ran on."""
    device_memory_gb: float | None
    """The GPU's memory as torch reports it (null on the CPU)."""


class SmokeReport(_Model):
    """``evalkit smoke``: a few real steps, the measured peak of each phase beside the plan."""

    format_version: int
    """Version of this format."""
    evalkit_version: str
    """The evalkit that wrote it."""
    base: str
    """The base model folder."""
    tokenizer: str
    """The tokenizer folder the conversations were rendered with."""
    data: SmokeData
    """The split."""
    settings: SmokeSettings
    """How the steps ran."""
    plan: PlanResult
    """``evalkit plan`` for the same model and settings (the bounds compared with)."""
    device: DeviceInfo
    """Where it ran."""
    memory: MemoryMeasure
    """What the measured figures are."""
    measured_peak_gb: float | None
    """The largest measured phase (null when none ran)."""
    phases: dict[str, PhasePeak]
    """load, train, eval, export: measured beside bound. export is the larger of saving (this
    process) and reloading (the fresh one)."""
    steps: int
    """Optimizer steps asked for."""
    losses: list[float | None]
    """The loss of each step that ran, before its update (null: not a finite number)."""
    batches: list[list[int]]
    """The split's rows (0-based) each step trained on."""
    targets: list[int]
    """Supervised tokens each step's loss was averaged over."""
    trainable_params: int
    """Parameters the optimizer updated, counted on the model (the plan's count beside it)."""
    generation: GenerationRun | None
    """The short generation (null when it did not run)."""
    reload: ReloadCheck | None
    """The fresh-process reload (null when it did not run)."""
    throughput: Throughput | None = None
    """How fast training, the greedy pass and the save ran (null in reports before it was
    measured)."""
    resume: ResumeCheck | None = None
    """``--trainer hf --resume-at K``: a straight run against one killed after checkpoint K and
    resumed (null when not asked for, and in reports before it existed)."""
    problems: list[str]
    """Why the verdict is fail (empty when it passes)."""
    verdict: Literal["pass", "fail"]
    """pass: every step's loss is finite, the reload reproduces the trained logits, and (with
    ``resume``) the checkpoint resumes the run."""


def _not_a_report(path: Path, why: str) -> Exception:
    from evalkit.errors import MalformedFile

    return MalformedFile(
        f"{path}: not a report of evalkit smoke ({why}); pass the JSON report smoke wrote"
    )


def read_smoke_document(
    path: str | os.PathLike[str], refuse: Callable[[Path, str], Exception] = _not_a_report
) -> tuple[dict[str, Any], SmokeReport]:
    """A smoke report's document (brought up to date) and its model; ``refuse`` says why not.

    ``refuse(path, why)`` is the error for a file that is not a smoke report
    (a caller names its own option in it); a newer version is refused by
    :data:`SMOKE_FORMAT` in one line.
    """
    from pydantic import ValidationError

    from evalkit.io import load_json

    file = Path(path)
    data = load_json(file)
    if not isinstance(data, dict) or "verdict" not in data or "settings" not in data:
        raise refuse(file, "no verdict or settings")
    data = SMOKE_FORMAT.upgrade(data, file, "pass the JSON report smoke wrote")
    try:
        return data, SmokeReport.model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise refuse(file, f"{where}: {first['msg']}") from None


def read_smoke(path: str | os.PathLike[str]) -> SmokeReport:
    """A smoke report (``smoke --json FILE``), its version checked."""
    return read_smoke_document(path)[1]


def smoke_json(report: SmokeReport) -> str:
    """The text of a smoke report: indented, keys in model order, a final newline."""
    return report.model_dump_json(indent=2) + "\n"


def write_smoke(path: str | os.PathLike[str], report: SmokeReport, *, force: bool = False) -> None:
    """Write a smoke report (:func:`smoke_json`) atomically at ``path``."""
    from evalkit.records._files import write_file

    write_file(Path(path), smoke_json(report).encode("utf-8"), force=force)
