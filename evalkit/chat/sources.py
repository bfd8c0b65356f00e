"""Where a conversation column's values come from, read exactly when it matters.

polars infers one type per JSON column and, when rows disagree, quietly
turns the values into JSON text: a column mixing text and conversations
reads as strings, and content that is a string in some messages and a list
of parts in others reads as the parts' JSON text. That would change what
evalkit compares and counts without a word. So for a JSONL file the column
polars read is checked against pyarrow's JSON reader, which refuses a value
of another type instead of converting it; only when the two disagree is the
column read again value by value (orjson), which is exact and names the line.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalkit.io import UTF8_BOM

if TYPE_CHECKING:
    import polars as pl

JSONL_SUFFIXES = (".jsonl", ".ndjson")
# pyarrow reads JSON in blocks and fails on a line longer than a block; a
# failure only sends the column to the exact reader, but large blocks keep
# long conversations on the fast path.
ARROW_BLOCK_BYTES = 64 << 20


def is_jsonl(path: Path | None) -> bool:
    """Whether ``path`` is a JSONL file (whose column types polars may have coerced)."""
    return path is not None and path.suffix.lower() in JSONL_SUFFIXES


def _records(path: Path) -> Iterator[tuple[int, bytes]]:
    """(1-based line number, bytes) of every non-blank line, as polars counts rows."""
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            line = raw.removeprefix(UTF8_BOM) if number == 1 else raw
            if line.strip():
                yield number, line


def jsonl_lines(path: Path) -> list[bytes]:
    """Every row of a JSONL file as written (no byte order mark, one newline), in row order."""
    return [line.rstrip(b"\r\n") + b"\n" for _, line in _records(path)]


def line_of_row(path: Path, row: int) -> int:
    """The line number of the 0-based ``row`` of a JSONL file (blank lines hold no row)."""
    for index, (number, _) in enumerate(_records(path)):
        if index == row:
            return number
    return row + 1


def exact_values(path: Path, column: str) -> tuple[list[Any], list[int]]:
    """Every row's value of ``column`` as JSON gives it, and each row's line number."""
    values, lines = exact_columns(path, [column])
    return values[column], lines


def exact_columns(path: Path, columns: Sequence[str]) -> tuple[dict[str, list[Any]], list[int]]:
    """Every row's values of ``columns`` as JSON gives them (one pass), and the line numbers.

    polars and pyarrow give a nested column one type, whose structs hold the
    keys of every row (a missing key reads as null, tool schemas of different
    rows merge); JSON gives each value as written.
    """
    import orjson

    values: dict[str, list[Any]] = {column: [] for column in columns}
    lines: list[int] = []
    for number, line in _records(path):
        record = orjson.loads(line)  # read_table already proved every line parses
        for column in columns:
            values[column].append(record.get(column) if isinstance(record, dict) else None)
        lines.append(number)
    return values, lines


def _json_arrow_type(arrow_type: Any) -> Any:
    """The same type with 32-bit offsets: pyarrow's JSON reader knows no large or view types."""
    import pyarrow as pa

    if pa.types.is_large_string(arrow_type) or pa.types.is_string_view(arrow_type):
        return pa.string()
    if pa.types.is_large_list(arrow_type) or pa.types.is_list(arrow_type):
        return pa.list_(_json_arrow_type(arrow_type.value_type))
    if pa.types.is_struct(arrow_type):
        return pa.struct(
            [pa.field(field.name, _json_arrow_type(field.type)) for field in arrow_type]
        )
    return arrow_type


def arrow_agrees(path: Path, column: str, dtype: pl.DataType) -> bool:
    """Whether every value of ``column`` in the JSONL file has the type polars inferred.

    pyarrow's reader, given that type, fails on any value of another type
    (where polars would have converted it); any failure counts as disagreement.
    """
    import polars as pl
    import pyarrow as pa
    import pyarrow.json as pajson

    from evalkit.jsonl import arrow_safe

    if not arrow_safe(path.read_bytes()):  # nesting deep enough to crash pyarrow's parser
        return False
    arrow_type = _json_arrow_type(pl.Series("probe", [], dtype=dtype).to_arrow().type)
    options = pajson.ParseOptions(
        explicit_schema=pa.schema([(column, arrow_type)]), unexpected_field_behavior="ignore"
    )
    try:
        pajson.read_json(
            path,
            read_options=pajson.ReadOptions(block_size=ARROW_BLOCK_BYTES),
            parse_options=options,
        )
    except (pa.ArrowException, OSError, ValueError):
        return False
    return True


def read_jsonl_exact(path: Path) -> pl.DataFrame | None:
    """The JSONL file read with pyarrow's reader, whose types are exact; None if it refuses.

    pyarrow fails where polars would convert (a field that is text in one
    row and a list in another), and on what it cannot read at all (a byte
    order mark, a line longer than a block, invalid JSON); polars fails to
    take some of its arrays (a null message in a list of messages): the caller then
    reads the file with :func:`evalkit.io.read_table`, which says what is
    wrong. pyarrow also reads ISO-8601 strings as timestamps, which polars
    keeps as text; such a file is refused too, so that no value reads
    differently on one path than on the other.
    """
    import polars as pl
    import pyarrow as pa

    from evalkit.jsonl import arrow_table

    try:
        data = path.read_bytes()
    except OSError:
        return None
    if data.startswith(UTF8_BOM):
        return None
    # pyarrow's reading, refused where it is not exactly JSON's (keys given
    # twice, deep nesting, NaN, integers past 64 bits, ISO strings as times).
    table = arrow_table(data)
    if table is None:
        return None
    try:
        frame = pl.from_arrow(table)
    except (pl.exceptions.PolarsError, pa.ArrowException):
        # polars refuses some arrays pyarrow builds (a null message beside real
        # ones: "offsets must not exceed the values length"); read_table reads them.
        return None
    assert isinstance(frame, pl.DataFrame)
    return frame
