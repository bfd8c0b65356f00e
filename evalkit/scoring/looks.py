"""Which ledger a look goes to, and what is said about it: the one copy of these rules.

``evalkit.score`` and ``evalkit.rescore`` (hence ``evalkit score`` and
``evalkit rescore``, which are those calls) choose the ledger here. A gold
file's looks are counted in ``evalkit-ledger.jsonl`` beside it, so that
``evalkit ledger`` and ``gate`` see every look, from the command line or
from a notebook. A gold frame has no file, hence no folder to keep a ledger
in: its looks go unrecorded unless a ledger is named (its line then records
the frame's content hash, which the same rows in a file share as
``test_set_sha256``). A re-score's look goes where the result it replaces
recorded its own. What is only worth knowing (a look that goes unrecorded, a
ledger found damaged) is an :class:`~evalkit.errors.EvalkitWarning`, which
the command line prints as ``evalkit: warning: …``.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from evalkit.errors import NO_VALUE, EvalkitWarning, UsageError
from evalkit.io import is_path

if TYPE_CHECKING:
    from evalkit.provenance.ledger import AppendedLook

LedgerChoice = str | os.PathLike[str] | Literal[False] | None


def _refuse_true(ledger: object) -> None:
    if ledger is True:
        raise UsageError(
            "{ledger}: pass a ledger path, None (the default) or False, not True", refs=["ledger"]
        )


def warn(message: str, *refs: str) -> None:
    """An :class:`~evalkit.errors.EvalkitWarning` naming ``refs`` as parameters."""
    warnings.warn(EvalkitWarning(message, refs=refs), stacklevel=3)


def chosen_ledger(gold: object, ledger: LedgerChoice) -> Path | None:
    """The ledger ``score`` appends to (None: no look recorded), checked before anything is scored.

    ``ledger`` None means the default: beside a gold file (a warning, and no
    record, when that folder is not writable), none for a gold frame.
    ``False`` records nothing.
    """
    from evalkit.provenance.ledger import check_ledger_file, default_ledger, writable

    _refuse_true(ledger)
    if ledger is False:
        return None
    if ledger is not None:
        return _checked(Path(ledger))
    if not is_path(gold):
        return None
    path = default_ledger(gold)
    if not writable(path):
        warn(
            f"{path.parent} is not writable, so this look at {gold} goes unrecorded; name a "
            "writable ledger ({ledger}) to keep one elsewhere",
            "ledger",
        )
        return None
    check_ledger_file(path)
    return path


def _checked(path: Path) -> Path:
    """A ledger named by the caller or recorded by a result: writable, and a ledger if it exists."""
    from evalkit.provenance.ledger import check_ledger_file, writable

    if not writable(path):
        raise UsageError(
            f"{path}: cannot write the ledger there; pass a writable {{ledger}} path or "
            "{no_ledger}",
            refs={"ledger": NO_VALUE, "no_ledger": True},
        )
    check_ledger_file(path)
    return path


def rescore_ledger(
    recorded: str | None, located: Path | None, gold: Path, ledger: LedgerChoice
) -> Path | None:
    """Which ledger a re-score's look goes to (None: none).

    ``ledger`` (a path), else the ledger the result recorded its look in
    (``located``: found from here); a recorded ledger that is gone is started
    again beside the gold file, with a warning. A result scored without a
    ledger (a validation split, say) is re-scored without one; ``False``
    records nothing.
    """
    from evalkit.provenance.ledger import default_ledger

    _refuse_true(ledger)
    if ledger is False or (ledger is None and recorded is None):
        return None
    chosen = Path(ledger) if ledger is not None else located or default_ledger(gold)
    if ledger is None and located is None:
        warn(
            f"the ledger {recorded} the result recorded is not found; recording the re-score "
            f"in {chosen}"
        )
    return _checked(chosen)


def warn_damage(ledger: Path, look: AppendedLook) -> None:
    """Warn when the ledger had lost lines or its head before this look was appended."""
    if look.head_problem is not None:
        warn(
            f"{ledger}: {look.head_problem}; this look is recorded, and every test set of this "
            "ledger now reads burned (see evalkit ledger)"
        )
