"""Normalising a whole polars column of conversations at once.

:func:`normalize_column` is the fast path of :func:`evalkit.chat.read_chat`:
a column of ``List(Struct)`` values is exploded into one row per message,
checked and mapped with polars expressions, and put back together from its
list offsets, so 200k conversations cost a few vectorised passes instead of
a Python loop over a million messages. It covers the column types that JSON
and Parquet files of chat data produce (role/from and text as strings;
content as a string or a list of ``{type, text}`` parts). Anything else
raises :class:`Unclean` and the caller falls back to the reference
normaliser (:mod:`evalkit.chat.normalize`), value by value. Whatever path
runs, a malformed conversation is reported with the reference normaliser's
own words (:class:`BadRow` only says which row).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evalkit.chat.normalize import (
    SHAPE_KEYS,
    SHAPE_ROLES,
    ConversationProblem,
    Normalized,
    Shape,
    normalize_value,
)

if TYPE_CHECKING:
    import polars as pl

ROLE, CONTENT = "role", "content"


class Unclean(Exception):
    """The column's type is outside what the vectorised path handles."""


class BadRow(Exception):
    """The first row (0-based) whose conversation is malformed, and the column's shape."""

    def __init__(self, row: int, shape: Shape | None) -> None:
        super().__init__(row)
        self.row = row
        self.shape = shape


@dataclass(frozen=True)
class NormalizedColumn:
    """A column of conversations in evalkit's form."""

    conversations: pl.Series
    """``List(Struct({role: String, content: String}))``, one list per row."""
    skipped_parts: int
    """Content parts that are not text (images, audio), over the whole column."""
    shape: Shape
    """How the column wrote its messages."""
    retyped: bool = False
    """Read value by value because the frame's column had converted values."""


def conversation_dtype() -> pl.DataType:
    """The polars type of a normalised conversation."""
    import polars as pl

    return pl.List(pl.Struct({ROLE: pl.String, CONTENT: pl.String}))


def _is_text(dtype: Any) -> bool:
    import polars as pl

    return dtype in (pl.String, pl.Null)


def _parts_fields(dtype: Any) -> dict[str, Any] | None:
    """The fields of a ``List(Struct)`` content type whose type/text are text, else None."""
    import polars as pl

    if isinstance(dtype, pl.List) and dtype.inner == pl.Null:
        return {}  # only empty lists (or null parts, which are reported)
    if not (isinstance(dtype, pl.List) and isinstance(dtype.inner, pl.Struct)):
        return None
    fields = {field.name: field.dtype for field in dtype.inner.fields}
    if not all(_is_text(fields[key]) for key in ("type", "text") if key in fields):
        return None
    return fields


def _message_fields(series: pl.Series) -> dict[str, Any]:
    """The struct fields of a conversation column; :class:`Unclean` for other types."""
    import polars as pl

    dtype = series.dtype
    if not (isinstance(dtype, pl.List) and isinstance(dtype.inner, pl.Struct)):
        raise Unclean
    fields = {field.name: field.dtype for field in dtype.inner.fields}
    if not all(_is_text(fields[key]) for key in ("role", "from") if key in fields):
        raise Unclean
    for key in ("content", "value"):
        if key in fields and not (_is_text(fields[key]) or _parts_fields(fields[key]) is not None):
            raise Unclean
    if "tool_calls" in fields and not isinstance(fields["tool_calls"], pl.List | pl.Null):
        raise Unclean
    return fields


def _field(fields: dict[str, Any], name: str, dtype: Any = None) -> pl.Expr:
    import polars as pl

    if name not in fields:
        return pl.lit(None, dtype=dtype or pl.String)
    if fields[name] == pl.Null:
        # A field null in every row is typed Null, which string expressions
        # (replace_strict of the role names, say) refuse: read it as text.
        return pl.col(name).cast(dtype or pl.String)
    return pl.col(name)


def _content_columns(fields: dict[str, Any], key: str) -> tuple[pl.Expr, pl.Expr, pl.Expr]:
    """(text, problem, skipped parts) expressions for the content field ``key``."""
    import polars as pl

    tool_calls = pl.col("tool_calls")
    calls = (
        (tool_calls.list.len() > 0).fill_null(False)
        if isinstance(fields.get("tool_calls"), pl.List)
        else pl.lit(False)
    )
    content = _field(fields, key)
    missing = content.is_null() & ~calls
    parts = _parts_fields(fields[key]) if key in fields else None
    if parts is None:
        return content.fill_null(""), missing, pl.lit(0, dtype=pl.Int64)
    element = pl.element()
    part_type = element.struct.field("type") if "type" in parts else pl.lit(None, pl.String)
    # A field null in every row is typed Null, which list.join refuses: cast to text.
    part_text = (
        element.struct.field("text").cast(pl.String) if "text" in parts else pl.lit(None, pl.String)
    )
    is_text = (part_type == "text").fill_null(False)
    text = (
        content.list.eval(part_text.filter(is_text & element.is_not_null()))
        .list.join("")
        .fill_null("")
    )
    bad_part = element.is_null() | (is_text & part_text.is_null())
    problem = missing | content.list.eval(bad_part).list.any().fill_null(False)
    skipped = content.list.eval((~is_text & element.is_not_null()).cast(pl.Int64)).list.sum()
    return text, problem, skipped.fill_null(0)


def _arrow_offsets(offsets: Any) -> Any:
    """List offsets as an Arrow array, built through polars: ``pyarrow.array`` of Python
    or numpy values imports pandas (over a second of start-up) to look for its types."""
    import polars as pl

    return pl.Series("offsets", offsets, dtype=pl.Int64).to_arrow()


def normalize_column(series: pl.Series) -> NormalizedColumn:
    """Normalise a ``List(Struct)`` column; :class:`BadRow` names the first malformed row."""
    import numpy as np
    import polars as pl
    import pyarrow as pa

    fields = _message_fields(series)
    lengths = series.list.len()
    empty = series.is_null() | (lengths == 0).fill_null(True)
    first_empty = int(empty.arg_true()[0]) if empty.any() else None
    frame = pl.DataFrame({"row": np.arange(len(series)), "message": series})
    messages = frame.filter(~empty).explode("message")
    missing_message = messages["message"].is_null()
    messages = messages.unnest("message").with_columns(null_message=missing_message)
    role, sender = _field(fields, "role"), _field(fields, "from")
    found = (
        pl.when(role.is_not_null())
        .then(pl.lit("messages"))
        .when(sender.is_not_null())
        .then(pl.lit("sharegpt"))
    )
    first_found = messages.head(1).select(found).item() if messages.height else None
    shape: Shape = "sharegpt" if first_found == "sharegpt" else "messages"
    name = role if shape == "messages" else sender
    mapped = name.replace_strict(SHAPE_ROLES[shape], default=None, return_dtype=pl.String)
    text, content_problem, skipped = _content_columns(fields, SHAPE_KEYS[shape][1])
    problem = (
        pl.col("null_message")
        | found.is_null()
        | (found != shape).fill_null(True)
        | mapped.is_null()
        | content_problem
    )
    checked = messages.select(
        pl.col("row"),
        problem.alias("problem"),
        mapped.alias(ROLE),
        text.alias(CONTENT),
        skipped.alias("skipped"),
    )
    bad = checked.filter(pl.col("problem"))["row"].to_numpy()
    candidates = [
        row for row in (first_empty, int(bad.min()) if len(bad) else None) if row is not None
    ]
    if candidates:
        raise BadRow(min(candidates), shape if first_found is not None else None)
    skipped_total = int(checked["skipped"].sum())
    structs = checked.select(pl.struct(ROLE, CONTENT)).to_series().to_arrow()
    if isinstance(structs, pa.ChunkedArray):
        structs = structs.combine_chunks()
    offsets = np.concatenate([[0], np.cumsum(lengths.to_numpy())]).astype(np.int64)
    lists = pa.LargeListArray.from_arrays(_arrow_offsets(offsets), structs)
    conversations = pl.Series(series.name, lists).cast(conversation_dtype())
    return NormalizedColumn(conversations, skipped_total, shape)


def normalize_values(values: Sequence[Any], name: str = "") -> NormalizedColumn:
    """The reference path over Python values; a :class:`BadRow` carries the problem.

    Raises ``BadRow`` (with the row) chained from the :class:`ConversationProblem`.
    """
    import numpy as np
    import polars as pl
    import pyarrow as pa

    shape: Shape | None = None
    roles: list[str] = []
    contents: list[str] = []
    offsets = [0]
    skipped = 0
    for row, value in enumerate(values):
        try:
            normalized: Normalized = normalize_value(value, shape)
        except ConversationProblem as problem:
            raise BadRow(row, shape) from problem
        shape = normalized.shape
        for role, content in normalized.messages:
            roles.append(role)
            contents.append(content)
        offsets.append(len(roles))
        skipped += normalized.skipped_parts
    structs = (
        pl.DataFrame({ROLE: roles, CONTENT: contents}, schema={ROLE: pl.String, CONTENT: pl.String})
        .to_struct("message")
        .to_arrow()
    )
    lists = pa.LargeListArray.from_arrays(_arrow_offsets(np.asarray(offsets, np.int64)), structs)
    series = pl.Series(name, lists).cast(conversation_dtype())
    return NormalizedColumn(series, skipped, shape or "messages")
