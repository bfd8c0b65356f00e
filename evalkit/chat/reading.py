"""One column of a frame, read as text or as normalised conversations.

A column is a conversation column when its values are lists of messages:
nested values (JSON, Parquet), or text that is the JSON of a message list in
every non-empty row (a CSV or Parquet column written by a script that dumped
each conversation). Values a frame cannot hold exactly (a JSONL column that
polars converted, tool-call arguments written as objects, whose keys polars
merges across rows) are read again from the file, value by value. A
malformed conversation is an :class:`~evalkit.errors.InvalidConversation`
naming the file, the line (or row) and the message.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from evalkit.chat.frame import (
    BadRow,
    NormalizedColumn,
    Unclean,
    normalize_column,
    normalize_values,
)
from evalkit.chat.normalize import normalize_value
from evalkit.chat.sources import arrow_agrees, exact_values, is_jsonl, line_of_row
from evalkit.chat.values import ConversationProblem
from evalkit.errors import InvalidConversation, InvalidTable

if TYPE_CHECKING:
    import polars as pl

Kind = Literal["text", "conversation"]
# A text value that may be a conversation polars turned into JSON text.
_JSON_LIKE = r"^\s*[\[{]"


@dataclass(frozen=True)
class Location:
    """How to name a row in an error: ``file:line`` for JSONL, ``source, row N`` otherwise."""

    source: str
    path: Path | None
    lines: list[int] | None = None

    def __call__(self, row: int) -> str:
        if self.lines is not None:
            return f"{self.path}:{self.lines[row]}"
        if is_jsonl(self.path):
            assert self.path is not None
            return f"{self.path}:{line_of_row(self.path, row)}"
        return f"{self.source}, row {row + 1}"


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


def _from_series(series: pl.Series, column: str, locate: Location) -> NormalizedColumn:
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


def _mixed_error(
    column: str, path: Path, values: list[Any], lines: list[int]
) -> InvalidConversation:
    first_text = next(i for i, v in enumerate(values) if isinstance(v, str))
    first_chat = next(i for i, v in enumerate(values) if isinstance(v, list | dict))
    later, other = max(first_text, first_chat), min(first_text, first_chat)
    here = "text" if isinstance(values[later], str) else "a conversation"
    there = "a conversation" if here == "text" else "text"
    return InvalidConversation(
        f"{path}:{lines[later]}: column {column!r} holds {here} here but {there} at line "
        f"{lines[other]}; a text column holds one or the other in every row"
    )


def _read_exact(
    frame: pl.DataFrame, column: str, path: Path
) -> tuple[Kind, pl.Series | NormalizedColumn]:
    """A JSONL column whose frame values may differ from the file's, read value by value.

    The conversations returned are exact; the frame's column is not (see
    ``ChatColumn.retyped``).
    """
    values, lines = exact_values(path, column)
    locate = Location(str(path), path, lines)
    chats = any(isinstance(value, list | dict) for value in values)
    if not chats:
        return "text", frame[column]
    if any(isinstance(value, str) for value in values):
        raise _mixed_error(column, path, values, lines)
    normalized = _from_values(values, column, locate)
    return "conversation", replace(normalized, retyped=True)


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


def json_conversations(series: pl.Series) -> list[Any] | None:
    """The values of a text column as conversations, when every non-empty one is the JSON
    text of a list of messages (objects with ``role`` or ``from``); else None.

    A column of text never pays for the parse: one value that does not start
    like a JSON list ends the check. Each distinct text is parsed once.
    """
    import orjson

    sample = series.head(64).drop_nulls().str.strip_chars_start()
    if not sample.filter(sample != "").str.starts_with("[").all():
        return None  # a text column: decided on its first values, without a pass over all
    present = series.drop_nulls()
    present = present.filter(present.str.strip_chars() != "")
    if not len(present) or not present.str.strip_chars_start().str.starts_with("[").all():
        return None
    parsed: dict[str, Any] = {}
    for text in present.unique().to_list():
        try:
            value = orjson.loads(text)
        except orjson.JSONDecodeError:
            return None
        if not isinstance(value, list) or not all(
            isinstance(message, dict) and ("role" in message or "from" in message)
            for message in value
        ):
            return None
        parsed[text] = value
    if not any(parsed.values()):
        return None  # "[]" in every row is no conversation
    return [parsed.get(text) if text is not None else None for text in series.to_list()]


def read_column(
    frame: pl.DataFrame, column: str, source: str, path: Path | None, exact: bool
) -> tuple[Kind, pl.Series | NormalizedColumn]:
    """One column, as text or as conversations."""
    import polars as pl

    series = frame[column]
    dtype = series.dtype
    locate = Location(source, path)
    jsonl = is_jsonl(path)
    if dtype == pl.Null or isinstance(dtype, pl.Categorical | pl.Enum):
        # Null: a column null in every row, which string expressions refuse;
        # Categorical: text that Parquet (pandas' category dtype) stores as a dictionary.
        return "text", series.cast(pl.String)
    if dtype == pl.String:
        if jsonl and not exact and series.str.contains(_JSON_LIKE).any():
            assert path is not None
            if not arrow_agrees(path, column, dtype):
                return _read_exact(frame, column, path)
        decoded = json_conversations(series)
        if decoded is None:
            return "text", series
        return "conversation", replace(_from_values(decoded, column, locate), json_text=True)
    if isinstance(dtype, pl.List | pl.Array | pl.Struct):
        if jsonl:
            assert path is not None
            if object_arguments(dtype) or not (exact or arrow_agrees(path, column, dtype)):
                return _read_exact(frame, column, path)
        return "conversation", _from_series(series, column, locate)
    raise InvalidTable(
        f"{source}: column {column!r} holds {dtype} values; a text option needs text, or "
        "conversations (lists of {role, content} or {from, value} messages)"
    )
