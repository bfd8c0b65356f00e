"""Which ledger a look from Python goes to: the rules of ``evalkit score``, with parameters.

A gold file's looks are counted in ``evalkit-ledger.jsonl`` beside it, so
that ``evalkit ledger`` and ``gate`` see every look, from the command line
or from a notebook. A gold frame has no file, hence no folder to keep a
ledger in: its looks go unrecorded unless a ledger is named (its line then
records the frame's content hash, which the same rows in a file share as
``test_set_sha256``). A re-score's look goes where the result it replaces
recorded its own (:func:`recorded_ledger`, for the command and the library).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from evalkit.errors import UsageError
from evalkit.io import is_path


def chosen_ledger(
    gold: object, ledger: str | os.PathLike[str] | Literal[False] | None
) -> Path | None:
    """The ledger to append to (None: no look recorded), checked before anything is scored.

    ``ledger`` None means the default: beside a gold file (a warning, and no
    record, when that folder is not writable, as on the command line), none
    for a gold frame. ``False`` records nothing.
    """
    from evalkit.provenance.ledger import check_ledger_file, default_ledger, writable

    if ledger is False:
        return None
    if ledger is True:
        raise UsageError("ledger: pass a ledger path, None (the default) or False, not True")
    if ledger is not None:
        return _checked(Path(ledger))
    if not is_path(gold):
        return None
    path = default_ledger(gold)
    if not writable(path):
        warnings.warn(
            f"{path.parent} is not writable, so this look at {gold} goes unrecorded; pass "
            "ledger=PATH to keep a ledger elsewhere",
            stacklevel=3,
        )
        return None
    check_ledger_file(path)
    return path


def _checked(path: Path) -> Path:
    """A ledger named by the caller: writable, and a ledger if it exists."""
    from evalkit.provenance.ledger import check_ledger_file, writable

    if not writable(path):
        raise UsageError(
            f"ledger: cannot write {path}; pass a writable path, or ledger=False to record no look"
        )
    check_ledger_file(path)
    return path


def recorded_ledger(
    recorded: str | None,
    located: Path | None,
    gold: Path,
    given: str | os.PathLike[str] | None,
    warn: Callable[[str], None],
) -> Path | None:
    """Which ledger a re-score's look goes to (``evalkit rescore`` and :func:`evalkit.rescore`).

    ``given``, else the ledger the result recorded its look in (``located``:
    found from here); a recorded ledger that is gone is started again beside
    the gold file, and ``warn`` says so. A result scored without a ledger (a
    validation split, say) is re-scored without one: None.
    """
    from evalkit.provenance.ledger import default_ledger

    if given is None and recorded is None:
        return None
    chosen = Path(given) if given is not None else located or default_ledger(gold)
    if given is None and located is None:
        warn(
            f"the ledger {recorded} the result recorded is not found; recording the re-score "
            f"in {chosen}"
        )
    return chosen


def rescore_ledger(
    recorded: str | None,
    located: Path | None,
    gold: Path,
    ledger: str | os.PathLike[str] | Literal[False] | None,
) -> Path | None:
    """:func:`recorded_ledger` for a Python caller: ``False`` records nothing, a warning warns."""
    if ledger is False:
        return None
    if ledger is True:
        raise UsageError("ledger: pass a ledger path, None (the default) or False, not True")
    chosen = recorded_ledger(
        recorded, located, gold, ledger, lambda text: warnings.warn(text, stacklevel=4)
    )
    return None if chosen is None else _checked(chosen)
