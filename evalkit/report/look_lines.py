"""What ``evalkit score`` and ``evalkit rescore`` print about the look each recorded.

Rendering only: whether a line was a new look, the test set's state after
it and why none was recorded are decided by the library
(:func:`evalkit.score`, :func:`evalkit.rescore`), which returns them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from evalkit.comparison.rescore import RescoreResult
    from evalkit.scoring.result import ScoreResult


def score_look_line(result: ScoreResult) -> str | None:
    """The line about the look a score appended (None when none was recorded)."""
    look, ledger = result.look, result.summary.ledger
    if ledger is None or look is None:
        return None
    if not look.new_look:
        return (
            "ledger: the same answers were scored under the same rules before, so no new look "
            f"({look.looks} at this gold file, in {ledger})"
        )
    return f"ledger: look {look.looks} at this gold file, recorded in {ledger} (see evalkit ledger)"


def rescore_look_line(result: RescoreResult) -> str:
    """The line about what a re-score's ledger line counted as (or why there is none)."""
    look, ledger = result.look, result.summary.ledger
    if result.unrecorded == "no_ledger":
        return "ledger: not recorded (--no-ledger): gate counts this result as unrecorded"
    if look is None or ledger is None:
        return (
            "ledger: not recorded: the result it replaces recorded no ledger (scored with "
            "--no-ledger, or its gold's folder was not writable); pass --ledger FILE to record it"
        )
    if not look.new_look:
        rules = "the same rules" if result.same_rules else "these rules before"
        return (
            f"ledger: a re-score under {rules}, so no new look ({look.looks} at this gold file, "
            f"in {ledger})"
        )
    state = result.state.state if result.state is not None else "unknown"
    if result.same_rules:
        return (
            f"ledger: look {look.looks} at this gold file ({state}), in {ledger}: the "
            "replaced result's look was not recorded there"
        )
    old, new = result.replaced.summary.contract, result.summary.contract
    return (
        f"ledger: the rules changed ({old.name} v{old.version} -> {new.name} v{new.version}) "
        f"after the test was seen: look {look.looks} at this gold file, which is now "
        f"{state} (see evalkit ledger {ledger})"
    )
