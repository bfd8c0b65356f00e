"""Split files written from the input as it was read, never from a second reading.

* **JSONL output** of a JSON input (JSON Lines, a ``.json`` array) is the
  input's records byte for byte (a ``.json`` array's elements one per line;
  the byte order mark dropped, every line ending with ``\\n``), in the
  split's row order; of any other input, each row's record as the input holds
  it (no key another row has, no ``null`` padding; :meth:`evalkit.io.Table.jsonl`).
* **Parquet and CSV output** are the split's frames: a nested column whose
  values a frame cannot hold as written (objects whose keys differ by row,
  values a reader converted) as each row's JSON text, which evalkit reads back
  as the same values (a message list as conversations, a tools column as
  tools); ``manifest.json_text_columns`` names those columns.

The input is never opened again: a file changed or moved after the split was
computed cannot put other rows into a split, and the manifest records the
hash of what was split.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from evalkit.io import Table, TableFormat, atomic_directory, check_writable, write_table
from evalkit.records._manifest import (
    ASSIGNMENTS_FILE,
    MANIFEST_FILE,
    SplitManifest,
    write_assignments,
    write_manifest,
)

if TYPE_CHECKING:
    import numpy as np
    import polars as pl


def write_split(
    frames: Mapping[str, pl.DataFrame],
    assignments: pl.DataFrame,
    manifest: SplitManifest,
    source: tuple[Table, Mapping[str, np.ndarray]] | None,
    out: Path,
    fmt: TableFormat,
    force: bool,
) -> SplitManifest:
    """Write the split files, ``assignments.parquet`` and ``manifest.json`` into ``out``
    (see ``SplitResult.write``); ``source`` is the input as read and each split's rows of
    it. Returns the manifest as written."""
    if fmt == "jsonl":
        manifest = replace(manifest, json_text_columns=[])
    path = manifest.input.path
    inputs = [Path(path)] if path is not None else []
    table, rows = source if source is not None else (None, None)
    with atomic_directory(Path(out), force, inputs=inputs, marker=MANIFEST_FILE) as staging:
        for name, frame in frames.items():
            target = staging / f"{name}.{fmt}"
            if fmt == "jsonl" and table is not None and rows is not None:
                if table.lines is None:  # rows a frame holds: NaN has no JSON
                    check_writable(frame, target, fmt)
                target.write_bytes(table.jsonl(rows[name]))
            else:
                write_table(frame, target, fmt)
        write_assignments(staging / ASSIGNMENTS_FILE, assignments)
        write_manifest(staging / MANIFEST_FILE, manifest)
    return manifest
