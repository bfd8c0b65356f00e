"""A table as read: its frame, and what its source said row by row.

:func:`read_table` is the one way a table arrives, whatever holds it: a JSON
Lines, ``.json``, CSV or Parquet file, a Hugging Face ``save_to_disk``
folder, or a polars, pandas or pyarrow frame. It gives a :class:`Table`:

* ``frame`` is the columnar view every command computes with (ids, groups,
  classes, text);
* :meth:`Table.values` is each row's value *as the source wrote it*: the keys
  each row's objects have and no others, nested values as they are (tool
  schemas and tool calls differ by row). A JSON source keeps its lines; a
  container that gives nested columns one Arrow type (Parquet, an HF folder, a
  polars or pyarrow frame) has its null padding taken away
  (:mod:`evalkit.io._padding`); a pandas frame holds its rows' own dicts;
* the source is read **once**: what a command hashes (``sha256``), computes
  from and writes back (:meth:`Table.jsonl`, :meth:`Table.written_frame`) are
  the same bytes, so a file rewritten while the command runs changes nothing
  it does or records.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from evalkit.errors import UnknownColumn, UnreadableFile
from evalkit.io._files import read_and_hash, require_regular_file
from evalkit.io._formats import table_format
from evalkit.io._frames import FRAME_SOURCE, as_polars, frame_sha256, is_path
from evalkit.io._jsonl import JsonLines, check_id_types, json_array_lines, json_lines
from evalkit.io._padding import same_value, strip_padding

if TYPE_CHECKING:
    import numpy as np
    import polars as pl

    from evalkit.io._frames import TableLike

SourceKind = Literal["jsonl", "json", "csv", "parquet", "hf", "polars", "pandas", "arrow"]
"""What held the table: a file format, or the kind of in-memory frame."""
UNIFYING: frozenset[SourceKind] = frozenset({"parquet", "hf", "polars", "arrow"})
"""Containers whose nested columns have one Arrow type per column (so null padding)."""
_JSON_LIKE = r"^\s*[\[{]"


@dataclass(frozen=True, eq=False)
class Table:
    """One table as read (see the module docstring)."""

    frame: pl.DataFrame
    """Every column, as a columnar reader types it (nested values padded to one type)."""
    label: str
    """What errors call it: the path as given, or e.g. ``gold frame``."""
    path: Path | None
    """The file or folder read; None for an in-memory frame."""
    kind: SourceKind
    lines: JsonLines | None = None
    """A JSON source's records as lines (JSON Lines, or a ``.json`` array's elements)."""
    digest: str | None = None
    """sha256 of the bytes read (a file), or of a dataset folder's files; None for a frame."""
    nested: dict[str, list[Any]] = field(default_factory=dict)
    """A pandas frame's columns of dicts or lists, as the frame holds them."""
    arrow_typed: bool = False
    """A JSON source's frame was built by pyarrow, whose types are exact (see
    :meth:`types_exact`)."""
    _values: dict[str, list[Any]] = field(default_factory=dict, repr=False)

    @property
    def source(self) -> Literal["frame"] | None:
        """``"frame"`` for an in-memory table, None for a file (what outputs record)."""
        return FRAME_SOURCE if self.path is None else None

    @property
    def height(self) -> int:
        """The number of rows."""
        return self.frame.height

    @cached_property
    def sha256(self) -> str:
        """sha256 of what was read: the file's bytes, a folder's files, a frame's content."""
        return self.digest if self.digest is not None else frame_sha256(self.frame)

    def where(self, row: int) -> str:
        """Names a 0-based row in an error: ``FILE:LINE`` for JSON Lines, else ``LABEL, row N``."""
        if self.lines is not None:
            return self.lines.where(row)
        return f"{self.label}, row {row + 1}"

    def position(self, row: int) -> str:
        """A 0-based row as words beside another location: ``line 3``, ``record 3``, ``row 3``."""
        if self.lines is not None:
            number = int(self.lines.numbers[row])
            return f"record {number}" if self.lines.array else f"line {number}"
        return f"row {row + 1}"

    def require_columns(self, columns: Sequence[str]) -> None:
        """Raise :class:`UnknownColumn` naming the first missing column and those that exist."""
        require_columns(self.frame, columns, self.label)

    def values(self, column: str) -> list[Any]:
        """Every row's value of ``column`` as the source wrote it (None where it has none).

        Nested values keep the keys the row's objects have and no others; a
        value a columnar reader converted (a list in a column of text) is the
        value as written.
        """
        if column in self._values:
            return self._values[column]
        import polars as pl

        if self.lines is not None:
            values = self.lines.column(column)
        elif column in self.nested:
            values = self.nested[column]
        else:
            series = self.frame[column]
            values = series.to_list()
            if self.kind in UNIFYING and series.dtype.is_nested():
                values = [strip_padding(value)[0] for value in values]
            elif series.dtype == pl.Null:
                values = [None] * len(values)
        self._values[column] = values
        return values

    def is_nested(self, column: str) -> bool:
        """Whether the source holds nested values (lists, objects) in ``column``.

        A JSON source's column of text that a reader could have converted (a
        value that starts like JSON) is checked against the lines.
        """
        import polars as pl

        dtype = self.frame.schema[column]
        if dtype.is_nested() or column in self.nested:
            return True
        if self.lines is None or dtype != pl.String:
            return False
        if not self.frame[column].str.contains(_JSON_LIKE).any():
            return False
        return any(isinstance(value, list | dict) for value in self.values(column))

    def types_exact(self, column: str) -> bool:
        """Whether ``frame[column]`` holds every value with its type as written (null
        padding of objects aside): what the vectorised readers of nested columns need.

        Arrow containers do (a column of one type); a pandas frame's nested columns
        are held only where they could be; a JSON source's nested column is checked
        by pyarrow's typed reader, which refuses a value of another type where polars
        would convert it.
        """
        if self.kind in UNIFYING or self.arrow_typed:
            return True
        if self.lines is None:
            return column not in self.nested or self.frame.schema[column].is_nested()
        from evalkit.io._arrow_check import arrow_agrees

        return arrow_agrees(self.lines.body, column, self.frame.schema[column])

    @cached_property
    def _padding(self) -> dict[str, list[bool]]:
        """Per nested column of a container that unifies rows: which rows carried padding."""
        if self.kind not in UNIFYING:
            return {}
        return {
            name: [strip_padding(value)[1] for value in self.frame[name].to_list()]
            for name, dtype in self.frame.schema.items()
            if dtype.is_nested()
        }

    @property
    def padded_rows(self) -> int:
        """Rows whose nested values carried null padding (a container that unifies rows),
        read here as absent; 0 for every other source."""
        if not self._padding:
            return 0
        return sum(any(flags) for flags in zip(*self._padding.values(), strict=True))

    @property
    def padded_columns(self) -> tuple[str, ...]:
        """The nested columns of a container that unifies rows where some row carried null
        padding: kept as the container holds them in :meth:`written_frame`, handed to a
        trainer as each row's own values (see ``SplitResult.to_datasets``)."""
        return tuple(name for name, flags in self._padding.items() if any(flags))

    @cached_property
    def json_text_columns(self) -> tuple[str, ...]:
        """The columns whose values the frame cannot hold as the source wrote them (objects
        whose keys differ by row, a value a reader converted to another type): written as
        JSON text. A container that unifies rows has none: its frame is its values."""
        if self.kind in UNIFYING:
            return ()
        changed = []
        for column in self.frame.columns:
            if column in self.nested:
                if not self.frame.schema[column].is_nested():
                    changed.append(column)
                continue
            if not self.is_nested(column):
                continue
            held = self.frame[column].to_list()
            written = self.values(column)
            if not all(same_value(a, b) for a, b in zip(written, held, strict=True)):
                changed.append(column)
        return tuple(changed)

    def exact_frame(self, rows: np.ndarray | None = None) -> pl.DataFrame:
        """:meth:`written_frame` with the padded columns too as each row's JSON text: every
        nested value as the source wrote it, for a consumer that would render the padding
        (a trainer). ``rows``: those rows, in that order."""
        import orjson
        import polars as pl

        frame = self.written_frame(rows)
        if not self.padded_columns:
            return frame
        chosen = rows if rows is not None else range(self.height)
        return frame.with_columns(
            pl.Series(
                column,
                [
                    orjson.dumps(values[row]).decode() if values[row] is not None else None
                    for row in chosen
                ],
                dtype=pl.String,
            )
            for column in self.padded_columns
            for values in [self.values(column)]
        )

    @cached_property
    def _written(self) -> pl.DataFrame:
        import orjson
        import polars as pl

        if not self.json_text_columns:
            return self.frame
        return self.frame.with_columns(
            pl.Series(
                column,
                [orjson.dumps(v).decode() if v is not None else None for v in self.values(column)],
                dtype=pl.String,
            )
            for column in self.json_text_columns
        )

    def written_frame(self, rows: np.ndarray | None = None) -> pl.DataFrame:
        """The frame with each :attr:`json_text_columns` column as each row's JSON text:
        what a Parquet or CSV file, a ``datasets.Dataset`` or a caller's frame gets, so that
        each row decodes to what the source wrote. ``rows``: those rows, in that order."""
        frame = self._written
        return frame[rows] if rows is not None else frame

    def jsonl(self, rows: Sequence[int] | np.ndarray) -> bytes:
        """``rows`` as JSON Lines: a JSON source's lines byte for byte (each ending with one
        newline), any other source's rows as the records it holds (no key added)."""
        import io

        import numpy as np

        if self.lines is not None:
            return self.lines.jsonl(rows)
        nested = [name for name, dtype in self.frame.schema.items() if dtype.is_nested()]
        if not nested and not self.nested:
            buffer = io.BytesIO()
            self.frame[np.asarray(rows, dtype=np.int64)].write_ndjson(buffer)
            return buffer.getvalue()
        import orjson

        columns = {name: self.values(name) for name in self.frame.columns}
        return b"".join(
            orjson.dumps({name: values[row] for name, values in columns.items()}) + b"\n"
            for row in rows
        )


def require_columns(frame: pl.DataFrame, columns: Sequence[str], source: str) -> None:
    """Raise :class:`UnknownColumn` naming the first missing column and those that exist."""
    present = frame.columns
    if not present and frame.height == 0 and columns:
        raise UnknownColumn(f"{source}: the file is empty (no rows, so no columns)")
    for column in columns:
        if column not in present:
            listing = ", ".join(present[:20]) + (" …" if len(present) > 20 else "")
            raise UnknownColumn(
                f"{source}: no column {column!r}; the columns are: {listing or '(none)'}"
            )


def read_table(
    value: Table | TableLike | Path,
    *,
    name: str = "data",
    fmt: str | None = None,
    columns: Sequence[str] | None = None,
    ids: Sequence[str] = (),
) -> Table:
    """The table ``value`` names (a path) or is (a frame), read once, its ids checked.

    ``name`` is the parameter it was given as (``gold``, ``data``): a frame is
    called ``<name> frame`` in errors. ``fmt`` overrides the file's extension.
    With ``columns``, a file's frame holds only those when all of them exist
    (faster), and every column otherwise, so that the caller can name the
    missing one beside those there are; a frame keeps all its columns.
    ``ids`` are checked as ids (text or whole numbers, as written).
    """
    if isinstance(value, Table):
        check_id_types(value.frame, ids, value.label)
        return value
    if is_path(value):
        return _read_path(Path(value), fmt, columns, ids)
    label = f"{name} frame"
    read = as_polars(value, label)
    check_id_types(read.frame, ids, label)
    return Table(read.frame, label, None, read.kind, nested=read.nested)


def _read_path(
    path: Path, fmt: str | None, columns: Sequence[str] | None, ids: Sequence[str]
) -> Table:
    from evalkit.io._columnar import read_csv_bytes, read_parquet_bytes
    from evalkit.io._jsonl import read_json_frame

    label = str(path)
    fmt = fmt or table_format(path)
    if fmt == "hf":
        import polars as pl

        from evalkit.io._hf import read_hf_dataset

        folder = read_hf_dataset(path)
        frame = pl.from_arrow(folder.table)
        assert isinstance(frame, pl.DataFrame)
        check_id_types(frame, ids, label)
        return Table(_only(frame, columns), label, path, "hf", digest=folder.sha256)
    if not path.exists() and not path.is_symlink():
        raise UnreadableFile(f"{path}: no such file")
    require_regular_file(path)
    data, digest = read_and_hash(path)
    if fmt == "parquet":
        frame = read_parquet_bytes(data, label, columns)
        check_id_types(frame, ids, label)
        return Table(frame, label, path, "parquet", digest=digest)
    if fmt == "csv":
        return Table(_only(read_csv_bytes(data, label), columns), label, path, "csv", digest=digest)
    lines = json_array_lines(data, label) if fmt == "json" else None
    kind: SourceKind = "json" if lines is not None else "jsonl"
    if lines is None:
        lines = json_lines(data, label)
    read = read_json_frame(lines, columns, ids)
    return Table(read.frame, label, path, kind, lines=lines, digest=digest, arrow_typed=read.arrow)


def _only(frame: pl.DataFrame, columns: Sequence[str] | None) -> pl.DataFrame:
    """``columns`` of ``frame`` when it has them all, else the whole frame."""
    if columns is None or any(name not in frame.columns for name in columns):
        return frame
    return frame.select(list(dict.fromkeys(columns)))
