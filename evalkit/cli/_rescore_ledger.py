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
from typing import Any

import click

from evalkit.errors import UsageError


def choose_ledger(
    recorded: str | None,
    located: Path | None,
    gold: Path,
    given: Path | None,
    no_ledger: bool,
) -> Path | None:
    """``--ledger``, else the ledger the result recorded its look in; None with ``--no-ledger``.

    A result scored with ``--no-ledger`` is re-scored without one too (a
    validation split, say); a recorded ledger that is gone is started again
    beside the gold file, and the terminal says so.
    """
    from evalkit.provenance.ledger import check_ledger_file, default_ledger, writable

    if no_ledger:
        if given is not None:
            raise UsageError("give --ledger FILE or --no-ledger, not both")
        return None
    if given is None and recorded is None:
        return None
    chosen = given or located or default_ledger(gold)
    if given is None and located is None:
        click.echo(
            f"evalkit: warning: the ledger {recorded} the result recorded is not found; "
            f"recording the re-score in {chosen}",
            err=True,
        )
    if not writable(chosen):
        raise UsageError(
            f"{chosen}: cannot write the ledger there; pass a writable --ledger path or --no-ledger"
        )
    check_ledger_file(chosen)
    return chosen


def record_rescore(
    ledger: Path | None, summary: Any, replaced: Any, purpose: str | None
) -> str | None:
    """Append the re-score's line; one line for the terminal saying what it counted as.

    ``summary`` is the new result's, ``replaced`` the result folder it replaces.
    """
    if ledger is None:
        return "ledger: not recorded (the result was scored with --no-ledger; pass --ledger FILE)"
    from evalkit.provenance.ledger import append_look, rules_sha256
    from evalkit.provenance.ledger_state import gold_state

    old, new = replaced.summary.contract, summary.contract
    same_rules = rules_sha256(old.normalized) == rules_sha256(new.normalized)
    why = purpose or f"rescore of {replaced.path} ({old.name} v{old.version})"
    _, looks, new_look = append_look(ledger, summary, purpose=why)
    if not new_look:
        rules = "the same rules" if same_rules else "these rules before"
        return (
            f"ledger: a re-score under {rules}, so no new look ({looks} at this gold file, "
            f"in {ledger})"
        )
    state = gold_state(ledger, summary.gold.sha256)
    if same_rules:
        return (
            f"ledger: look {looks} at this gold file ({state.state}), in {ledger}: the "
            "replaced result's look was not recorded there"
        )
    return (
        f"ledger: the rules changed ({old.name} v{old.version} -> {new.name} v{new.version}) "
        f"after the test was seen: look {looks} at this gold file, which is now "
        f"{state.state} (see evalkit ledger {ledger})"
    )
