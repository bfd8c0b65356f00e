"""Split files that hold the input's values as written, not as a frame re-encodes them.

A frame gives a nested JSON column one type: every message gets every key
any message has (``"tool_calls": null``, ``"weight": null``), and the tool
schemas of different rows merge into one struct. Written back from the
frame, each row would differ from its input line. So:

* **JSONL output of a JSONL input** is the input's lines, byte for byte
  (the byte order mark of the first line and the line ending dropped: every
  line ends with ``\\n``), in the split's row order;
* **Parquet output of a JSONL input** writes a nested column whose values
  the frame changed as the JSON text of each value as written (a string
  column; evalkit reads a column of message-list JSON text back as
  conversations, and a tools column as tools); nested columns the frame
  holds exactly stay nested;
* Parquet (or CSV) input is written from the frame, which holds its values.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from evalkit.chat.sources import is_jsonl
from evalkit.errors import InvalidTable
from evalkit.io import TableFormat, atomic_directory, write_table
from evalkit.splitting.manifest import SplitManifest, manifest_text

if TYPE_CHECKING:
    import polars as pl

    from evalkit.splitting.api import SplitResult


def split_lines(path: Path, rows: Mapping[str, np.ndarray]) -> dict[str, bytes]:
    """Each split's input lines, as written, in the order of ``rows`` (input row numbers)."""
    from evalkit.chat.sources import jsonl_lines

    lines = jsonl_lines(path)
    return {name: b"".join(lines[row] for row in chosen) for name, chosen in rows.items()}


def _same(written: Any, held: Any) -> bool:
    """Whether a frame's value is the JSON value as written (no added keys, nothing retyped)."""
    if isinstance(written, dict):
        return (
            isinstance(held, dict)
            and written.keys() == held.keys()
            and all(_same(written[key], held[key]) for key in written)
        )
    if isinstance(written, list):
        return (
            isinstance(held, list)
            and len(written) == len(held)
            and all(_same(a, b) for a, b in zip(written, held, strict=True))
        )
    if isinstance(written, bool) or isinstance(held, bool):
        return type(written) is type(held) and written == held
    return bool(written == held)


def changed_columns(
    path: Path,
    frames: Mapping[str, pl.DataFrame],
    rows: Mapping[str, np.ndarray],
    converted: Sequence[str] = (),
) -> dict[str, list[str | None]]:
    """The nested columns whose frame values differ from the JSONL file's, as JSON text per
    input row (null for a null value). ``frames`` are the splits, ``rows`` their input rows;
    ``converted`` names columns polars turned into text, checked as well."""
    import orjson

    from evalkit.chat.sources import exact_columns

    schema = next(iter(frames.values())).schema if frames else {}
    nested = [name for name, dtype in schema.items() if dtype.is_nested() or name in converted]
    if not nested:
        return {}
    written, _ = exact_columns(path, nested)
    changed: dict[str, list[str | None]] = {}
    for name in nested:
        values = written[name]
        same = all(
            _same(values[row], held)
            for split, frame in frames.items()
            for row, held in zip(rows[split], frame[name].to_list(), strict=True)
        )
        if not same:
            changed[name] = [
                orjson.dumps(value).decode() if value is not None else None for value in values
            ]
    return changed


def with_json_text(
    frame: pl.DataFrame, changed: Mapping[str, Sequence[str | None]], rows: np.ndarray
) -> pl.DataFrame:
    """``frame`` (the input rows ``rows``) with each changed column as its JSON text."""
    import polars as pl

    if not changed:
        return frame
    return frame.with_columns(
        pl.Series(name, [texts[row] for row in rows], dtype=pl.String)
        for name, texts in changed.items()
    )


def write_split(result: SplitResult, out: Path, fmt: TableFormat, force: bool) -> SplitManifest:
    """Write ``result``'s split files, ``assignments.parquet`` and ``manifest.json`` into
    ``out`` (see :meth:`SplitResult.write`); returns the manifest as written."""
    source = result.manifest.input.path
    path = Path(source) if source is not None else None
    if result.retyped and fmt == "csv":
        info = result.manifest.text
        column = repr(info.columns[0]) if info is not None else "the text column"
        raise InvalidTable(
            f"{source}: column {column} holds content as text in some messages and as a "
            f"list of parts in others, which {fmt} cannot keep; pass {{fmt}} "
            "(the split files then hold the input's lines as written) or parquet",
            refs={"fmt": "jsonl"},
        )
    rows = result.rows if path is not None and is_jsonl(path) else None
    lines = split_lines(path, rows) if rows is not None and path and fmt == "jsonl" else None
    changed: dict[str, list[str | None]] = {}
    if rows is not None and path is not None and fmt == "parquet":
        converted = result.manifest.text.columns if result.retyped and result.manifest.text else []
        changed = changed_columns(path, result.frames, rows, converted)
    manifest = replace(result.manifest, json_text_columns=sorted(changed))
    inputs = [path] if path is not None else []
    with atomic_directory(Path(out), force, inputs=inputs, marker="manifest.json") as staging:
        for name, frame in result.frames.items():
            if lines is not None:
                (staging / f"{name}.{fmt}").write_bytes(lines[name])
                continue
            if changed and rows is not None:
                frame = with_json_text(frame, changed, rows[name])
            write_table(frame, staging / f"{name}.{fmt}", fmt)
        write_table(result.assignments, staging / "assignments.parquet", "parquet")
        text = manifest_text(manifest)
        (staging / "manifest.json").write_text(text, encoding="utf-8")
    return manifest
