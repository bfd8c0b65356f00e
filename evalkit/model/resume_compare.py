"""The runs of the resume check compared: losses, learning rates, batches, final weights.

Kept apart from the running (:mod:`evalkit.model.resume`) so that what makes
a resume pass is readable on one screen: after step K, B's losses and its
final weights stay within A's noise floor (A against A'), every step's
learning rate and rows are A's, and the checkpoint holds every state file.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalkit.records._resume import CheckpointMeasure, ResumeCheck, TrainerArgs

# One pair of runs underestimates the noise: allow ten times it. A broken resume
# (a restarted schedule, other batches, lost moments) leaves it by orders of magnitude.
NOISE_FACTOR = 10
ULPS = 4
FLOAT32_EPSILON = 2.0**-23
NAMES = {"a": "A", "a2": "A'", "b_killed": "B (until the kill)", "b_resumed": "B (resumed)"}


@dataclass
class Run:
    """What one process left: its step records and how it ended."""

    name: str
    folder: Path
    records: list[dict[str, Any]] = field(default_factory=list)
    killed: bool = False
    failed: str | None = None

    def series(self, steps: int) -> tuple[list[float | None], list[float | None], list[list[int]]]:
        """Loss, learning rate and rows of each step 1..steps (None / [] where none)."""
        losses: list[float | None] = [None] * steps
        rates: list[float | None] = [None] * steps
        rows: list[list[int]] = [[] for _ in range(steps)]
        for record in self.records:
            step = int(record.get("step", 0))
            if not 1 <= step <= steps:
                continue
            if record["kind"] == "log":
                losses[step - 1], rates[step - 1] = record["loss"], record["lr"]
            elif record["kind"] == "rows":
                rows[step - 1] += [int(row) for row in record["rows"]]
        return losses, rates, rows

    def save_seconds(self) -> float | None:
        """The seconds of this run's checkpoint save."""
        return next((r["seconds"] for r in self.records if r["kind"] == "save"), None)


@dataclass(frozen=True)
class Setup:
    """How the runs were set up (recorded in the report)."""

    at_step: int
    steps: int
    rows: int
    steps_per_epoch: int
    trainer_args: TrainerArgs


def batch_sha256(rows: list[int]) -> str | None:
    """sha256 of one step's rows as JSON text (``[3, 5]``); None for a step that did not run."""
    return hashlib.sha256(json.dumps(rows).encode()).hexdigest() if rows else None


def weights_diff(one: dict[str, Any] | None, other: dict[str, Any] | None) -> float | None:
    """Largest |one − other| over the same tensors; None when they are not the same tensors."""
    if one is None or other is None or set(one) != set(other):
        return None
    if any(one[name].shape != other[name].shape for name in one):
        return None
    return max(
        (float((one[n].double() - other[n].double()).abs().max()) for n in one if one[n].numel()),
        default=0.0,
    )


def _largest_weight(tensors: dict[str, Any] | None) -> float:
    if not tensors:
        return 0.0
    return max((float(t.double().abs().max()) for t in tensors.values() if t.numel()), default=0.0)


def _largest(values: list[float | None]) -> float:
    return max((abs(value) for value in values if value is not None), default=0.0)


def _diff(one: list[float | None], other: list[float | None], start: int) -> float | None:
    """Largest |one − other| from index ``start``; None when either lacks a step."""
    pairs = list(zip(one[start:], other[start:], strict=True))
    if not pairs or any(a is None or b is None for a, b in pairs):
        return None
    return max(abs(a - b) for a, b in pairs if a is not None and b is not None)


def _tolerance(floor: float | None, scale: float) -> float | None:
    if floor is None:
        return None
    return max(NOISE_FACTOR * floor, ULPS * FLOAT32_EPSILON * max(1.0, scale))


def _rate(value: float | None) -> str:
    return "none" if value is None else f"{value:.6g}"


def _first_difference(one: list[Any], other: list[Any], start: int) -> int | None:
    """The first step (1-based) from index ``start`` where the lists differ."""
    return next((i + 1 for i in range(start, len(one)) if one[i] != other[i]), None)


def _run_problems(runs: dict[str, Run], setup: Setup) -> list[str]:
    problems = []
    for key, name in NAMES.items():
        run = runs.get(key)
        if run is None:
            problems.append(f"resume: {name} did not run: there was no checkpoint to resume from")
        elif run.failed:
            problems.append(f"resume: run {name} failed in transformers' Trainer: {run.failed}")
    killed = runs.get("b_killed")
    if killed is not None and not killed.killed and not killed.failed:
        problems.append(
            f"resume: run B was never killed: it wrote no checkpoint-{setup.at_step} (the "
            "Trainer saved no checkpoint at that step)"
        )
    return problems


def compare(
    setup: Setup,
    runs: dict[str, Run],
    finals: dict[str, dict[str, Any] | None],
    checkpoint: CheckpointMeasure,
) -> ResumeCheck:
    """The report of the check: each comparison and every reason it fails."""
    steps, at = setup.steps, setup.at_step
    empty = Run("none", Path())
    loss_a, lr_a, rows_a = runs.get("a", empty).series(steps)
    loss_a2, lr_a2, rows_a2 = runs.get("a2", empty).series(steps)
    killed_loss, killed_lr, killed_rows = runs.get("b_killed", empty).series(steps)
    resumed_loss, resumed_lr, resumed_rows = runs.get("b_resumed", empty).series(steps)
    loss_b = killed_loss[:at] + resumed_loss[at:]
    lr_b = killed_lr[:at] + resumed_lr[at:]
    rows_b = killed_rows[:at] + resumed_rows[at:]
    noise = _diff(loss_a, loss_a2, 0)
    difference = _diff(loss_a, loss_b, at)
    tolerance = _tolerance(noise, _largest(loss_a))
    sha_a = [batch_sha256(rows) for rows in rows_a]
    sha_b = [batch_sha256(rows) for rows in rows_b]
    adapter = weights_diff(finals.get("a"), finals.get("b_resumed"))
    adapter_noise = weights_diff(finals.get("a"), finals.get("a2"))
    adapter_tolerance = _tolerance(adapter_noise, _largest_weight(finals.get("a")))
    problems = _run_problems(runs, setup)
    problems += [f"resume: checkpoint-{at}: {problem}" for problem in checkpoint.problems]
    if rows_a != rows_a2 or lr_a != lr_a2:
        problems.append(
            "resume: the two straight runs A and A' differ in their batches or learning rates: "
            "the run is not reproducible, so no resume can be checked (seed the data order)"
        )
    lr_step = _first_difference(lr_a, lr_b, 0)
    if lr_step is not None:
        problems.append(
            f"resume: the learning rate differs from step {lr_step} on: A "
            f"{_rate(lr_a[lr_step - 1])}, B {_rate(lr_b[lr_step - 1])} (the schedule did not "
            "resume where it stopped)"
        )
    rows_step = _first_difference(rows_a, rows_b, 0)
    if rows_step is not None:
        problems.append(
            f"resume: the batches differ from step {rows_step} on: A trained on rows "
            f"{rows_a[rows_step - 1]}, B on {rows_b[rows_step - 1]} (the data order changed "
            "on resume)"
        )
    if difference is not None and tolerance is not None and difference > tolerance:
        step = next(
            i + 1
            for i in range(at, steps)
            if abs((loss_a[i] or 0.0) - (loss_b[i] or 0.0)) > tolerance
        )
        problems.append(
            f"resume: B's loss leaves A's noise floor at step {step}: |A - B| up to "
            f"{difference:.3g} after step {at}, tolerance {tolerance:.3g} (A vs A': {noise:.3g})"
        )
    if "b_resumed" in runs and not runs["b_resumed"].failed:
        if adapter is None or adapter_tolerance is None:
            problems.append("resume: B's final weights are not A's tensors (names or shapes)")
        elif adapter > adapter_tolerance:
            problems.append(
                f"resume: B's final weights differ from A's by up to {adapter:.3g} (tolerance "
                f"{adapter_tolerance:.3g}; A vs A': {adapter_noise:.3g})"
            )
    after = range(at, steps)
    bitwise = bool(
        all(loss_a[i] is not None and loss_a[i] == loss_b[i] for i in after) and adapter == 0.0
    )
    return ResumeCheck(
        ok=not problems,
        at_step=at,
        steps=steps,
        rows=setup.rows,
        steps_per_epoch=setup.steps_per_epoch,
        trainer_args=setup.trainer_args,
        loss_a=loss_a,
        loss_a2=loss_a2,
        loss_b=loss_b,
        lr_a=lr_a,
        lr_b=lr_b,
        batches_a=rows_a,
        batches_b=rows_b,
        batch_sha256_a=sha_a,
        batch_sha256_b=sha_b,
        noise_floor=noise,
        max_loss_diff=difference,
        tolerance=tolerance,
        lr_equal=lr_step is None,
        batches_equal=rows_step is None,
        adapter_max_diff=adapter,
        adapter_noise_floor=adapter_noise,
        bitwise=bitwise,
        killed=bool(runs.get("b_killed") and runs["b_killed"].killed),
        checkpoint=checkpoint,
        problems=problems,
    )
