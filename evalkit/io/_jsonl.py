"""JSON sources (JSON Lines and ``.json`` arrays): the lines as read, and their frame.

A JSON source is kept as its bytes, one line per record (:class:`JsonLines`):
what evalkit writes back (``split --format jsonl``) are those lines, what it
reads row by row (a conversation, a tool schema) is parsed from them, and
what it hashes is them. A ``.json`` array becomes one line per element, so
the same data gives the same records either way.

The frame is read under :mod:`evalkit.io._json_rules` on the fastest path whose
verdict is the reference's: pyarrow for large files (it refuses keys given
twice and values of a type other than the column's, where polars would
convert), polars with the types of the first lines when that cannot differ
from whole-file inference (:mod:`evalkit.io._prefix`), or polars over every
line; the reference reader names the line at fault whenever one refuses.
Nested values in the frame are what a columnar reader makes of them (every
row's struct holds every row's keys); the rows' own values are
:meth:`JsonLines.records`.

A line is blank when it holds only whitespace (spaces, tabs, CR, and the
vertical tab and form feed Python counts as whitespace): it holds no record,
on every path.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

import evalkit.io._json_rules as rules
from evalkit.errors import InvalidTable, MalformedFile
from evalkit.io._documents import DocumentError, parse_json
from evalkit.io._files import UTF8_BOM
from evalkit.io._prefix import read_with_prefix_types

if TYPE_CHECKING:
    import polars as pl

# Flat JSONL up to this size is proven and read by polars, not pyarrow (:func:`_read_flat`).
FLAT_BYTES = 16 << 20
# Bytes that make a line blank (Python's bytes.strip() set, newline aside).
_BLANK = np.frombuffer(b" \t\r\x0b\x0c", dtype=np.uint8)
# Blank bytes that JSON readers do not take as whitespace.
_NOT_JSON_SPACE = (b"\x0b", b"\x0c")


@dataclass(frozen=True, eq=False)
class JsonLines:
    """A JSON source's records as lines of bytes, in order.

    The lines are found on first use (a reader that needs no row's own bytes,
    such as the pyarrow reader of a large file, never pays for it).
    """

    data: bytes
    """JSON Lines: the file's bytes (byte order mark removed), or for a ``.json`` array,
    one line per element; blank lines hold no record."""
    name: str
    """What errors call the source: the path as given."""
    array: bool = False
    """The source is a ``.json`` array: errors name its records, not lines."""
    _parsed: list[dict[str, Any]] | None = field(default=None, repr=False)

    @cached_property
    def _index(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(start, end, line number) of every record's line."""
        raw = np.frombuffer(self.data, dtype=np.uint8)
        newlines = np.flatnonzero(raw == 10)
        starts = np.concatenate(([0], newlines + 1)).astype(np.int64)
        ends = np.concatenate((newlines, [len(raw)])).astype(np.int64)
        # A line is blank when it holds only blank bytes. Almost every line starts with
        # a byte that is not blank ("{"), which settles it; the others are looked at whole.
        kept = ends > starts
        if len(raw):
            first = raw[np.minimum(starts, len(raw) - 1)]
            for line in np.flatnonzero(kept & np.isin(first, _BLANK)).tolist():
                kept[line] = bool(self.data[starts[line] : ends[line]].strip())
        numbers = np.flatnonzero(kept) + 1
        starts, ends = starts[kept], ends[kept]
        if len(ends):  # a CR before the newline belongs to the line end, not the record
            carriage = raw[np.maximum(ends - 1, 0)] == 13
            ends = ends - (carriage & (ends > starts))
        return starts, ends, numbers

    @property
    def numbers(self) -> np.ndarray:
        """Each record's line number (JSON Lines) or element number (``.json`` array), from 1."""
        return self._index[2]

    @cached_property
    def body(self) -> bytes:
        """The bytes the JSON readers parse: ``data``, or its records alone when a line of
        form feeds (blank here, but no JSON reader skips it) is among them."""
        if not any(blank in self.data for blank in _NOT_JSON_SPACE):
            return self.data
        return self.jsonl(range(len(self)))

    def __len__(self) -> int:
        return len(self._index[0])

    def line(self, row: int) -> bytes:
        """The record's line as written, without its line end."""
        starts, ends, _ = self._index
        return self.data[int(starts[row]) : int(ends[row])]

    def where(self, row: int) -> str:
        """``FILE:LINE`` (or ``FILE, record N`` for a ``.json`` array) of a 0-based row."""
        number = int(self.numbers[row])
        return f"{self.name}, record {number}" if self.array else f"{self.name}:{number}"

    def jsonl(self, rows: Sequence[int] | np.ndarray | range) -> bytes:
        """The lines of ``rows``, each ending with one ``\\n``: JSON Lines as read."""
        data = self.data
        starts, ends, _ = self._index
        return b"".join(data[starts[row] : ends[row]] + b"\n" for row in rows)

    def records(self) -> list[dict[str, Any]]:
        """Every record as JSON gives it: the keys each row has, nested values as written.

        The source was read under the rules already (a key given twice, NaN and
        deep nesting refused), so orjson gives exactly the reference reading;
        an integer too large for it (past 64 bits) is read by Python's json.
        """
        if self._parsed is not None:
            return self._parsed
        import json

        import orjson

        parsed: list[dict[str, Any]] = []
        for row in range(len(self)):
            line = self.line(row)
            try:
                parsed.append(orjson.loads(line))
            except orjson.JSONDecodeError:
                parsed.append(json.loads(line.decode("utf-8", "surrogateescape")))
        object.__setattr__(self, "_parsed", parsed)
        return parsed

    def column(self, name: str) -> list[Any]:
        """Every row's value of ``name`` as written (None where the row has no such key)."""
        return [record.get(name) for record in self.records()]


def json_lines(data: bytes, name: str, *, array: bool = False) -> JsonLines:
    """The records' lines of JSON Lines ``data`` (see the module for blank lines)."""
    return JsonLines(data.removeprefix(UTF8_BOM), name, array)


def json_array_lines(data: bytes, name: str) -> JsonLines | None:
    """A ``.json`` file's elements as lines when it holds a JSON array; None for JSON Lines.

    The array is parsed under the document rules (a key given twice, deep
    nesting refused); each element must be an object, and becomes one line.
    """
    if not data.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"["):
        return None
    try:
        document = parse_json(data, name)
    except DocumentError as error:
        raise MalformedFile(f"{error.message}; a .json table is a JSON array of objects") from error
    assert isinstance(document, list)
    for number, record in enumerate(document, start=1):
        if not isinstance(record, dict):
            raise InvalidTable(
                f"{name}: element {number} of the array is not a JSON object; a .json table "
                "is an array of objects (one per row) or JSON Lines"
            )
    import json

    import orjson

    encoded = []
    for record in document:
        try:
            encoded.append(orjson.dumps(record))
        except TypeError:  # an integer past 64 bits, a lone surrogate: Python's json writes it
            encoded.append(json.dumps(record, ensure_ascii=False).encode("utf-8", "surrogatepass"))
    body = b"\n".join(encoded) + (b"\n" if encoded else b"")
    lines = JsonLines(body, name, array=True)
    object.__setattr__(lines, "_parsed", document)
    return lines


@dataclass(frozen=True)
class JsonFrame:
    """The frame of a JSON source, and whether pyarrow built it (exact types throughout)."""

    frame: pl.DataFrame
    arrow: bool = False
    """pyarrow read every column: a value of another type than its column's was refused,
    so nested columns hold each value with its type as written (null padding aside)."""


def read_json_frame(
    lines: JsonLines, columns: Sequence[str] | None = None, ids: Sequence[str] = ()
) -> JsonFrame:
    """The records as a frame, on the fastest path whose verdict is the reference's."""
    import polars as pl

    data, name, array = lines.body, lines.name, lines.array
    if not data or data.isspace():
        return JsonFrame(pl.DataFrame())
    if len(data) > rules.REFERENCE_BYTES:
        read = _read_flat(data, columns, ids) or _read_by_arrow(data, columns, ids)
        if read is not None:
            return read
    try:
        fast = read_with_prefix_types(data, columns)
        if fast is not None:
            frame = fast.frame
            if fast.flat_lines is None or not _flat_verdict(fast.flat_lines, frame, ids):
                _check(data, name, frame, ids, array)
            return JsonFrame(frame)
        frame = _only(pl.read_ndjson(io.BytesIO(data), infer_schema_length=None), columns)
    except (pl.exceptions.PolarsError, OSError, ValueError) as error:
        # The reference reader names the line at fault; if it finds none,
        # polars only failed to unify the types of a column: read it alone.
        rules.check_records(data, name, ids, array=array, force_reference=True)
        if isinstance(error, pl.exceptions.SchemaError):
            frame = _only(_read_tolerant(lines), columns)
            check_id_types(frame, ids, name)
            return JsonFrame(frame)
        raise MalformedFile(f"{name}: cannot read as jsonl: {first_line(error)}") from error
    _check(data, name, frame, ids, array)
    return JsonFrame(frame)


def _only(frame: pl.DataFrame, columns: Sequence[str] | None) -> pl.DataFrame:
    """``columns`` of ``frame`` when it has them all, else the whole frame."""
    if columns is None or any(name not in frame.columns for name in columns):
        return frame
    return frame.select(list(dict.fromkeys(columns)))


def first_line(error: BaseException) -> str:
    """The first line of a library's error message (its own words, without the trace)."""
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def _read_flat(data: bytes, columns: Sequence[str] | None, ids: Sequence[str]) -> JsonFrame | None:
    """A file of up to ``FLAT_BYTES`` of flat lines read by polars, when the lines prove the
    rules (:func:`_flat_verdict`), as a smaller file is read; None: let pyarrow read it.

    For such a file pyarrow costs more than the check: importing it (with
    pyarrow.compute) took 0.1 s of CPU of a 0.6 s ``split`` of 100,000 items,
    whose 3.8 MB the check reads in 0.03 s. Only frames without nested columns
    are taken, which pyarrow's reader would type the same (every line's keys
    and scalar types proven); past ``FLAT_BYTES`` pyarrow's parse on every
    core wins.
    """
    if columns is not None or len(data) > FLAT_BYTES:
        return None
    import polars as pl

    try:
        fast = read_with_prefix_types(data)
    except (pl.exceptions.PolarsError, OSError, ValueError):
        return None
    if fast is None or fast.flat_lines is None:
        return None
    frame = fast.frame
    if any(dtype.is_nested() for dtype in frame.schema.values()):
        return None
    if not _flat_verdict(fast.flat_lines, frame, ids):
        return None
    return JsonFrame(frame)


def _read_by_arrow(
    data: bytes, columns: Sequence[str] | None, ids: Sequence[str]
) -> JsonFrame | None:
    """A large file parsed once by pyarrow, which proves the rules as it reads.

    When pyarrow vouches for the file (:func:`evalkit.io._json_rules.arrow_table`)
    and its ids, its table is the frame: pyarrow refuses a key given twice and
    a value whose type differs from its column's, so every column, nested ones
    included, holds the values with their types as written. None: pyarrow could
    not vouch (or polars cannot take one of its arrays); read the slow way.
    """
    import polars as pl
    import pyarrow as pa

    table = rules.arrow_table(data)
    if table is None or not rules.arrow_ids_are_text(table, ids):
        return None
    wanted = list(dict.fromkeys(columns)) if columns is not None else table.column_names
    if not all(name in table.column_names for name in wanted):
        wanted = table.column_names  # the caller names the missing column
    try:
        frame = pl.from_arrow(table.select(wanted))
    except (pl.exceptions.PolarsError, pa.ArrowException):
        # polars refuses some arrays pyarrow builds (a null message beside real
        # ones: "offsets must not exceed the values length").
        return None
    assert isinstance(frame, pl.DataFrame)
    return JsonFrame(frame, arrow=True)


def _check(data: bytes, name: str, frame: pl.DataFrame, ids: Sequence[str], array: bool) -> None:
    """The rules over the whole file, then the id columns' types as polars read them."""
    rules.check_records(data, name, ids, array=array)
    check_id_types(frame, ids, name)


def _flat_verdict(lines: pl.Series, frame: pl.DataFrame, ids: Sequence[str]) -> bool:
    """Whether lines already known to be flat objects of plain keys break no rule.

    Such a line's keys are written ``"key":`` (nothing between the quote and
    the colon; no escapes), and inside a JSON string a quote is always
    escaped, so counting ``"key":`` counts that key's occurrences. An id in a
    text column may still hold a number or a boolean, which polars converted:
    its line is found by the reference reader.
    """
    import re

    import polars as pl

    if lines.str.contains(r"\\u[dD][89a-fA-F]").any():
        return False  # a surrogate escape: the reference reader checks it is a pair
    keys = frame.columns
    if keys:
        counts = pl.max_horizontal(
            [pl.col("line").str.count_matches(f'"{key}":', literal=True) for key in keys]
        )
        if lines.to_frame("line").select(counts.max()).item() > 1:
            return False
    for column in ids:
        if column not in frame.columns:
            continue
        dtype = frame.schema[column]
        if dtype == pl.String:
            pattern = f'"{re.escape(column)}":[ \\t\\r]*[-0-9tf\\[{{]'
            if lines.str.contains(pattern).any():
                return False
        elif not (dtype.is_integer() or dtype == pl.Null):
            return False
    return True


def _read_tolerant(lines: JsonLines) -> pl.DataFrame:
    """Records whose column types polars cannot unify (an object in one row, a list in
    another): each column gets the type polars infers for it alone, and a column it
    cannot type at all is JSON text, so that the command that needs the column can say
    which line holds what (e.g. ``evalkit.chat``)."""
    import orjson
    import polars as pl

    records = lines.records()
    names = list(dict.fromkeys(key for record in records for key in record))
    schema: dict[str, pl.DataType] = {}
    for name in names:
        one = b"\n".join(orjson.dumps({name: record.get(name)}) for record in records)
        try:
            schema[name] = pl.read_ndjson(io.BytesIO(one), infer_schema_length=None).schema[name]
        except pl.exceptions.PolarsError:
            schema[name] = pl.String()
    return pl.read_ndjson(io.BytesIO(lines.body), schema=schema)


def check_id_types(frame: pl.DataFrame, ids: Sequence[str], source: str) -> None:
    """Refuse an id column whose values are neither text nor whole numbers, naming the row."""
    import polars as pl

    for column in ids:
        if column not in frame.columns:
            continue  # the caller names the missing column
        dtype = frame.schema[column]
        if dtype in (pl.String, pl.Null) or dtype.is_integer():
            continue
        present = frame[column].is_not_null()
        row = int(present.arg_true()[0]) + 1 if present.any() else 1
        value = frame[column][row - 1]
        raise InvalidTable(
            f"{source}, row {row}: id {column!r} is {value!r} ({dtype}); an id must be text "
            "or a whole number"
        )


def id_strings(frame: pl.DataFrame, column: str, source: str) -> pl.Series:
    """The id column as text, as written (integers as their decimal text)."""
    import polars as pl

    check_id_types(frame, [column], source)
    return frame[column].cast(pl.String)
