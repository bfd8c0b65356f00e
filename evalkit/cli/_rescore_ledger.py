"""The ledger side of ``evalkit rescore``: what its new line means, said on the terminal.

Kept in one place, and written against the ledger's public functions only
(``append_look``, ``rules_sha256``, ``gold_state``), so that the ledger's
internals can change without touching re-scoring (which ledger, and the
line's purpose, are the library's: :mod:`evalkit.scoring.rescore`). The rule is the ledger's
own: a look is a distinct (predictions, rules) pair, so a re-score under the
same rules (an evaluator upgrade) adds a line but no look, and a re-score
under changed rules is a new look that, after the test was seen under the
old rules, burns it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalkit.provenance.ledger import AppendedLook


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
