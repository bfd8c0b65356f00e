"""The steps every persisted file's reader and writer share: one write, one tolerant peek.

Each records module owns its file's name, its reader and its writer; what
they have in common lives here so that no two of them differ in how a file
is put on the disk. A write refuses to replace an existing file without
``force`` and goes through a temporary file and a rename (the bytes are on
the disk before the name is), so a reader never sees half a file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def write_file(path: Path, data: bytes, *, force: bool) -> None:
    """Write ``data`` to ``path`` atomically; an existing ``path`` needs ``force``."""
    from evalkit.io import atomic_write_bytes, check_new_output

    check_new_output(path, force)
    atomic_write_bytes(path, data)


def peek_object(path: Path) -> dict[str, Any]:
    """A persisted JSON file's object read tolerantly: ``{}`` when missing or unreadable.

    For listing the paths a file names (what an output must never replace)
    before the file is read for real; never for its figures.
    """
    import orjson

    try:
        loaded = orjson.loads(path.read_bytes()) if path.is_file() else {}
    except (OSError, orjson.JSONDecodeError):
        return {}
    return loaded if isinstance(loaded, dict) else {}
