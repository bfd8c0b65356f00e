"""The ``resume`` block of ``evalkit smoke --json``: does a checkpoint resume the run it came from?

Three runs of transformers' ``Trainer``, each in a fresh process: A straight
to ``steps``, A' the same again (the noise floor), B killed with SIGKILL
right after checkpoint ``at_step`` is written and resumed from it with
``resume_from_checkpoint`` in a new process. Per-step lists are indexed by
step (the first is step 1); a value is null where that run logged none.
"""

from __future__ import annotations

from typing import Any

from evalkit.records._base import Persisted


class _Model(Persisted):
    """The models of this block, on the one persisted base."""


class TrainerArgs(_Model):
    """The ``TrainingArguments`` the runs used."""

    file: str | None
    """``--trainer-args`` as given (null: none)."""
    sha256: str | None
    """sha256 of its bytes."""
    given: dict[str, Any]
    """Its fields as read."""
    set_by_smoke: dict[str, Any]
    """The fields smoke sets for the check (output_dir, max_steps, the save at the resume step,
    logging every step, …) and the defaults it gives from its own options (batch size, learning
    rate, seed) when the file does not."""
    overridden: list[str]
    """Fields of the file that smoke set otherwise (the file's value is in ``given``)."""


class CheckpointMeasure(_Model):
    """Checkpoint ``at_step`` as the Trainer wrote it: what ``evalkit plan`` sizes disk and
    checkpoint cadence with."""

    files: dict[str, int]
    """Bytes of each file of the checkpoint folder, by name."""
    bytes: int
    """Their total: one checkpoint on disk."""
    save_seconds: float | None
    """Wall-clock seconds of the Trainer's whole checkpoint save (weights, optimizer,
    scheduler, RNG and trainer state) in run A (null when it did not save)."""
    resumable: bool
    """Whether ``evalkit card`` finds every state file a resume needs (see ``problems``)."""
    problems: list[str]
    """``evalkit card``'s errors for the killed run's checkpoint (``code: message``)."""


class ResumeCheck(_Model):
    """A straight run against a run killed after checkpoint ``at_step`` and resumed."""

    ok: bool
    """B after ``at_step`` stays within A's noise floor (losses and the final weights), the
    learning rates and batches are A's, and the checkpoint holds every state file."""
    at_step: int
    """The step whose checkpoint B is killed after and resumed from."""
    steps: int
    """Optimizer steps of every run (``max_steps``)."""
    rows: int
    """Rows of the Trainer's dataset: enough for half the steps, so the runs pass an epoch
    boundary and a resume after it starts in the second epoch."""
    steps_per_epoch: int
    """Optimizer steps in one epoch of that dataset."""
    trainer_args: TrainerArgs
    """The TrainingArguments."""
    loss_a: list[float | None]
    """Run A's loss at each step as the Trainer logs it (the mean over the step's micro-batches)."""
    loss_a2: list[float | None]
    """Run A''s (the same straight run again)."""
    loss_b: list[float | None]
    """Run B's: the killed process up to ``at_step``, the resumed one after."""
    lr_a: list[float | None]
    """The learning rate each step of A used."""
    lr_b: list[float | None]
    """The learning rate each step of B used."""
    batches_a: list[list[int]]
    """The rows (0-based, in the split) each step of A trained on, in order."""
    batches_b: list[list[int]]
    """The rows each step of B trained on."""
    batch_sha256_a: list[str | None]
    """sha256 of each step's rows as JSON text (``[3, 5]``), run A."""
    batch_sha256_b: list[str | None]
    """The same for run B."""
    noise_floor: float | None
    """Largest |A − A'| loss over all steps: how far two straight runs part here."""
    max_loss_diff: float | None
    """Largest |A − B| loss over the steps after ``at_step``."""
    tolerance: float | None
    """The largest |A − B| that passes: 10 x the noise floor, at least 4 float32 ulps of the
    largest loss (one pair of runs underestimates the noise; a broken resume leaves it by
    orders of magnitude)."""
    lr_equal: bool
    """Every step's learning rate is the same in A and B (exactly)."""
    batches_equal: bool
    """Every step's rows are the same in A and B."""
    adapter_max_diff: float | None
    """Largest |A − B| of the trained weights (the adapter's; full: the model's) at ``steps``."""
    adapter_noise_floor: float | None
    """Largest |A − A'| of the same weights."""
    bitwise: bool
    """B's losses after ``at_step`` and its final weights are A's bit for bit."""
    killed: bool
    """B's first process ended by SIGKILL right after writing checkpoint ``at_step``."""
    checkpoint: CheckpointMeasure
    """The checkpoint the resume started from."""
    problems: list[str]
    """Why ``ok`` is false (empty when it is true)."""
