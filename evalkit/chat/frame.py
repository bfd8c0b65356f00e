"""Normalising a whole polars column of conversations at once.

:func:`normalize_column` is the fast path of :func:`evalkit.chat.read_chat`:
a column of ``List(Struct)`` values is exploded into one row per message,
checked and mapped with polars expressions (:mod:`evalkit.chat.frame_fields`),
and put back together by row, so 200k conversations cost a few
vectorised passes instead of a Python loop over a million messages. It covers
the column types that JSON and Parquet files of chat data produce (role/from
and text as strings; content as a string or a list of ``{type, text}`` parts;
tool calls whose arguments are text, as the API writes them; ``weight`` and
``training`` flags). Anything else (arguments written as objects, a
dialect's call turns such as ShareGPT's ``function_call``) raises
:class:`Unclean` and the caller falls back to the reference normaliser
(:mod:`evalkit.chat.normalize`), value by value.
Whatever path runs, a malformed conversation is reported with the reference
normaliser's own words (:class:`BadRow` only says which row).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from evalkit.chat.dialect import NormalizedColumn
from evalkit.chat.dialects import default_message_dialect, message_dialect, message_dialects
from evalkit.chat.dtypes import CONTENT, ROLE, call_dtype, conversation_dtype
from evalkit.chat.frame_fields import (
    Unclean,
    call_columns,
    check_types,
    content_columns,
    field,
    flag_columns,
    struct_fields,
)
from evalkit.chat.normalize import ConversationProblem, Normalized, normalize_value

if TYPE_CHECKING:
    import polars as pl

__all__ = [
    "BadRow",
    "NormalizedColumn",
    "Unclean",
    "call_dtype",
    "conversation_dtype",
    "normalize_column",
    "normalize_values",
]


MESSAGE_FIELDS = (ROLE, CONTENT, "tool_calls", "tool_call_id", "name", "train", "reasoning")


class BadRow(Exception):
    """The first row (0-based) whose conversation is malformed, and the column's dialect."""

    def __init__(self, row: int, shape: str | None) -> None:
        super().__init__(row)
        self.row = row
        self.shape = shape


def _message_fields(series: pl.Series) -> dict[str, Any]:
    """The struct fields of a conversation column; :class:`Unclean` for other types."""
    import polars as pl

    dtype = series.dtype
    if not (isinstance(dtype, pl.List) and isinstance(dtype.inner, pl.Struct)):
        raise Unclean
    fields = struct_fields(dtype.inner)
    check_types(fields)
    return fields


def _answer_problems(messages: pl.DataFrame) -> pl.Series:
    """Rows with a tool message that answers no earlier call: one whose ``tool_call_id`` no
    earlier call has, or one that comes before any call at all.

    ``messages`` has one row per message: ``row``, ``index`` (in its
    conversation), ``role``, ``tool_call_id`` and the normalised ``tool_calls``.
    """
    import polars as pl

    tools = (
        messages.filter(pl.col(ROLE) == "tool")
        .group_by("row")
        .agg(pl.col("index").min().alias("first_tool"))
    )
    first_call = (
        messages.filter(pl.col("tool_calls").list.len().fill_null(0) > 0)
        .group_by("row")
        .agg(pl.col("index").min().alias("first_call"))
    )
    unanswered = (
        tools.join(first_call, on="row", how="left")
        .filter(pl.col("first_call").is_null() | (pl.col("first_call") > pl.col("first_tool")))[
            "row"
        ]
        .cast(pl.Int64)
    )

    answers = messages.filter(
        (pl.col(ROLE) == "tool") & pl.col("tool_call_id").is_not_null()
    ).select("row", "index", pl.col("tool_call_id").alias("id"))
    if not answers.height:
        return unanswered
    calls = (
        messages.select(
            "row", "index", pl.col("tool_calls").list.eval(pl.element().struct.field("id"))
        )
        .explode("tool_calls")
        .drop_nulls("tool_calls")
        .group_by("row", pl.col("tool_calls").alias("id"))
        .agg(pl.col("index").min().alias("called"))
    )
    joined = answers.join(calls, on=["row", "id"], how="left")
    late = pl.col("called").is_null() | (pl.col("called") >= pl.col("index"))
    return pl.concat([unanswered, joined.filter(late)["row"].cast(pl.Int64)])


def normalize_column(series: pl.Series) -> NormalizedColumn:
    """Normalise a ``List(Struct)`` column; :class:`BadRow` names the first malformed row."""
    import numpy as np
    import polars as pl

    fields = _message_fields(series)
    lengths = series.list.len()
    empty = series.is_null() | (lengths == 0).fill_null(True)
    first_empty = int(empty.arg_true()[0]) if empty.any() else None
    frame = pl.DataFrame({"row": np.arange(len(series)), "message": series})
    messages = frame.filter(~empty).explode("message")
    missing_message = messages["message"].is_null()
    # Each message's index in its conversation, from the list lengths (a window over the
    # rows costs thirty times as much).
    counts = lengths.filter(~empty).to_numpy().astype(np.int64)
    starts = np.cumsum(counts) - counts
    index = np.arange(int(counts.sum()), dtype=np.int64) - np.repeat(starts, counts)
    messages = messages.unnest("message").with_columns(
        null_message=missing_message, index=pl.Series("index", index)
    )
    # Each message's dialect: the first whose role key it has (as recognise_message).
    found: Any = None
    for each in message_dialects():
        has_key = field(fields, each.role_key).is_not_null()
        found = (pl.when(has_key) if found is None else found.when(has_key)).then(pl.lit(each.name))
    first_found = messages.head(1).select(found).item() if messages.height else None
    dialect = message_dialect(first_found) if first_found else default_message_dialect()
    shape = dialect.name
    name = field(fields, dialect.role_key)
    turns = list(dialect.call_turns)
    if turns and messages.select(name.is_in(turns).any()).item():
        raise Unclean  # a call written as JSON text in the value: parsed value by value
    mapped = name.replace_strict(dict(dialect.roles), default=None, return_dtype=pl.String)
    text, content_problem, skipped = content_columns(fields, dialect.content_key)
    calls, call_problem = call_columns(fields, mapped)
    train, flag_problem = flag_columns(fields, mapped)
    problem = (
        pl.col("null_message")
        | found.is_null()
        | (found != shape).fill_null(True)
        | mapped.is_null()
        | content_problem
        | call_problem
        | flag_problem
    )
    checked = messages.select(
        pl.col("row"),
        pl.col("index"),
        problem.alias("problem"),
        mapped.alias(ROLE),
        text.alias(CONTENT),
        calls.alias("tool_calls"),
        field(fields, "tool_call_id").alias("tool_call_id"),
        field(fields, "name").alias("name"),
        train.alias("train"),
        pl.lit(None, pl.String).alias("reasoning"),
        skipped.alias("skipped"),
    )
    bad = pl.concat(
        [checked.filter(pl.col("problem"))["row"].cast(pl.Int64), _answer_problems(checked)]
    ).to_numpy()
    candidates = [
        row for row in (first_empty, int(bad.min()) if len(bad) else None) if row is not None
    ]
    if candidates:
        raise BadRow(min(candidates), shape if first_found is not None else None)
    skipped_total = int(checked["skipped"].sum())
    # Every row has messages here (an empty one was reported above) and ``row`` ascends,
    # so grouping the sorted rows gives back one list per row, in order; polars slices
    # sorted groups without hashing (a third of the cost of a round trip through Arrow).
    conversations = (
        checked.set_sorted("row")
        .group_by("row", maintain_order=True)
        .agg(pl.struct(*MESSAGE_FIELDS).alias(series.name))[series.name]
        .cast(conversation_dtype())
    )
    return NormalizedColumn(conversations, skipped_total, shape)


def normalize_values(values: Sequence[Any], name: str = "") -> NormalizedColumn:
    """The reference path over Python values; a :class:`BadRow` carries the problem.

    Raises ``BadRow`` (with the row) chained from the :class:`ConversationProblem`.
    """
    import polars as pl

    shape: str | None = None
    rows: list[list[dict[str, Any]]] = []
    skipped = 0
    for row, value in enumerate(values):
        try:
            normalized: Normalized = normalize_value(value, shape)
        except ConversationProblem as problem:
            raise BadRow(row, shape) from problem
        shape = normalized.shape
        rows.append([message.row() for message in normalized.messages])
        skipped += normalized.skipped_parts
    series = pl.Series(name, rows, dtype=conversation_dtype())
    return NormalizedColumn(series, skipped, shape or default_message_dialect().name)
