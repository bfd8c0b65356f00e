"""The card of a Trainer checkpoint folder: its state files and whether it resumes the run.

``evalkit card checkpoint-N/ --json FILE`` writes a :class:`CheckpointCard`;
its JSON Schema is committed in ``docs/schemas/checkpoint-card.schema.json``.
"""

from __future__ import annotations

from typing import Any, Literal

from evalkit.records._base import Persisted
from evalkit.records._card import AdapterCard, Problem
from evalkit.records._versions import FileFormat

CHECKPOINT_VERSION = 1
CHECKPOINT_FORMAT = FileFormat("checkpoint card", CHECKPOINT_VERSION)

Role = Literal[
    "weights",
    "adapter_config",
    "model_config",
    "optimizer",
    "scheduler",
    "scaler",
    "rng_state",
    "trainer_state",
    "training_args",
    "other",
]


class _Model(Persisted):
    """The models of this file, on the one persisted base."""


class CheckpointFile(_Model):
    """One file of the checkpoint folder."""

    name: str
    """Its name in the folder."""
    role: Role
    """What a resume uses it for: ``weights`` (the adapter's or the model's), ``optimizer``
    (optimizer.pt: AdamW's moments and step count), ``scheduler`` (scheduler.pt), ``scaler``
    (scaler.pt, fp16's loss scale), ``rng_state`` (rng_state*.pth, one per process),
    ``trainer_state`` (trainer_state.json: the global step, the log), ``training_args``
    (training_args.bin, the TrainingArguments it ran with); ``other`` (README, tokenizer)."""
    bytes: int
    """Its size."""


class CheckpointCard(_Model):
    """``evalkit card`` of a ``checkpoint-N`` folder written by transformers' Trainer."""

    format_version: int = CHECKPOINT_VERSION
    """Version of this format."""
    evalkit_version: str
    """The evalkit that wrote it."""
    path: str
    """The checkpoint folder as given."""
    weights: Literal["adapter", "model"] | None
    """Whether it holds a PEFT adapter or a whole model's weights (null: neither)."""
    files: list[CheckpointFile]
    """Every file directly in the folder, by name."""
    bytes: int
    """Their total size: what one checkpoint takes on disk."""
    global_step: int | None
    """trainer_state.json's ``global_step``: the optimizer steps done when it was saved."""
    max_steps: int | None
    """trainer_state.json's ``max_steps``."""
    epoch: float | None
    """trainer_state.json's ``epoch`` (fractional: the share of the epoch done)."""
    scheduler_steps: int | None
    """scheduler.pt's ``last_epoch``: how many times the learning-rate scheduler stepped (the
    Trainer steps it once per optimizer step, so it equals ``global_step``)."""
    optimizer_steps: int | None
    """optimizer.pt's step count (AdamW's ``step`` of its parameters; null when the optimizer
    keeps none, or the file is missing or unreadable)."""
    rng_states: list[str]
    """The RNG state files (one per training process)."""
    training_args: dict[str, Any] | None
    """The settings of training_args.bin a resume depends on (read without unpickling code):
    save_only_model, fp16, bf16, gradient_accumulation_steps, per_device_train_batch_size,
    seed, data_seed, ignore_data_skip, use_seedable_sampler, lr_scheduler_type, optim,
    learning_rate, max_steps, save_steps (null without the file)."""
    adapter: AdapterCard | None
    """The adapter's own card, when the checkpoint holds a PEFT adapter (its problems, such as
    an unpinned base, are the adapter's and do not decide ``resumable``)."""
    resumable: bool
    """Whether ``resume_from_checkpoint`` continues the run it came from: no error below."""
    problems: list[Problem]
    """Why not (errors), and what a resume may change (warnings); errors first. Codes:
    ``no_weights``, ``missing_optimizer``, ``missing_scheduler``, ``missing_rng_state``,
    ``missing_trainer_state``, ``missing_scaler``, ``save_only_model``, ``step_mismatch``,
    ``unreadable_state``; warnings ``missing_training_args``, ``ignore_data_skip``,
    ``unseeded_sampler``."""

    @property
    def errors(self) -> list[Problem]:
        """The problems of severity ``error``."""
        return [problem for problem in self.problems if problem.severity == "error"]
