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

from pathlib import Path


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
