"""One column of a table, read as text or as normalised conversations.

A column is a conversation column when its values are lists of messages:
nested values (JSON, Parquet, a frame), or text that is the JSON of a message
list in every non-empty row (a CSV or Parquet column written by a script that
dumped each conversation). Such a column is strict: one non-empty value that
is not the JSON of a message list, where the others are, is an error naming
its row, never a silent switch to plain text. Values the table's frame cannot
hold exactly (a JSON column that polars converted, tool-call arguments
written as objects, whose keys a frame merges across rows) are taken as the
source wrote them (:meth:`evalkit.io.Table.values`). A malformed conversation
is an :class:`~evalkit.errors.InvalidConversation` naming the file, the line
(or row) and the message.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from evalkit.chat.dialect import Kind, NormalizedColumn
from evalkit.chat.dialects import described_message_dialects, role_keys
from evalkit.chat.frame import BadRow, Unclean, normalize_column, normalize_values
from evalkit.chat.normalize import normalize_value
from evalkit.chat.values import ConversationProblem
from evalkit.errors import InvalidConversation, InvalidTable

if TYPE_CHECKING:
    import polars as pl

    from evalkit.io import Table


def problem_error(column: str, where: str, problem: ConversationProblem) -> InvalidConversation:
    """The one-line error for a malformed value of ``column`` at ``where``."""
    if problem.message is None:
        subject = "the conversation" if problem.item == "message" else "the value"
        return InvalidConversation(f"{where}: column {column!r}: {subject} {problem.reason}")
    return InvalidConversation(
        f"{where}: column {column!r}, {problem.item} {problem.message}: {problem.reason}"
    )


def _from_values(values: list[Any], column: str, locate: Callable[[int], str]) -> NormalizedColumn:
    """The reference path; errors name the row's location."""
    try:
        return normalize_values(values, column)
    except BadRow as bad:
        cause = bad.__cause__
        assert isinstance(cause, ConversationProblem)
        raise problem_error(column, locate(bad.row), cause) from None


def _from_series(series: pl.Series, column: str, locate: Callable[[int], str]) -> NormalizedColumn:
    """The vectorised path, falling back to the reference path for unusual types."""
    try:
        return normalize_column(series)
    except Unclean:
        return _from_values(series.to_list(), column, locate)
    except BadRow as bad:
        # The reference normaliser says why, in its own words; if it finds
        # nothing wrong with the row, trust it and take the reference path.
        try:
            normalize_value(series.slice(bad.row, 1).to_list()[0], bad.shape)
        except ConversationProblem as problem:
            raise problem_error(column, locate(bad.row), problem) from None
        return _from_values(series.to_list(), column, locate)


def _mixed_error(table: Table, column: str, values: list[Any]) -> InvalidConversation:
    first_text = next(i for i, v in enumerate(values) if isinstance(v, str))
    first_chat = next(i for i, v in enumerate(values) if isinstance(v, list | dict))
    later, other = max(first_text, first_chat), min(first_text, first_chat)
    here = "text" if isinstance(values[later], str) else "a conversation"
    there = "a conversation" if here == "text" else "text"
    return InvalidConversation(
        f"{table.where(later)}: column {column!r} holds {here} here but {there} at "
        f"{table.position(other)}; a text column holds one or the other in every row"
    )


def _read_written(table: Table, column: str) -> tuple[Kind, pl.Series | NormalizedColumn]:
    """A column whose frame values may differ from the source's, read as written.

    The conversations returned are exact; the frame's column need not be (see
    :attr:`evalkit.io.Table.json_text_columns`).
    """
    values = table.values(column)
    if not any(isinstance(value, list | dict) for value in values):
        return "text", table.frame[column]
    if any(isinstance(value, str) for value in values):
        raise _mixed_error(table, column, values)
    normalized = _from_values(values, column, table.where)
    return "conversation", replace(normalized, retyped=column in table.json_text_columns)


def object_arguments(dtype: Any) -> bool:
    """Whether a conversation type holds tool-call arguments written as objects.

    Their keys differ from call to call; a frame merges them (a missing key
    reads as null), so such values are read from the file as written.
    """
    import polars as pl

    if isinstance(dtype, pl.List | pl.Array):
        return object_arguments(dtype.inner)
    if not isinstance(dtype, pl.Struct):
        return False
    for item in dtype.fields:
        if item.name == "arguments" and item.dtype.is_nested():
            return True
        if object_arguments(item.dtype):
            return True
    return False


def json_conversations(
    series: pl.Series, column: str, locate: Callable[[int], str]
) -> list[Any] | None:
    """The values of a text column as conversations, when its non-empty values are the JSON
    text of lists of messages (objects with a message dialect's role key: ``role``,
    ``from``); None for a text column.

    A column of text never pays for the parse: it is text when no value starts
    like a JSON list. A column whose rows are mostly message lists and where
    another non-empty value is not (JSON cut short, a stray string) is an error
    naming that row: one malformed value never turns a conversation column into
    text. (A column whose rows are mostly other text is text, even where one
    value happens to be the JSON of a message list.) Each distinct text is
    parsed once.
    """
    import orjson

    present = series.drop_nulls()
    present = present.filter(present.str.strip_chars() != "")
    if not len(present) or not present.str.strip_chars_start().str.starts_with("[").any():
        return None
    keys = role_keys()
    parsed: dict[str, Any] = {}
    bad: dict[str, str] = {}
    for text in present.unique(maintain_order=True).to_list():
        try:
            value = orjson.loads(text)
        except orjson.JSONDecodeError as error:
            bad[text] = f"is not JSON ({str(error).split(':')[0]})"
            continue
        if not isinstance(value, list) or not all(
            isinstance(message, dict) and any(key in message for key in keys) for message in value
        ):
            bad[text] = "is not the JSON of a list of messages"
            continue
        parsed[text] = value
    if not any(parsed.values()):
        return None  # no message list at all ("[]" in every row is none): a text column
    rows_bad = int(series.is_in(list(bad)).sum()) if bad else 0
    rows_good = int(series.is_in([text for text, value in parsed.items() if value]).sum())
    if bad and rows_bad >= rows_good:
        return None  # mostly other text: a text column in which a value looks like a chat
    if bad:
        row = int(series.is_in(list(bad)).arg_true()[0])
        text = series[row]
        raise InvalidConversation(
            f"{locate(row)}: column {column!r}: the value {bad[text]}: {_short(text)}; the "
            "column's other values are conversations (JSON message lists): fix or remove "
            "this row"
        )
    return [
        parsed.get(text) if text is not None and text.strip() else None for text in series.to_list()
    ]


def _short(text: str, limit: int = 60) -> str:
    shown = text if len(text) <= limit else text[: limit - 1] + "…"
    return repr(shown)


def read_column(table: Table, column: str) -> tuple[Kind, pl.Series | NormalizedColumn]:
    """One column, as text or as conversations."""
    import polars as pl

    series = table.frame[column]
    dtype = series.dtype
    if dtype == pl.Null or isinstance(dtype, pl.Categorical | pl.Enum):
        # Null: a column null in every row, which string expressions refuse;
        # Categorical: text that Parquet (pandas' category dtype) stores as a dictionary.
        return "text", series.cast(pl.String)
    if dtype == pl.String:
        if table.is_nested(column):
            return _read_written(table, column)
        decoded = json_conversations(series, column, table.where)
        if decoded is None:
            return "text", series
        return "conversation", replace(_from_values(decoded, column, table.where), json_text=True)
    if isinstance(dtype, pl.List | pl.Array | pl.Struct):
        if object_arguments(dtype) or not table.types_exact(column):
            return _read_written(table, column)
        return "conversation", _from_series(series, column, table.where)
    raise InvalidTable(
        f"{table.label}: column {column!r} holds {dtype} values; a text option needs text, or "
        f"conversations (lists of {described_message_dialects()} messages)"
    )
