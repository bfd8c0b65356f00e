"""CSV and Parquet files, read from the bytes that are hashed.

* CSV fields are text unless every value of the column reads back exactly as
  written (``00008`` stays ``00008``, ``1.50`` stays ``1.50``; ``8`` and
  ``1.5`` become numbers), so that ids and values written back are the file's.
* Parquet is read by polars, whole (only ``columns`` when asked and present).
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import TYPE_CHECKING

from evalkit.errors import MalformedFile
from evalkit.io._jsonl import first_line

if TYPE_CHECKING:
    import polars as pl


def read_parquet_bytes(data: bytes, name: str, columns: Sequence[str] | None) -> pl.DataFrame:
    """A Parquet file's table, only ``columns`` when its schema has them all."""
    import polars as pl

    try:
        if columns is not None:
            try:
                present = pl.read_parquet_schema(io.BytesIO(data))
            except (pl.exceptions.PolarsError, OSError):
                present = {}  # the whole read below reports the problem
            if all(column in present for column in columns):
                return pl.read_parquet(io.BytesIO(data), columns=list(dict.fromkeys(columns)))
        return pl.read_parquet(io.BytesIO(data))
    except (pl.exceptions.PolarsError, OSError, ValueError) as error:
        raise MalformedFile(f"{name}: cannot read as parquet: {first_line(error)}") from error


def read_csv_bytes(data: bytes, name: str) -> pl.DataFrame:
    """A CSV file whose columns are text unless every value reads back exactly as written.

    polars' type inference reads ``00008`` as 8, ``1.50`` as 1.5 and ``+1``
    as 1, which changes ids and any value written back. Here a column
    becomes integers, floats or booleans only when casting each value and
    printing it again gives the same text; otherwise it stays text.
    """
    import polars as pl

    try:
        frame = pl.read_csv(io.BytesIO(data), infer_schema=False)
    except (pl.exceptions.PolarsError, OSError, ValueError) as error:
        raise MalformedFile(f"{name}: cannot read as csv: {first_line(error)}") from error
    typed = [_as_written(frame[column]) for column in frame.columns]
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
