"""The inputs a command finds through another file: a result's, a run's, a contract's.

A command declares what it names on its command line in a
:class:`~evalkit.io.CommandFiles`; these helpers add what those
files point to (the ledger a result recorded its look in, the folders a
run pinned, a contract's schema file), read cheaply and tolerantly: a file
that cannot be read here is reported by the command itself, in its own words.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def _recorded(value: Any, folder: Path) -> list[Path]:
    """A path a file recorded: as written (relative to the working folder) and from ``folder``."""
    if not isinstance(value, str) or not value:
        return []
    path = Path(value)
    return [path] if path.is_absolute() else [path, folder / path]


def run_inputs(run_dir: Path) -> list[Path]:
    """What ``reload-check`` reads: the run folder and every folder and file its run.json pins."""
    from evalkit.records._run import PREDICTIONS_FILE, RUN_FILE, TOKENS_FILE, peek_run

    record = peek_run(run_dir)
    found = [run_dir / name for name in (RUN_FILE, PREDICTIONS_FILE, TOKENS_FILE)]
    found.append(run_dir)
    for key in ("base", "adapter", "tokenizer", "data"):
        block = record.get(key)
        if isinstance(block, dict):
            found += _recorded(block.get("path"), run_dir)
    return found
