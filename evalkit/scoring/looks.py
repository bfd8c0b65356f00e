"""Which ledger a look from Python goes to: the rules of ``evalkit score``, with parameters.

A gold file's looks are counted in ``evalkit-ledger.jsonl`` beside it, so
that ``evalkit ledger`` and ``gate`` see every look, from the command line
or from a notebook. A gold frame has no file, hence no folder to keep a
ledger in: its looks go unrecorded unless a ledger is named (its line then
records the frame's content hash, which the same rows in a file share as
``test_set_sha256``).
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Literal

from evalkit.errors import UsageError
from evalkit.table_input import is_path


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
        path = Path(ledger)
        if not writable(path):
            raise UsageError(
                f"ledger: cannot write {path}; pass a writable path, or ledger=False to "
                "record no look"
            )
        check_ledger_file(path)
        return path
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
