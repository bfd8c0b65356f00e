"""``evalkit score``'s provenance options: the card or base to record, and the ledger.

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
    from evalkit.provenance.models import AdapterCard
    from evalkit.scoring.summary import BaseModelInfo


@dataclass(frozen=True)
class ScoreProvenance:
    """What ``score`` records about where the predictions came from, and where the look goes."""

    card: AdapterCard | None
    base: BaseModelInfo | None
    ledger: Path | None


def _card(
    card_path: Path | None, adapter_dir: Path | None, base_revision: str | None
) -> AdapterCard | None:
    if card_path is not None:
        from evalkit.provenance.card import load_card

        return load_card(card_path)
    if adapter_dir is not None:
        from evalkit.provenance.card import adapter_card

        return adapter_card(adapter_dir, base_revision=base_revision)
    return None


def _ledger(gold_path: Path, ledger_path: Path | None, no_ledger: bool) -> Path | None:
    from evalkit.provenance.ledger import check_ledger_file, default_ledger, writable

    if no_ledger:
        if ledger_path is not None:
            raise UsageError("give --ledger FILE or --no-ledger, not both")
        return None
    if ledger_path is not None:
        if not writable(ledger_path):
            raise UsageError(
                f"{ledger_path}: cannot write the ledger there; pass a writable --ledger path "
                "or --no-ledger"
            )
        check_ledger_file(ledger_path)
        return ledger_path
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


def provenance_options(
    gold_path: Path,
    card_path: Path | None,
    adapter_dir: Path | None,
    base_model: str | None,
    base_revision: str | None,
    ledger_path: Path | None,
    no_ledger: bool,
) -> ScoreProvenance:
    """Check the options together, make or read the card, and choose the ledger."""
    if card_path is not None and adapter_dir is not None:
        raise UsageError(
            "give --card FILE or --adapter DIR, not both (the card describes the adapter)"
        )
    if base_model is not None and not base_model.strip():
        raise UsageError("--base-model is empty; pass the base's hub id or local path")
    if base_model is not None and (card_path or adapter_dir):
        raise UsageError(
            "--base-model is for a prompt-only run; an adapter's base comes from its card"
        )
    if base_revision is not None and card_path is not None:
        raise UsageError(
            "--base-revision cannot change a card; pass it to evalkit card, or use --adapter"
        )
    if base_revision is not None and base_model is None and adapter_dir is None:
        raise UsageError("--base-revision needs --base-model ID (or --adapter DIR)")
    ledger = _ledger(gold_path, ledger_path, no_ledger)
    card = _card(card_path, adapter_dir, base_revision)
    base = None
    if base_model is not None:
        from evalkit.provenance.records import options_base
        from evalkit.scoring.summary import BaseModelInfo

        base = BaseModelInfo(**options_base(base_model, base_revision))
    if card is not None and card.errors:
        codes = ", ".join(sorted({problem.code for problem in card.errors}))
        click.echo(
            f"evalkit: warning: the adapter card records errors ({codes}); see evalkit card",
            err=True,
        )
    return ScoreProvenance(card, base, ledger)


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
