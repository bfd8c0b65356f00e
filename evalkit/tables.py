"""Reading a table, one way for every command: :func:`read_table`.

JSON Lines, CSV, Parquet, a ``.json`` file (array or JSON Lines) and a
Hugging Face ``save_to_disk`` folder all arrive here and leave as one polars
frame, under the same rules:

* what the file says is what is read: CSV fields are text unless every
  value of the column reads back exactly as written (``00008`` stays
  ``00008``, ``1.50`` stays ``1.50``; ``8`` and ``1.5`` become numbers);
* JSON Lines follow :mod:`evalkit.jsonl` on every path (keys given twice,
  nesting, NaN refused; ids as written), whether polars read the file with
  the types of its first lines, with the types of every line, or column by
  column;
* ``ids`` names the id columns: their values must be text or whole numbers,
  and an error names the file and line (or row) of the first that is not;
* only regular files are read: a FIFO or a device is refused with one line
  (opening a FIFO with no writer blocks forever).
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from evalkit import containers, jsonl
from evalkit.documents import read_bytes, require_regular_file
from evalkit.errors import InvalidTable, MalformedFile, UnreadableFile
from evalkit.fast_jsonl import read_with_prefix_types

if TYPE_CHECKING:
    import polars as pl

UTF8_BOM = jsonl.UTF8_BOM


def read_table(
    path: Path,
    fmt: str | None = None,
    *,
    columns: Sequence[str] | None = None,
    ids: Sequence[str] = (),
) -> pl.DataFrame:
    """Read a table (see the module docstring) into a polars frame.

    Types are those of the whole file, not a prefix. With ``columns``, the
    frame holds only those when all of them exist (faster), and every column
    otherwise, so that the caller can name the missing one beside those
    there are. ``ids`` are checked as ids (:func:`evalkit.jsonl.id_text`).
    """
    from evalkit.io import table_format

    fmt = fmt or table_format(path)
    if fmt == "hf":
        frame = containers.read_hf_dataset(path)
        check_id_types(frame, ids, str(path))
        return _only(frame, columns)
    _check_readable(path)
    if fmt == "parquet":
        frame = _read_parquet(path, columns)
        check_id_types(frame, ids, str(path))
        return frame
    if fmt == "csv":
        return _only(read_csv_as_written(path), columns)
    data = read_bytes(path)
    if fmt == "json":
        records = containers.json_records(data, str(path))
        if records is not None:
            return read_jsonl_bytes(
                containers.records_as_jsonl(records), str(path), columns, ids, array=True
            )
    return read_jsonl_bytes(data, str(path), columns, ids)


def _check_readable(path: Path) -> None:
    import os

    if not path.exists():
        raise UnreadableFile(f"{path}: no such file")
    if path.is_dir():
        raise UnreadableFile(f"{path}: is a folder, expected a file")
    require_regular_file(path)
    if not os.access(path, os.R_OK):
        raise UnreadableFile(f"{path}: permission denied")


def _only(frame: pl.DataFrame, columns: Sequence[str] | None) -> pl.DataFrame:
    """``columns`` of ``frame`` when it has them all, else the whole frame."""
    if columns is None or any(name not in frame.columns for name in columns):
        return frame
    return frame.select(list(dict.fromkeys(columns)))


def _read_parquet(path: Path, columns: Sequence[str] | None) -> pl.DataFrame:
    """A Parquet file, only ``columns`` when its schema has them all."""
    import polars as pl

    try:
        if columns is not None:
            try:
                present = pl.read_parquet_schema(path)
            except (pl.exceptions.PolarsError, OSError):
                present = {}  # the whole read below reports the problem
            if all(name in present for name in columns):
                return pl.read_parquet(path, columns=list(dict.fromkeys(columns)))
        return pl.read_parquet(path)
    except (pl.exceptions.PolarsError, OSError, ValueError) as error:
        raise MalformedFile(f"{path}: cannot read as parquet: {_first_line(error)}") from error


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def read_csv_as_written(path: Path) -> pl.DataFrame:
    """A CSV file whose columns are text unless every value reads back exactly as written.

    polars' type inference reads ``00008`` as 8, ``1.50`` as 1.5 and ``+1``
    as 1, which changes ids and any value written back. Here a column
    becomes integers, floats or booleans only when casting each value and
    printing it again gives the same text; otherwise it stays text.
    """
    import polars as pl

    try:
        frame = pl.read_csv(path, infer_schema=False)
    except (pl.exceptions.PolarsError, OSError, ValueError) as error:
        raise MalformedFile(f"{path}: cannot read as csv: {_first_line(error)}") from error
    typed = [_as_written(frame[name]) for name in frame.columns]
    return pl.DataFrame(typed) if typed else frame


def _as_written(column: pl.Series) -> pl.Series:
    import polars as pl

    values = column.drop_nulls()
    if values.len() == 0:
        return column
    if values.is_in(["true", "false"]).all():
        return column == "true"
    for dtype in (pl.Int64, pl.Float64):
        cast = column.cast(dtype, strict=False)
        if cast.null_count() != column.null_count():
            continue
        if bool((cast.cast(pl.String) == column).fill_null(True).all()):
            return cast
    return column


def read_jsonl_bytes(
    data: bytes,
    name: str,
    columns: Sequence[str] | None = None,
    ids: Sequence[str] = (),
    *,
    array: bool = False,
) -> pl.DataFrame:
    """JSON Lines as a frame, on the fastest path whose verdict is the reference's."""
    import polars as pl

    body = data.removeprefix(UTF8_BOM)
    if not body.strip():
        return pl.DataFrame()
    if len(data) > jsonl.REFERENCE_BYTES:
        read = _read_by_arrow(data, columns, ids)
        if read is not None:
            return read
    try:
        fast = read_with_prefix_types(body, columns)
        if fast is not None:
            frame = fast.frame
            if fast.flat_lines is None or not _flat_verdict(fast.flat_lines, frame, ids):
                _check(data, name, frame, ids, array)
            return frame
        frame = _only(pl.read_ndjson(io.BytesIO(body), infer_schema_length=None), columns)
    except (pl.exceptions.PolarsError, OSError, ValueError) as error:
        # The reference reader names the line at fault; if it finds none,
        # polars only failed to unify the types of a column: read it alone.
        jsonl.check_records(data, name, ids, array=array, force_reference=True)
        if isinstance(error, pl.exceptions.SchemaError):
            frame = _only(_read_ndjson_tolerant(body), columns)
            check_id_types(frame, ids, name)
            return frame
        raise MalformedFile(f"{name}: cannot read as jsonl: {_first_line(error)}") from error
    _check(data, name, frame, ids, array)
    return frame


def _read_by_arrow(
    data: bytes, columns: Sequence[str] | None, ids: Sequence[str]
) -> pl.DataFrame | None:
    """A large file parsed once by pyarrow, which proves the rules as it reads.

    When pyarrow vouches for the file (:func:`evalkit.jsonl.arrow_table`) and
    its ids, the wanted columns are taken from its table if they hold plain
    values (text, numbers, booleans: read exactly as polars reads them), and
    from polars' own reading otherwise (nested values, where the two libraries
    build different types). None: pyarrow could not vouch; read the slow way.
    """
    import polars as pl
    import pyarrow as pa

    table = jsonl.arrow_table(data)
    if table is None or not jsonl.arrow_ids_are_text(table, ids):
        return None
    wanted = list(dict.fromkeys(columns)) if columns is not None else table.column_names
    if not all(name in table.column_names for name in wanted):
        wanted = table.column_names  # the caller names the missing column
    plain = (pa.types.is_string, pa.types.is_integer, pa.types.is_floating, pa.types.is_boolean,
             pa.types.is_null)  # fmt: skip
    if all(any(test(table.schema.field(name).type) for test in plain) for name in wanted):
        frame = pl.from_arrow(table.select(wanted))
        assert isinstance(frame, pl.DataFrame)
        return frame
    body = data.removeprefix(UTF8_BOM)
    fast = read_with_prefix_types(body, columns)
    if fast is not None:
        return fast.frame
    return _only(pl.read_ndjson(io.BytesIO(body), infer_schema_length=None), columns)


def _check(data: bytes, name: str, frame: pl.DataFrame, ids: Sequence[str], array: bool) -> None:
    """The rules over the whole file, then the id columns' types as polars read them."""
    jsonl.check_records(data, name, ids, array=array)
    check_id_types(frame, ids, name)


def _flat_verdict(lines: pl.Series, frame: pl.DataFrame, ids: Sequence[str]) -> bool:
    """Whether lines already known to be flat objects of plain keys break no rule.

    Such a line's keys are written ``"key":`` (nothing between the quote and
    the colon; no escapes), and inside a JSON string a quote is always
    escaped, so counting ``"key":`` counts that key's occurrences. An id in a
    text column may still hold a number or a boolean, which polars converted:
    its line is found by the reference reader.
    """
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
            pattern = f'"{_regex_key(column)}":[ \\t\\r]*[-0-9tf\\[{{]'
            if lines.str.contains(pattern).any():
                return False
        elif not (dtype.is_integer() or dtype == pl.Null):
            return False
    return True


def _regex_key(key: str) -> str:
    import re

    return re.escape(key)


def _read_ndjson_tolerant(body: bytes) -> pl.DataFrame:
    """Read a JSONL file whose column types polars cannot unify (an object in one row,
    a list in another): each column gets the type polars infers for it alone, and a
    column it cannot type at all is read as JSON text, so that the command that
    needs the column can say which line holds what (e.g. ``evalkit.chat``)."""
    import orjson
    import polars as pl

    records = [orjson.loads(line) for _, line in jsonl.iter_lines(body)]
    names = list(dict.fromkeys(key for record in records for key in record))
    schema: dict[str, pl.DataType] = {}
    for name in names:
        lines = b"\n".join(orjson.dumps({name: record.get(name)}) for record in records)
        try:
            schema[name] = pl.read_ndjson(io.BytesIO(lines), infer_schema_length=None).schema[name]
        except pl.exceptions.PolarsError:
            schema[name] = pl.String()
    return pl.read_ndjson(io.BytesIO(body), schema=schema)


def ids_are_text(frame: pl.DataFrame, ids: Sequence[str]) -> bool:
    """Whether every id column present holds text or whole numbers (or nothing)."""
    import polars as pl

    return all(
        frame.schema[column] in (pl.String, pl.Null) or frame.schema[column].is_integer()
        for column in ids
        if column in frame.columns
    )


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
