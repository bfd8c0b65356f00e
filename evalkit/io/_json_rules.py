"""JSON Lines as evalkit reads it: one definition, its reference reader, and the fast checks.

A JSONL file is read by several paths (polars' reader with the types of the
first lines, polars over every line, pyarrow's reader, and the line-by-line
reader for files the fast ones cannot take), and a verdict must never depend
on which one ran. So the rules live here, once, and
:func:`reference_records` is their definition:

* a byte order mark before the first line is ignored; blank lines (spaces,
  tabs, a CR) hold no record; CRLF line ends are fine;
* every other line is one JSON object (NaN and Infinity are not JSON);
* a key given twice in one object, at any depth, is an error naming the line
  (JSON readers disagree on which value wins: polars keeps the first, orjson
  and Python the last, so a record with ``"output": GOOD, "output": "x"``
  scored differently on each path);
* objects and arrays nest at most :data:`~evalkit.io.MAX_DEPTH` levels;
* an id is text as written: a string, or a JSON integer as its decimal
  text; a number with a fraction or an exponent (``1.0``), a boolean, an
  object or an array is an error naming the line (``1.0`` is not the id
  ``1``, and no reader may decide that it is).

The fast checks (:func:`check_records`) prove the same verdict cheaply or
hand the file to the reference reader, which then names the line at fault.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from evalkit.errors import InvalidTable, MalformedFile
from evalkit.io._documents import MAX_DEPTH, RepeatedKey, nesting_depth, unique_object
from evalkit.io._files import UTF8_BOM

if TYPE_CHECKING:
    import pyarrow as pa


# Below this size the reference reader is cheaper than importing pyarrow.
REFERENCE_BYTES = 2 << 20
# pyarrow's JSON parser recurses without a bound and crashes the process on
# nesting of some thousands of levels; a line is given to it only when it
# cannot be that deep: shorter than this, or with fewer brackets.
ARROW_SAFE_LINE_BYTES = 4_096
ARROW_SAFE_BRACKETS = 1_000
_SCAN_BLOCK = 1 << 20  # bytes per block of the line scan


class _FloatText(float):
    """A JSON number written with a fraction or an exponent, keeping its text."""

    text: str

    def __new__(cls, text: str) -> _FloatText:
        value = super().__new__(cls, text)
        if value in (float("inf"), float("-inf")):
            raise ValueError(f"the number {text} is too large for a 64-bit float")
        value.text = text
        return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_record(line: bytes | str, where: str, *, lenient_unicode: bool = False) -> dict[str, Any]:
    """One JSONL line under the rules above (``where`` is ``FILE:LINE`` for errors).

    ``line`` may be text with surrogate escapes (a prediction's output that
    is not UTF-8 is scored as invalid, not refused); with ``lenient_unicode``
    so may the strings it holds (a lone ``\ud800`` escape). Otherwise such a
    string is an error.
    """
    try:
        value = json.loads(
            line,
            object_pairs_hook=unique_object,
            parse_float=_FloatText,
            parse_constant=_no_constant,
        )
    except RepeatedKey as repeated:
        raise MalformedFile(
            f"{where}: key {repeated.args[0]!r} is given twice in one record; keep one"
        ) from None
    except RecursionError:
        raise MalformedFile(f"{where}: nested deeper than {MAX_DEPTH} levels") from None
    except json.JSONDecodeError as error:
        raise MalformedFile(
            f"{where}: not a JSON object ({error.msg}); fix or remove the line"
        ) from None
    except (ValueError, UnicodeDecodeError) as error:
        raise MalformedFile(
            f"{where}: not a JSON object ({error}); fix or remove the line"
        ) from None
    if not isinstance(value, dict):
        raise MalformedFile(
            f"{where}: not a JSON object (found a JSON {_json_type(value)}); fix or remove the line"
        )
    if nesting_depth(value) > MAX_DEPTH:
        raise MalformedFile(f"{where}: nested deeper than {MAX_DEPTH} levels")
    if not lenient_unicode and _SURROGATE_ESCAPE.search(line if isinstance(line, str) else ""):
        _refuse_lone_surrogates(value, where)
    return value


# An escape of a UTF-16 surrogate: \ud800-\udfff (a pair is one character, a lone one none).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _refuse_lone_surrogates(value: Any, where: str) -> None:
    """A string with a lone surrogate is not Unicode text: refuse it, naming the line.

    (polars reads such an escape as U+0000 without a word; no value may read
    differently on one path than on another.)
    """
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                raise MalformedFile(
                    f"{where}: a string holds a lone surrogate escape (such as \\ud800), "
                    "which is not Unicode text; fix the line"
                ) from None


def _json_type(value: Any) -> str:
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if value is None:
        return "null"
    return "number"


def iter_lines(data: bytes) -> Iterator[tuple[int, bytes]]:
    """(1-based line number, line) of every line that holds a record (not blank)."""
    for number, raw in enumerate(data.split(b"\n"), start=1):
        line = raw.removeprefix(UTF8_BOM) if number == 1 else raw
        if line.strip():
            yield number, line


def reference_records(
    data: bytes, name: str, *, lenient_utf8: bool = False, array: bool = False
) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, record) of every record: the definition of reading a JSONL file.

    With ``lenient_utf8``, bytes that are not UTF-8 are kept as surrogate
    escapes (a model's broken output is scored, not fatal); otherwise they
    are an error naming the line. ``array``: the lines are the elements of a
    ``.json`` file's array, named "record N" in errors.
    """
    for number, line in iter_lines(data):
        where = f"{name}, record {number}" if array else f"{name}:{number}"
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as error:
            if not lenient_utf8:
                raise MalformedFile(
                    f"{where}: not UTF-8 text (byte {error.start}); save the file as UTF-8"
                ) from None
            text = line.decode("utf-8", errors="surrogateescape")
        yield number, parse_record(text, where, lenient_unicode=lenient_utf8)


def id_text(value: Any, column: str, where: str) -> str | None:
    """An id as text, as written: a string, or a JSON integer's decimal text; None if absent.

    Anything else is an error naming ``where``: a float would match an id
    only by a reader's choice of how to print it, a boolean or nested value
    is no id at all.
    """
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        shown = "true" if value else "false"
        raise InvalidTable(
            f"{where}: id {column!r} is {shown}, a boolean; an id must be text or a whole number"
        )
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        shown = value.text if isinstance(value, _FloatText) else repr(value)
        raise InvalidTable(
            f"{where}: id {column!r} is written {shown}, a number with a fraction or exponent; "
            f"write ids as text or whole numbers (the id {shown} is not the id "
            f"{_whole(value)})"
        )
    kind = "an object" if isinstance(value, dict) else "an array"
    raise InvalidTable(f"{where}: id {column!r} is {kind}; an id must be text or a whole number")


def _whole(value: float) -> str:
    return str(int(value)) if value == value and abs(value) < 1e300 and value.is_integer() else "…"


def check_records(
    data: bytes,
    name: str,
    id_columns: Sequence[str] = (),
    *,
    array: bool = False,
    force_reference: bool = False,
) -> None:
    """Every rule above over the whole file, by the cheapest sure path; raise at a breach.

    A small file is read by the reference reader. A larger one is parsed by
    pyarrow, whose reader refuses a key given twice at any depth and a value
    whose type differs from the column's (where polars would convert it);
    when pyarrow takes the file and every id column holds only text or
    integers, the rules hold. Whatever pyarrow refuses or cannot decide goes
    to the reference reader, which names the line.
    """
    if not force_reference and len(data) > REFERENCE_BYTES and _arrow_vouches(data, id_columns):
        return
    for number, record in reference_records(data, name, array=array):
        where = f"{name}, record {number}" if array else f"{name}:{number}"
        for column in id_columns:
            id_text(record.get(column), column, where)


def _arrow_vouches(data: bytes, id_columns: Sequence[str]) -> bool:
    table = arrow_table(data)
    return table is not None and arrow_ids_are_text(table, id_columns)


def arrow_ids_are_text(table: pa.Table, id_columns: Sequence[str]) -> bool:
    """Whether each id column pyarrow read holds only text or integers (or nothing)."""
    import pyarrow as pa

    for column in id_columns:
        if column in table.column_names:
            kind = table.schema.field(column).type
            if not (
                pa.types.is_string(kind) or pa.types.is_integer(kind) or pa.types.is_null(kind)
            ):
                return False
    return True


def has_record_bytes(data: bytes) -> bool:
    """Whether ``data`` holds anything but whitespace: ``bool(data.strip())`` without the
    copy of the whole file that ``strip`` makes (70 MB of predictions, read twice)."""
    return bool(data) and not data.isspace()


def arrow_safe(data: bytes) -> bool:
    """Whether no line of ``data`` could nest deeply enough to crash pyarrow's parser."""
    return _longest_safe_line(data) is not None


def _longest_safe_line(data: bytes) -> int | None:
    """The length of the longest line, or None when a line might nest too deeply for pyarrow."""
    import numpy as np

    raw = np.frombuffer(data, dtype=np.uint8)
    # A block at a time: one comparison over a 70 MB file made a 70 MB mask in fresh
    # pages, 0.15-0.2 s of CPU per file, where 1 MB blocks take 0.04 s.
    found = [
        np.flatnonzero(raw[first : first + _SCAN_BLOCK] == 10) + first
        for first in range(0, len(raw), _SCAN_BLOCK)
    ]
    ends = np.concatenate(found) if found else np.zeros(0, dtype=np.int64)
    starts = np.r_[0, ends + 1]
    lengths = np.r_[ends, len(data)] - starts
    for index in np.flatnonzero(lengths > ARROW_SAFE_LINE_BYTES).tolist():
        line = data[int(starts[index]) : int(starts[index] + lengths[index])]
        if line.count(b"[") + line.count(b"{") > ARROW_SAFE_BRACKETS:
            return None
    return int(lengths.max()) if len(lengths) else 0


def arrow_table(data: bytes) -> pa.Table | None:
    """The file parsed by pyarrow when that reading is exactly the reference's, else None.

    pyarrow refuses repeated keys and mixed types itself; on top, a table is
    refused when it holds what the reference reads differently: timestamps
    (pyarrow types ISO-8601 strings as times), NaN or infinities (not JSON),
    an integer too large for 64 bits (pyarrow makes it a float), or nesting
    past the limit.
    """
    longest = _longest_safe_line(data) if has_record_bytes(data) else None
    if longest is None:
        return None
    import pyarrow as pa
    import pyarrow.json as pajson

    # Blocks of 1 MB are parsed on every core; a line must fit in one block.
    block = max(1 << 20, 2 * longest + 2)
    try:
        table = pajson.read_json(
            pa.BufferReader(data.removeprefix(UTF8_BOM)),
            read_options=pajson.ReadOptions(block_size=block),
        )
        table.validate(full=True)  # UTF-8: pyarrow's parser takes invalid bytes as they are
    except (pa.ArrowException, OSError, ValueError):
        return None
    if any(not _exact(table.column(i), field.type, 1) for i, field in enumerate(table.schema)):
        return None
    return table


def _exact(column: Any, kind: Any, depth: int) -> bool:
    """Whether a column's values read the same as the reference reads them."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if depth >= MAX_DEPTH or pa.types.is_temporal(kind):
        return False
    if pa.types.is_floating(kind):
        if len(column) == 0 or column.null_count == len(column):
            return True
        # NaN/Infinity; or an integer past 2**53, which pyarrow turned into a float.
        if pc.any(pc.invert(pc.is_finite(column))).as_py():
            return False
        largest = pc.max(pc.abs(column)).as_py()
        return largest is None or largest < 2.0**53
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return _exact(pc.list_flatten(column), kind.value_type, depth + 1)
    if pa.types.is_struct(kind):
        chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
        for index in range(kind.num_fields):
            field = kind.field(index)
            values = pa.chunked_array([chunk.field(index) for chunk in chunks], type=field.type)
            if not _exact(values, field.type, depth + 1):
                return False
    return True
