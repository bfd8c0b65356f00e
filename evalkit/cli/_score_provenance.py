"""``evalkit score``'s provenance: the card or base to record, and the ledger, said on the terminal.

Kept out of ``score_cmd`` so that the plain ``score`` path imports nothing of
it beyond these few functions; the card's models load only with ``--card``
or ``--adapter``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import click

from evalkit.errors import UsageError

if TYPE_CHECKING:
    from evalkit.provenance.ledger import AppendedLook
    from evalkit.records._card import AdapterCard
    from evalkit.records._summary import BaseModelInfo
    from evalkit.scoring.options import ScoreParams


@dataclass(frozen=True)
class ScoreProvenance:
    """What ``score`` records about where the predictions came from, and where the look goes."""

    card: AdapterCard | None
    base: BaseModelInfo | None
    ledger: Path | None


def _ledger(gold_path: Path, given: ScoreParams) -> Path | None:
    from evalkit.provenance.ledger import check_ledger_file, default_ledger, writable

    if given.no_ledger:
        return None
    if given.ledger is not None:
        if not writable(given.ledger):
            raise UsageError(
                f"{given.ledger}: cannot write the ledger there; pass a writable --ledger path "
                "or --no-ledger"
            )
        check_ledger_file(given.ledger)
        return given.ledger
    ledger = default_ledger(gold_path)
    if not writable(ledger):
        click.echo(
            f"evalkit: warning: {ledger.parent} is not writable, so this look at "
            f"{gold_path} goes unrecorded; pass --ledger FILE to keep a ledger elsewhere",
            err=True,
        )
        return None
    check_ledger_file(ledger)
    return ledger


def provenance_options(gold_path: Path, given: ScoreParams) -> ScoreProvenance:
    """Choose the ledger, and make or read the card (the options were checked together)."""
    from evalkit.scoring.sources import made_card, score_base

    ledger = _ledger(gold_path, given)
    card = made_card(given)
    if card is not None and card.errors:
        codes = ", ".join(sorted({problem.code for problem in card.errors}))
        click.echo(
            f"evalkit: warning: the adapter card records errors ({codes}); see evalkit card",
            err=True,
        )
    return ScoreProvenance(card, score_base(given), ledger)


def look_message(ledger: Path | None, look: AppendedLook | None) -> str | None:
    """The line to print about the look appended (a warning first when the ledger was damaged)."""
    if ledger is None or look is None:
        return None
    if look.head_problem is not None:
        click.echo(
            f"evalkit: warning: {ledger}: {look.head_problem}; this look is recorded, and every "
            "test set of this ledger now reads burned (see evalkit ledger)",
            err=True,
        )
    if not look.new_look:
        return (
            f"ledger: the same predictions were scored under the same contract before, so no "
            f"new look ({look.looks} at this gold file, in {ledger})"
        )
    return f"ledger: look {look.looks} at this gold file, recorded in {ledger} (see evalkit ledger)"
