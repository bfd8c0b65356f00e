"""In-memory tables: polars, pandas and pyarrow frames, taken one way.

Every library entry that takes a table takes a frame too (see
:func:`evalkit.io.read_table`), with the same checks and errors as a file:

* a polars ``DataFrame`` is taken as it is (a ``LazyFrame`` is collected); a
  pandas ``DataFrame`` is converted by polars (``pl.from_pandas``: NaN, pandas'
  own missing value, becomes null; a *named* index becomes a column, as
  ``reset_index()`` would make it; an unnamed one is row labels and is left
  out); a pyarrow ``Table`` or ``RecordBatch`` by ``pl.from_arrow``;
  categorical columns become text, their values unchanged;
* id columns are checked as ids on every path (text or whole numbers).

An in-memory table has no file to hash, so its ``sha256`` is that of its
content as :func:`frame_sha256` serialises it, and what it produced records
``path: null`` with ``source: "frame"`` (see docs/formats.md). pandas and
pyarrow are never imported here: a value can only be their frame if its
library is loaded already.
"""

from __future__ import annotations

import hashlib
import os
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, TypeGuard

from evalkit.errors import InvalidTable, UsageError

if TYPE_CHECKING:
    import pandas as pd
    import polars as pl
    import pyarrow as pa

    Frame: TypeAlias = pl.DataFrame | pl.LazyFrame | pd.DataFrame | pa.Table | pa.RecordBatch
    """An in-memory table the library takes wherever it takes a table file."""
    TableLike: TypeAlias = str | os.PathLike[str] | Frame
    """A table file (or dataset folder), or an in-memory table."""

FRAME_SOURCE: Literal["frame"] = "frame"
"""The ``source`` recorded for a table that was a frame (files record none)."""
FRAME_HASH_VERSION = b"evalkit frame 1\x00"
EXPECTED = "a path, or a polars, pandas or pyarrow table"


def is_path(value: object) -> TypeGuard[str | os.PathLike[str]]:
    """Whether ``value`` names a file or folder (text or a path object)."""
    return isinstance(value, str | os.PathLike)


def is_frame(value: object) -> bool:
    """Whether ``value`` is an in-memory table the library takes (see the module docstring)."""
    import polars as pl

    if isinstance(value, pl.DataFrame | pl.LazyFrame):
        return True
    if _is_pandas(value):
        return True
    arrow = sys.modules.get("pyarrow")
    return arrow is not None and isinstance(value, arrow.Table | arrow.RecordBatch)


def _is_pandas(value: object) -> bool:
    pandas = sys.modules.get("pandas")
    return pandas is not None and isinstance(value, pandas.DataFrame)


@dataclass(frozen=True)
class FrameRead:
    """An in-memory table as a polars frame, with the values a conversion would change.

    ``nested`` holds, for a pandas frame, each column of dicts or lists as the
    frame's own Python values (pandas keeps each row's dict; converting them
    to Arrow merges the keys of every row's dict into one struct). Those
    columns are held in ``frame`` as Arrow could hold them exactly, or as
    each value's JSON text where it could not.
    """

    frame: pl.DataFrame
    kind: Literal["polars", "pandas", "arrow"]
    nested: dict[str, list[Any]]


def as_polars(value: object, label: str) -> FrameRead:
    """A frame of any kind the library takes, as polars, or a one-line error."""
    import polars as pl

    nested: dict[str, list[Any]] = {}
    kind: Literal["polars", "pandas", "arrow"] = "polars"
    if isinstance(value, pl.DataFrame):
        frame = value
    elif isinstance(value, pl.LazyFrame):
        try:
            frame = value.collect()
        except pl.exceptions.PolarsError as error:
            raise InvalidTable(
                f"{label}: the LazyFrame failed to collect: {_first(error)}"
            ) from error
    elif not is_frame(value):
        kind_name = type(value).__name__
        raise UsageError(f"{label.removesuffix(' frame')}: expected {EXPECTED}, got {kind_name}")
    elif _is_pandas(value):
        frame, nested, kind = *_from_pandas(value, label), "pandas"
    else:
        frame, kind = _from_arrow(value, label), "arrow"
    return FrameRead(_plain(frame, label), kind, nested)


def _first(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def _from_pandas(value: Any, label: str) -> tuple[pl.DataFrame, dict[str, list[Any]]]:
    import polars as pl

    names = list(value.columns)
    for column in names:
        if not isinstance(column, str):
            raise InvalidTable(
                f"{label}: column name {column!r} is not text; name the columns with text "
                "(e.g. df.columns = df.columns.astype(str))"
            )
    repeated = sorted({column for column in names if names.count(column) > 1})
    if repeated:
        raise InvalidTable(f"{label}: column {repeated[0]!r} appears twice; rename one of them")
    nested = {
        column: values
        for column in names
        if value[column].dtype == object
        for values in [[_plain_value(item) for item in value[column].tolist()]]
        if any(isinstance(item, dict | list) for item in values)
    }
    named_index = any(level is not None for level in value.index.names)
    try:
        frame = pl.from_pandas(value.drop(columns=list(nested)), include_index=named_index)
    except Exception as error:  # pyarrow's and polars' conversion errors have no common base
        where = next((f" column {c!r}:" for c in names if not _converts(value[[c]])), "")
        raise InvalidTable(
            f"{label}:{where} cannot convert the pandas frame: {_first(error)}; give each "
            "column one type (text, numbers, booleans, lists or dicts)"
        ) from error
    if nested:
        index_columns = [column for column in frame.columns if column not in names]
        held = [held_series(column, values) for column, values in nested.items()]
        frame = frame.with_columns(held).select(index_columns + names)
    return frame, nested


def _plain_value(item: Any) -> Any:
    """A pandas cell as the JSON value it stands for: NaN as null, numpy arrays as lists."""
    if isinstance(item, float) and item != item:
        return None
    if isinstance(item, dict):
        return {key: _plain_value(value) for key, value in item.items()}
    if isinstance(item, list | tuple):
        return [_plain_value(value) for value in item]
    tolist = getattr(item, "tolist", None)  # numpy arrays and scalars (datasets' to_pandas)
    if tolist is not None and type(item).__module__ == "numpy":
        return _plain_value(tolist())
    return item


def held_series(name: str, values: list[Any]) -> pl.Series:
    """``values`` as a column: nested when Arrow holds every value as written, else each
    value's JSON text (Arrow gives a column one type, so values whose keys or types differ
    from row to row would come back with other rows' keys as null, or converted)."""
    import orjson
    import polars as pl

    from evalkit.io._padding import same_value

    try:
        series = pl.Series(name, values, strict=True)
        if series.dtype != pl.Object and all(
            same_value(written, held)
            for written, held in zip(values, series.to_list(), strict=True)
        ):
            return series
    except Exception:
        pass
    return pl.Series(
        name,
        [orjson.dumps(value).decode() if value is not None else None for value in values],
        dtype=pl.String,
    )


def _converts(column: Any) -> bool:
    """Whether polars converts this one-column pandas frame (to name the column at fault)."""
    import polars as pl

    try:
        pl.from_pandas(column)
    except Exception:  # as above: any conversion error means no
        return False
    return True


def _from_arrow(value: Any, label: str) -> pl.DataFrame:
    import polars as pl

    try:
        frame = pl.from_arrow(value)
    except Exception as error:  # pyarrow's and polars' conversion errors have no common base
        raise InvalidTable(f"{label}: cannot convert the pyarrow table: {_first(error)}") from error
    assert isinstance(frame, pl.DataFrame)  # from_arrow gives a Series only for an Array
    return frame


def _plain(frame: pl.DataFrame, label: str) -> pl.DataFrame:
    """Categoricals as text (a file never gives one); Python objects refused."""
    import polars as pl

    for name, dtype in frame.schema.items():
        if dtype == pl.Object:
            raise InvalidTable(
                f"{label}: column {name!r} holds Python objects, which evalkit cannot read; "
                "convert them to text, numbers, lists or dicts"
            )
    categorical = [
        name for name, dtype in frame.schema.items() if isinstance(dtype, pl.Categorical | pl.Enum)
    ]
    if categorical:
        frame = frame.with_columns(pl.col(categorical).cast(pl.String))
    return frame


def frame_sha256(frame: pl.DataFrame) -> str:
    """sha256 of a frame's content: what an in-memory table records in place of a file hash.

    The bytes hashed are a canonical serialisation, the same however the frame
    was built (polars, pandas or Arrow, in one chunk or many, whatever a null
    slot holds in memory): ``evalkit frame 1\\0``, the row and column counts,
    then per column in order its name, its Arrow type, which values are null
    (a bit per row), and the values: numbers, booleans, dates and times as
    their little-endian fixed-width values (nulls as 0, every NaN as one
    NaN); text and binary as each value's byte length then the bytes; nested
    values (lists, structs) as polars' compact JSON of each value.
    """
    import numpy as np
    import polars as pl

    digest = hashlib.sha256(FRAME_HASH_VERSION)
    digest.update(frame.height.to_bytes(8, "little") + frame.width.to_bytes(8, "little"))
    for series in frame.get_columns():
        arrow_type = str(series.clear().to_arrow(compat_level=pl.CompatLevel.oldest()).type)
        digest.update(f"{series.name}\x00{arrow_type}\x00".encode())
        digest.update(np.packbits(series.is_not_null().to_numpy()).tobytes())
        digest.update(_value_bytes(series))
    return digest.hexdigest()


def _value_bytes(series: pl.Series) -> bytes:
    import numpy as np
    import polars as pl

    dtype = series.dtype
    if dtype == pl.Null:
        return b""
    if dtype == pl.Boolean:
        return np.packbits(series.fill_null(False).to_numpy()).tobytes()
    if dtype.is_float():
        values = series.fill_null(0.0).to_numpy()
        values = np.where(np.isnan(values), np.nan, values)  # one NaN, whatever its payload
        return values.astype(values.dtype.newbyteorder("<")).tobytes()
    if dtype.is_integer() or dtype.is_temporal():
        values = series.to_physical().fill_null(0).to_numpy()
        return values.astype(values.dtype.newbyteorder("<")).tobytes()
    column = pl.col(series.name)
    if dtype == pl.Binary:
        expression = column.bin.encode("hex")
    elif dtype.is_nested():
        expression = pl.struct(column.alias("v")).struct.json_encode()
    else:
        expression = column.cast(pl.String)  # text, decimals
    text = series.to_frame().select(expression.fill_null("").alias("t")).to_series()
    lengths = text.str.len_bytes().to_numpy().astype("<u4")
    return lengths.tobytes() + str(text.str.join("").item()).encode("utf-8")


SOURCE_DESCRIPTION = (
    '"frame" when the table was an in-memory frame (path is then null and '
    "sha256 that of the frame's content, see docs/formats.md); absent for a file."
)
"""What the ``source`` key means, in the JSON Schema of every output that has one."""


def _is_none(value: object) -> bool:
    return value is None


def source_field() -> Any:
    """The ``source`` key of an output's input block: ``"frame"`` for a frame, absent for a file.

    Left out of the JSON for files, so that what a file produces is unchanged.
    """
    from pydantic import Field

    return Field(default=None, **source_metadata())


def source_metadata() -> dict[str, Any]:
    """:func:`source_field` as the metadata of a dataclass field (pydantic reads it there).

    For the plain dataclasses of a format written without pydantic (the split
    manifest): its JSON Schema, built by pydantic, then says the same.
    """
    return {"exclude_if": _is_none, "description": SOURCE_DESCRIPTION}
