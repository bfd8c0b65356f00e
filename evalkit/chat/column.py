"""A text option's column(s), read as text or as normalised conversations.

Every command that takes ``--text COL`` reads it through :func:`read_chat`,
which recognises the shape from the values (a text column, role/content
messages, ShareGPT from/value messages; two columns for TRL's
prompt-completion form), validates every conversation, and returns a
:class:`ChatColumn` that renders what each command needs: the text compared
for duplicates (chosen roles), lengths (every turn), the inference prompts
and the reference answers. No other package parses messages.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from evalkit.chat.frame import (
    BadRow,
    NormalizedColumn,
    Unclean,
    normalize_column,
    normalize_values,
)
from evalkit.chat.normalize import ConversationProblem, normalize_value
from evalkit.chat.roles import DEFAULT_COMPARED_ROLES, ROLES, Role
from evalkit.chat.sources import arrow_agrees, exact_values, is_jsonl, line_of_row
from evalkit.errors import InvalidConversation, InvalidTable, UsageError
from evalkit.io import require_columns

if TYPE_CHECKING:
    import polars as pl

Kind = Literal["text", "conversation"]
ColumnShape = Literal["text", "messages", "sharegpt"]
TURN_SEPARATOR = "\n"
# A text value that may be a conversation polars turned into JSON text.
_JSON_LIKE = r"^\s*[\[{]"


@dataclass(frozen=True)
class ChatColumn:
    """The value(s) of ``--text`` for every row: text, or a normalised conversation."""

    columns: tuple[str, ...]
    """The columns read: one, or (prompt, completion)."""
    kind: Kind
    """``text`` (plain strings) or ``conversation`` (lists of messages)."""
    shape: ColumnShape
    """How the (first) column is written: ``text``, ``messages`` or ``sharegpt``."""
    texts: tuple[pl.Series, ...]
    """``kind == "text"``: one String series per column."""
    conversations: pl.Series | None
    """``kind == "conversation"``: ``List(Struct{role, content})``, the columns joined."""
    prompt_turns: pl.Series | None
    """Two conversation columns: how many messages of each row come from the first."""
    skipped_parts: int
    """Non-text content parts (images, audio) that were skipped."""
    retyped: bool = False
    """A column of the frame holds values polars converted (read exactly from the file
    instead): the conversations here are right, but writing the frame out would not be."""

    @property
    def is_conversation(self) -> bool:
        """Whether the rows are conversations (not plain text)."""
        return self.kind == "conversation"

    @property
    def paired(self) -> bool:
        """Whether two columns (prompt, completion) were joined."""
        return len(self.columns) == 2

    def __len__(self) -> int:
        return len(self.conversations) if self.conversations is not None else len(self.texts[0])

    def compared_text(self, roles: Sequence[Role] = DEFAULT_COMPARED_ROLES) -> pl.Series:
        """The text compared for duplicates: the contents of the ``roles`` turns, joined.

        Plain text is compared whole (``roles`` apply to conversations only); a
        conversation with no turn of those roles compares as empty text.
        """
        import polars as pl

        if self.conversations is None:
            return _joined_texts(self.texts)
        element = pl.element()
        chosen = element.struct.field("role").is_in(list(roles))
        return (
            self.conversations.list.eval(element.filter(chosen).struct.field("content"))
            .list.join(TURN_SEPARATOR)
            .alias("text")
        )

    def roles_present(self) -> set[str]:
        """The roles of every turn of every conversation (empty for text)."""
        import polars as pl

        if self.conversations is None:
            return set()
        roles = self.conversations.list.eval(pl.element().struct.field("role")).explode()
        return {role for role in roles.unique().to_list() if role is not None}

    def full_text(self) -> pl.Series:
        """Every turn's content joined (the text of the whole example)."""
        import polars as pl

        if self.conversations is None:
            return _joined_texts(self.texts)
        return (
            self.conversations.list.eval(pl.element().struct.field("content"))
            .list.join(TURN_SEPARATOR)
            .alias("text")
        )

    def char_lengths(self) -> pl.Series:
        """Characters per row: of every turn's content (null for a null text)."""
        import polars as pl

        if self.conversations is None:
            lengths = [text.str.len_chars().cast(pl.Int64) for text in self.texts]
            if len(lengths) == 1:
                return lengths[0].alias("length")
            both_null = self.texts[0].is_null() & self.texts[1].is_null()
            total = lengths[0].fill_null(0) + lengths[1].fill_null(0)
            return pl.select(pl.when(pl.lit(both_null)).then(None).otherwise(total)).to_series()
        return (
            self.conversations.list.eval(pl.element().struct.field("content").str.len_chars())
            .list.sum()
            .cast(pl.Int64)
            .alias("length")
        )

    def messages(self) -> list[list[dict[str, str]]]:
        """The conversations as Python lists of ``{role, content}`` (for chat templates)."""
        if self.conversations is None:
            raise UsageError(f"column {self.columns[0]!r} holds text, not conversations")
        return self.conversations.to_list()

    def _last_assistant(self) -> tuple[pl.Expr, pl.Expr]:
        """(has an assistant turn, index of the last one) as expressions over ``c``."""
        import polars as pl

        is_assistant = pl.col("c").list.eval(pl.element().struct.field("role") == "assistant")
        last = pl.col("c").list.len() - 1 - is_assistant.list.reverse().list.arg_max()
        return is_assistant.list.any(), last

    def prompts(self) -> pl.Series:
        """Each conversation without its reference answer (the inference input).

        The messages before the last assistant turn; a conversation with no
        assistant turn is a prompt already and is kept whole. For two columns
        (prompt and completion) the prompt is the first column's messages.
        """
        import polars as pl

        if self.conversations is None:
            raise UsageError(f"column {self.columns[0]!r} holds text, not conversations")
        frame = pl.DataFrame({"c": self.conversations})
        if self.prompt_turns is not None:
            frame = frame.with_columns(self.prompt_turns.alias("n"))
            return frame.select(pl.col("c").list.head(pl.col("n")).alias("messages")).to_series()
        has, last = self._last_assistant()
        prompt = pl.when(has).then(pl.col("c").list.slice(0, last)).otherwise(pl.col("c"))
        return frame.select(prompt.alias("messages")).to_series()

    def reference_answers(self) -> pl.Series:
        """The content of each conversation's last assistant turn (null when there is none)."""
        import polars as pl

        if self.conversations is None:
            raise UsageError(f"column {self.columns[0]!r} holds text, not conversations")
        has, last = self._last_assistant()
        frame = pl.DataFrame({"c": self.conversations})
        answer = pl.when(has).then(pl.col("c").list.get(last).struct.field("content"))
        return frame.select(answer.alias("answer")).to_series()


def require_compared_roles(chats: Sequence[ChatColumn], roles: Sequence[Role]) -> None:
    """Refuse ``--roles`` that no turn of any conversation has.

    Every item would then be compared as empty text, and an audit or a
    duplicate merge would find nothing, looking like clean data.
    """
    conversations = [chat for chat in chats if chat.is_conversation and len(chat)]
    if not conversations:
        return
    present = set().union(*(chat.roles_present() for chat in conversations))
    if present & set(roles):
        return
    have = ", ".join(role for role in ROLES if role in present) or "none"
    raise UsageError(
        f"--roles {','.join(roles)}: no conversation has such a turn, so every item would "
        f"be compared as empty text; the conversations have {have} turns"
    )


def _joined_texts(texts: tuple[pl.Series, ...]) -> pl.Series:
    import polars as pl

    if len(texts) == 1:
        return texts[0].alias("text")
    both_null = texts[0].is_null() & texts[1].is_null()
    joined = pl.concat_str(
        [pl.lit(texts[0]), pl.lit(texts[1])], separator=TURN_SEPARATOR, ignore_nulls=True
    )
    return pl.select(pl.when(pl.lit(both_null)).then(None).otherwise(joined).alias("text"))["text"]


@dataclass(frozen=True)
class _Location:
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


def _problem_error(column: str, where: str, problem: ConversationProblem) -> InvalidConversation:
    if problem.message is None:
        return InvalidConversation(f"{where}: column {column!r}: the conversation {problem.reason}")
    return InvalidConversation(
        f"{where}: column {column!r}, message {problem.message}: {problem.reason}"
    )


def _from_values(values: list[Any], column: str, locate: _Location) -> NormalizedColumn:
    """The reference path; errors name the row's location."""
    try:
        return normalize_values(values, column)
    except BadRow as bad:
        cause = bad.__cause__
        assert isinstance(cause, ConversationProblem)
        raise _problem_error(column, locate(bad.row), cause) from None


def _from_series(series: pl.Series, column: str, locate: _Location) -> NormalizedColumn:
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
            raise _problem_error(column, locate(bad.row), problem) from None
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
    # The conversations returned are exact; the frame's column is not (see ChatColumn.retyped).
    """A JSONL column whose polars type may hide converted values, read value by value."""
    values, lines = exact_values(path, column)
    locate = _Location(str(path), path, lines)
    chats = any(isinstance(value, list | dict) for value in values)
    if not chats:
        return "text", frame[column]
    if any(isinstance(value, str) for value in values):
        raise _mixed_error(column, path, values, lines)
    normalized = _from_values(values, column, locate)
    return "conversation", NormalizedColumn(
        normalized.conversations, normalized.skipped_parts, normalized.shape, retyped=True
    )


def _read_column(
    frame: pl.DataFrame, column: str, source: str, path: Path | None, exact: bool
) -> tuple[Kind, pl.Series | NormalizedColumn]:
    """One column, as text or as conversations."""
    import polars as pl

    series = frame[column]
    dtype = series.dtype
    locate = _Location(source, path)
    jsonl = is_jsonl(path) and not exact
    if dtype == pl.Null or isinstance(dtype, pl.Categorical | pl.Enum):
        # Null: a column null in every row, which string expressions refuse;
        # Categorical: text that Parquet (pandas' category dtype) stores as a dictionary.
        return "text", series.cast(pl.String)
    if dtype == pl.String:
        if jsonl and series.str.contains(_JSON_LIKE).any():
            assert path is not None
            if not arrow_agrees(path, column, dtype):
                return _read_exact(frame, column, path)
        return "text", series
    if isinstance(dtype, pl.List | pl.Array | pl.Struct):
        if jsonl:
            assert path is not None
            if not arrow_agrees(path, column, dtype):
                return _read_exact(frame, column, path)
        return "conversation", _from_series(series, column, locate)
    raise InvalidTable(
        f"{source}: column {column!r} holds {dtype} values; a text option needs text, or "
        "conversations (lists of {role, content} or {from, value} messages)"
    )


def read_chat(
    frame: pl.DataFrame,
    columns: str | Sequence[str],
    *,
    source: str,
    path: Path | str | None = None,
    exact: bool = False,
) -> ChatColumn:
    """Read ``columns`` of ``frame`` as text or conversations, recognising the shape.

    One column: text, ``{role, content}`` messages or ShareGPT ``{from,
    value}`` messages. Two columns: TRL's prompt-completion form (two text
    columns, or two conversation columns joined in order). ``path`` is the
    file the frame was read from: JSONL values are then checked exactly and
    errors name the line; ``exact`` says that the frame's types are those
    JSON gave (read by :func:`evalkit.chat.sources.read_jsonl_exact`), so
    that check is skipped. A malformed conversation raises
    :class:`~evalkit.errors.InvalidConversation` naming the file, the line
    (or row), the message index and the problem.
    """
    import polars as pl

    names = (columns,) if isinstance(columns, str) else tuple(columns)
    if not names or len(names) > 2:
        raise UsageError(
            f"--text: give one column, or two (prompt and completion); got {len(names)}"
        )
    if len(set(names)) != len(names):
        raise UsageError(f"--text: column {names[0]!r} is given twice")
    require_columns(frame, names, source)
    file = Path(path) if path is not None else None
    read = [_read_column(frame, name, source, file, exact) for name in names]
    kinds = {kind for kind, _ in read}
    if len(kinds) > 1:
        text_column = next(n for n, (k, _) in zip(names, read, strict=True) if k == "text")
        chat_column = next(n for n, (k, _) in zip(names, read, strict=True) if k != "text")
        raise InvalidConversation(
            f"{source}: --text {text_column} holds text but --text {chat_column} holds "
            "conversations; give two text columns or two conversation columns"
        )
    if kinds == {"text"}:
        texts = tuple(value for _, value in read)
        assert all(isinstance(t, pl.Series) for t in texts)
        return ChatColumn(names, "text", "text", texts, None, None, 0)  # type: ignore[arg-type]
    normalized = [value for _, value in read]
    assert all(isinstance(n, NormalizedColumn) for n in normalized)
    parts: list[NormalizedColumn] = normalized  # type: ignore[assignment]
    if len(parts) == 1:
        conversations, prompt_turns = parts[0].conversations, None
    else:
        conversations = pl.select(
            pl.concat_list(pl.lit(parts[0].conversations), pl.lit(parts[1].conversations))
        ).to_series()
        prompt_turns = parts[0].conversations.list.len().alias("prompt_turns")
    return ChatColumn(
        columns=names,
        kind="conversation",
        shape=parts[0].shape,
        texts=(),
        conversations=conversations.alias(names[0]),
        prompt_turns=prompt_turns,
        skipped_parts=sum(part.skipped_parts for part in parts),
        retyped=any(part.retyped for part in parts),
    )
