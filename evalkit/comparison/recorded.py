"""Find again a file a result recorded by the path it was given to ``evalkit score``.

``summary.json`` keeps the gold, predictions and ledger paths as typed, so
that the same run gives the same bytes wherever the project lies. A
relative path then means "from where score ran", which is often not where
``compare`` or ``gate`` runs (a CI step in another folder, a result folder
passed as ``../runs/a``). Score usually runs from the result folder's
project, so the path is looked up from here first, then from the result
folder and each folder above it. Callers check the file's sha256 where it
matters (the predictions, the gold file) and keep printing the recorded
path, never the located one.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from evalkit.io import LEDGER_NAME


def locate(recorded: str | None, folder: Path) -> Path | None:
    """The file ``recorded`` names, from here or from ``folder`` and its parents; None if none."""
    if not recorded:
        return None
    path = Path(recorded)
    if path.exists():
        return path
    if path.is_absolute():
        return None
    start = folder.resolve()
    for base in (start, *start.parents):
        candidate = base / path
        if candidate.exists():
            return candidate
    return None


def _recorded(value: Any, folder: Path) -> list[Path]:
    """A path a file recorded: as written (relative to the working folder) and from ``folder``."""
    if not isinstance(value, str) or not value:
        return []
    path = Path(value)
    return [path] if path.is_absolute() else [path, folder / path]


def result_inputs(folders: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """What reading result folders reads: the folders, and the files their summaries name.

    The recorded gold file, the ledger beside it, the ledger the look was
    recorded in and the predictions file: the inputs an output of
    ``compare``, ``gate`` or ``rescore`` must never replace. Read cheaply
    and tolerantly (a ``summary.json`` that cannot be read here names
    nothing; reading the result says what is wrong with it).
    """
    from evalkit.records._summary import EXAMPLES_FILE, SUMMARY_FILE, peek_summary

    found: list[Path] = []
    for folder in map(Path, folders):
        found += [folder / SUMMARY_FILE, folder / EXAMPLES_FILE, folder]
        summary = peek_summary(folder)
        gold = (summary.get("gold") or {}).get("path") if summary else None
        for path in _recorded(gold, folder):
            found += [path, path.parent / LEDGER_NAME]
        found += _recorded(summary.get("ledger"), folder)
        found += _recorded((summary.get("predictions") or {}).get("path"), folder)
    return found
