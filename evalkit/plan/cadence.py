"""Preemptible mode: how often to checkpoint, and what a preemption and the saving cost.

From the smoke report's measured rates (nothing guessed): a step is
``--batch-size x --seq-len`` tokens at the measured train tokens/s; a
checkpoint takes the save time smoke measured for a real ``Trainer``
checkpoint (``resume.checkpoint``, written by ``smoke --resume-at``) or,
without one, the adapter's measured save scaled by bytes to the plan's
checkpoint (``disk.checkpoint_gb``: a checkpoint also holds the optimizer's
states). A preemption that comes while a checkpoint is being written loses
the ``--save-every`` steps since the last one and that save: that is the most
one preemption can lose. The suggested ``--save-every`` is the largest that
keeps it within ``--max-lost-minutes``.
"""

from __future__ import annotations

import math

from evalkit.errors import ParameterError
from evalkit.plan.bounds import MAX_SAVE_EVERY
from evalkit.records._plan_sheet import Cadence
from evalkit.records._plan_time import MeasuredRates

SIGNIFICANT = 6


def _round(value: float) -> float:
    return float(f"{value:.{SIGNIFICANT}g}")


def checkpoint_save(rates: MeasuredRates, plan_checkpoint_bytes: int) -> tuple[int, float, str]:
    """(bytes of one checkpoint, seconds to write it, how the seconds were found).

    The bytes are smoke's measured checkpoint's (``resume.checkpoint.bytes``)
    when the report has one, else the plan's lower bound; the seconds are its
    measured save, else the adapter's measured save scaled by bytes.
    """
    size = rates.checkpoint_bytes if rates.checkpoint_bytes is not None else plan_checkpoint_bytes
    if rates.checkpoint_save_seconds is not None:
        return (
            size,
            rates.checkpoint_save_seconds,
            f"measured: resume.checkpoint of {rates.path} ({size:,} bytes in "
            f"{rates.checkpoint_save_seconds:g} s)",
        )
    if rates.saved_bytes is None:
        raise ParameterError(
            "measured",
            f"{rates.path}: the cadence needs a measured save with its size (reload.saved_bytes, "
            "or resume.checkpoint from smoke's resume check); run evalkit smoke again",
        )
    seconds = rates.save_seconds * size / rates.saved_bytes
    whose = "smoke's checkpoint" if rates.checkpoint_bytes is not None else "the plan's checkpoint"
    how = (
        f"scaled by bytes: save_seconds {rates.save_seconds:g} s for {rates.saved_bytes:,} bytes "
        f"(reload.saved_bytes of {rates.path}) x {size:,} bytes of {whose}"
    )
    return size, seconds, how


def largest_within(step_seconds: float, save_seconds: float, budget_seconds: float) -> int | None:
    """The largest S with S x step + save <= budget (None when not even S = 1 is)."""

    def fits(steps: int) -> bool:
        return steps * step_seconds + save_seconds <= budget_seconds

    if not fits(1):
        return None
    guess = max(1, min(MAX_SAVE_EVERY, math.floor((budget_seconds - save_seconds) / step_seconds)))
    while guess > 1 and not fits(guess):  # a float a hair over: step down
        guess -= 1
    while guess < MAX_SAVE_EVERY and fits(guess + 1):
        guess += 1
    return guess


def plan_cadence(
    rates: MeasuredRates,
    *,
    step_tokens: int,
    run_tokens: float,
    plan_checkpoint_bytes: int,
    save_every: int | None,
    max_lost_minutes: float,
) -> Cadence:
    """The cadence at ``save_every`` (or the suggested one), from measured rates."""
    step_seconds = step_tokens / rates.train_tokens_per_second
    checkpoint, save_seconds, how = checkpoint_save(rates, plan_checkpoint_bytes)
    steps_per_run = max(1, math.ceil(run_tokens / step_tokens))
    best = largest_within(step_seconds, save_seconds, 60 * max_lost_minutes)
    if best is not None:
        best = min(best, steps_per_run)  # one checkpoint a run is as rare as it gets
    chosen = save_every if save_every is not None else (best or 1)
    interval = chosen * step_seconds + save_seconds
    saves = steps_per_run // chosen
    return Cadence(
        save_every=chosen,
        save_every_given=save_every is not None,
        step_tokens=step_tokens,
        step_seconds=_round(step_seconds),
        checkpoint_bytes=checkpoint,
        checkpoint_bytes_from=(
            "resume.checkpoint.bytes"
            if rates.checkpoint_bytes is not None
            else "disk.checkpoint_gb"
        ),
        save_seconds=_round(save_seconds),
        save_seconds_from=how,
        lost_minutes=_round(interval / 60),
        saving_share=_round(save_seconds / interval),
        max_lost_minutes=max_lost_minutes,
        save_every_for_max=best,
        steps_per_run=steps_per_run,
        saves_per_run=saves,
        save_hours_per_run=_round(saves * save_seconds / 3600),
    )
