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


def _json_object(path: Path) -> dict[str, Any]:
    import orjson

    try:
        loaded = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


def _recorded(value: Any, folder: Path) -> list[Path]:
    """A path a file recorded: as written (relative to the working folder) and from ``folder``."""
    if not isinstance(value, str) or not value:
        return []
    path = Path(value)
    return [path] if path.is_absolute() else [path, folder / path]


def run_inputs(run_dir: Path) -> list[Path]:
    """What ``reload-check`` reads: the run folder and every folder and file its run.json pins."""
    record = _json_object(run_dir / "run.json")
    found = [run_dir / name for name in ("run.json", "predictions.jsonl", "tokens.parquet")]
    found.append(run_dir)
    for key in ("base", "adapter", "tokenizer", "data"):
        block = record.get(key)
        if isinstance(block, dict):
            found += _recorded(block.get("path"), run_dir)
    return found
