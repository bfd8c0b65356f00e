"""The ledger side of ``evalkit rescore``: which ledger, and what its new line means.

Kept in one place, and written against the ledger's public functions only
(``append_look``, ``rules_sha256``, ``gold_state``), so that the ledger's
internals can change without touching re-scoring. The rule is the ledger's
own: a look is a distinct (predictions, rules) pair, so a re-score under the
same rules (an evaluator upgrade) adds a line but no look, and a re-score
under changed rules is a new look that, after the test was seen under the
old rules, burns it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from evalkit.errors import UsageError

if TYPE_CHECKING:
    from evalkit.provenance.ledger import AppendedLook
    from evalkit.scoring.options import LookParams


def choose_ledger(
    recorded: str | None,
    located: Path | None,
    gold: Path,
    given: LookParams,
) -> Path | None:
    """``--ledger``, else the ledger the result recorded its look in; None with ``--no-ledger``.

    A result scored with ``--no-ledger`` is re-scored without one too (a
    validation split, say); a recorded ledger that is gone is started again
    beside the gold file, and the terminal says so.
    """
    from evalkit.provenance.ledger import check_ledger_file, writable
    from evalkit.scoring.looks import recorded_ledger

    if given.no_ledger:  # with --ledger too is refused when the options are read
        return None
    chosen = recorded_ledger(recorded, located, gold, given.ledger, _warn)
    if chosen is None:
        return None
    if not writable(chosen):
        raise UsageError(
            f"{chosen}: cannot write the ledger there; pass a writable --ledger path or --no-ledger"
        )
    check_ledger_file(chosen)
    return chosen


def _warn(text: str) -> None:
    click.echo(f"evalkit: warning: {text}", err=True)


def rescore_message(
    ledger: Path | None, summary: Any, replaced: Any, look: AppendedLook | None
) -> str | None:
    """One line for the terminal saying what the re-score's ledger line counted as.

    ``summary`` is the new result's, ``replaced`` the result folder it
    replaces, ``look`` the line appended before the new result was published.
    """
    if ledger is None or look is None:
        return "ledger: not recorded (the result was scored with --no-ledger; pass --ledger FILE)"
    from evalkit.cli._score_provenance import look_message
    from evalkit.provenance.ledger import rules_sha256
    from evalkit.provenance.ledger_state import gold_state

    if look.head_problem is not None:
        look_message(ledger, look)  # the warning about the damaged ledger, on stderr
    old, new = replaced.summary.contract, summary.contract
    same_rules = rules_sha256(old.normalized) == rules_sha256(new.normalized)
    if not look.new_look:
        rules = "the same rules" if same_rules else "these rules before"
        return (
            f"ledger: a re-score under {rules}, so no new look ({look.looks} at this gold file, "
            f"in {ledger})"
        )
    state = gold_state(ledger, summary.gold.sha256)
    if same_rules:
        return (
            f"ledger: look {look.looks} at this gold file ({state.state}), in {ledger}: the "
            "replaced result's look was not recorded there"
        )
    return (
        f"ledger: the rules changed ({old.name} v{old.version} -> {new.name} v{new.version}) "
        f"after the test was seen: look {look.looks} at this gold file, which is now "
        f"{state.state} (see evalkit ledger {ledger})"
    )
