"""A text option's column(s), read as text or as normalised conversations.

Every command that takes ``--text COL`` reads it through :func:`read_chat`,
which recognises the dialect (:mod:`evalkit.chat.dialects`) from the values
(a text column, role/content messages, ShareGPT from/value messages, either
as JSON text in a CSV or Parquet column) or from the number of columns (two
for TRL's prompt-completion form, three for Alpaca's instruction, input and
output), validates every conversation,
puts the ``system`` column's prompt first and reads the ``tools`` column,
and returns a :class:`ChatColumn` that gives what each command needs: the
text compared for duplicates (chosen roles, tool calls included), lengths
(every turn), the inference prompts and the reference answers. What a chat
template receives comes from :func:`evalkit.chat.template.template_conversations`.
No other package parses messages.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any

from evalkit import params
from evalkit.chat.dialect import ColumnsRead, Kind
from evalkit.chat.dialects import columns_dialect
from evalkit.chat.extras import (
    DEFAULT_SYSTEM,
    DEFAULT_TOOLS,
    read_tools,
    resolve_column,
    with_system,
)
from evalkit.chat.reading import read_column
from evalkit.chat.roles import DEFAULT_COMPARED_ROLES, ROLES, Role
from evalkit.chat.texts import TURN_SEPARATOR, joined_texts, message_chars, message_text
from evalkit.errors import InvalidConversation, ParameterError, UsageError

if TYPE_CHECKING:
    import polars as pl

    from evalkit.io import Table, TableLike


@dataclass(frozen=True)
class ChatColumn:
    """The value(s) of ``--text`` for every row: text, or a normalised conversation."""

    columns: tuple[str, ...]
    """The columns read: one, (prompt, completion), or Alpaca's (instruction, input, output)."""
    kind: Kind
    """``text`` (plain strings) or ``conversation`` (lists of messages)."""
    shape: str
    """How the (first) column is written: ``text``, or the dialect's name (``messages``,
    ``sharegpt``, ``alpaca``; :mod:`evalkit.chat.dialects`)."""
    texts: tuple[pl.Series, ...]
    """``kind == "text"``: one String series per column."""
    conversations: pl.Series | None
    """``kind == "conversation"``: typed :func:`evalkit.chat.dtypes.conversation_dtype`, the
    columns joined and the system column's prompt put first."""
    prompt_turns: pl.Series | None
    """Two conversation columns: how many messages of each row come from the first."""
    skipped_parts: int
    """Non-text content parts (images, audio) that were skipped."""
    retyped: bool = False
    """A column of the frame holds values a columnar reader converted (read as the source
    wrote them instead): the conversations here are right; written out, the column goes
    as JSON text (:attr:`evalkit.io.Table.json_text_columns`)."""
    tools: pl.Series | None = None
    """Each row's tools as JSON text (null: none), when there is a tools column."""
    empty_tool_lists: int = 0
    """Rows whose tools value is an empty list, read as no tools (as the API and TRL do)."""
    tools_column: str | None = None
    """The column the tools come from (``--tools``, or a column named ``tools``)."""
    system_column: str | None = None
    """The column of system prompts (``--system``, or a column named ``system``)."""
    system_rows: pl.Series | None = None
    """Per row: whether the system column's prompt was put first (None: no system column)."""
    system_added: int = 0
    """Rows whose conversation got the system column's prompt as its first message."""
    system_kept: int = 0
    """Rows that start with their own system message, kept (the column's value unused)."""
    json_text: bool = False
    """The conversations were JSON text in a string column (CSV, Parquet)."""

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

    @cached_property
    def tool_call_count(self) -> int:
        """Tool calls over every conversation."""
        import polars as pl

        if self.conversations is None:
            return 0
        calls = self.conversations.list.eval(
            pl.element().struct.field("tool_calls").list.len().fill_null(0)
        )
        return int(calls.list.sum().sum())

    @cached_property
    def flagged_untrained(self) -> int:
        """Turns whose training flag says not to train on them (``weight: 0``, ``training:
        false``)."""
        if self.conversations is None:
            return 0
        import polars as pl

        flags = self.conversations.list.eval(
            (pl.element().struct.field("train") == False).fill_null(False)  # noqa: E712
        )
        return int(flags.list.sum().sum())

    def compared_text(self, roles: Sequence[Role] = DEFAULT_COMPARED_ROLES) -> pl.Series:
        """The text compared for duplicates: the ``roles`` turns' contents and tool calls.

        Each turn is its content, then one line per tool call (its name and
        arguments), so two examples that call other tools or pass other
        arguments differ. Plain text is compared whole (``roles`` apply to
        conversations only); a conversation with no turn of those roles
        compares as empty text.
        """
        import polars as pl

        if self.conversations is None:
            return joined_texts(self.texts)
        element = pl.element()
        chosen = element.struct.field("role").is_in(list(roles))
        text = message_text() if self.tool_call_count else element.struct.field("content")
        return (
            self.conversations.list.eval(text.filter(chosen))
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
        """Every turn's content (and tool calls) joined: the text of the whole example."""
        if self.conversations is None:
            return joined_texts(self.texts)
        return self.compared_text(ROLES)

    def char_lengths(self) -> pl.Series:
        """Characters per row: of every turn's content and tool calls (null for a null text)."""
        import polars as pl

        if self.conversations is None:
            lengths = [text.str.len_chars().cast(pl.Int64) for text in self.texts]
            if len(lengths) == 1:
                return lengths[0].alias("length")
            both_null = self.texts[0].is_null() & self.texts[1].is_null()
            total = lengths[0].fill_null(0) + lengths[1].fill_null(0)
            return pl.select(pl.when(pl.lit(both_null)).then(None).otherwise(total)).to_series()
        chars = (
            message_chars()
            if self.tool_call_count
            else pl.element().struct.field("content").str.len_chars()
        )
        return self.conversations.list.eval(chars).list.sum().cast(pl.Int64).alias("length")

    def messages_series(self) -> pl.Series:
        """The normalised conversations (raises for a text column)."""
        if self.conversations is None:
            raise UsageError(f"column {self.columns[0]!r} holds text, not conversations")
        return self.conversations

    @cached_property
    def parsed_tools(self) -> dict[str, list[dict[str, Any]]]:
        """Each distinct tools text of the column, parsed once: text -> the list."""
        import orjson

        if self.tools is None:
            return {}
        return {text: orjson.loads(text) for text in self.tools.drop_nulls().unique().to_list()}

    def messages(self) -> list[list[dict[str, Any]]]:
        """The normalised conversations as Python lists of messages (every field, see
        :func:`evalkit.chat.dtypes.conversation_dtype`). A chat template takes
        :func:`evalkit.chat.template.template_conversations` instead."""
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
        (prompt and completion) the prompt is the first column's messages
        (and the system column's prompt).
        """

        if self.conversations is None:
            raise UsageError(f"column {self.columns[0]!r} holds text, not conversations")
        return self._prompts

    @cached_property
    def _prompts(self) -> pl.Series:
        import polars as pl

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

    def reference_tool_calls(self) -> pl.Series:
        """The tool calls of each conversation's last assistant turn (the reference answer).

        Each row is a list of ``{id, name, arguments, arguments_text}`` (the
        arguments as written, see :class:`evalkit.chat.calls.ToolCall`); null when
        that turn calls no tool or there is no assistant turn
        (:meth:`reference_answers` tells the two apart).
        """
        import polars as pl

        if self.conversations is None:
            raise UsageError(f"column {self.columns[0]!r} holds text, not conversations")
        has, last = self._last_assistant()
        frame = pl.DataFrame({"c": self.conversations})
        calls = pl.when(has).then(pl.col("c").list.get(last).struct.field("tool_calls"))
        return frame.select(calls.alias("tool_calls")).to_series()


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
    raise ParameterError(
        "roles",
        f"{','.join(roles)}: no conversation has such a turn, so every item would "
        f"be compared as empty text; the conversations have {have} turns",
    )


def _text_columns(columns: str | Sequence[str]) -> tuple[str, ...]:
    return params.text_columns(columns, "text")


def _conversation_columns(table: Table, names: tuple[str, ...]) -> ColumnsRead:
    """The ``--text`` columns read: by the dialect registered for that many columns, or
    one column alone (text, or conversations in a message dialect)."""
    dialect = columns_dialect(len(names))
    if dialect is not None:
        return dialect.read(table, names, read_column)
    table.require_columns(names)
    kind, value = read_column(table, names[0])
    if kind == "text":
        return ColumnsRead("text", "text", texts=(value,))  # type: ignore[arg-type]
    return ColumnsRead("conversation", value.shape, normalized=value)  # type: ignore[arg-type]


def _check_argument_texts(conversations: pl.Series, table: Table, column: str) -> None:
    """Refuse tool-call arguments written as JSON text that give a key twice.

    A template or an API parses that text, and JSON readers disagree on which
    of the two values wins: what the model is trained on would be undefined.
    Each distinct text is parsed once, with the strict reader.
    """
    import polars as pl

    from evalkit.chat.calls import strict_json
    from evalkit.io import RepeatedKey

    calls = (
        pl.DataFrame({"c": conversations})
        .with_row_index("row")
        .explode("c")
        .with_columns(pl.int_range(pl.len()).over("row").alias("message"))
        .select("row", "message", pl.col("c").struct.field("tool_calls").alias("call"))
        .explode("call")
        .drop_nulls("call")
    )
    if not calls.height:
        return
    calls = calls.with_columns(pl.int_range(pl.len()).over("row", "message").alias("number"))
    calls = calls.unnest("call").filter(
        pl.col("arguments_text") & pl.col("arguments").str.contains(r"^\s*\{")
    )
    for text in calls["arguments"].unique(maintain_order=True).to_list():
        try:
            strict_json(text)
        except RepeatedKey as repeated:
            where = calls.filter(pl.col("arguments") == text).row(0, named=True)
            raise InvalidConversation(
                f"{table.where(where['row'])}: column {column!r}, message {where['message']}: "
                f"tool call {where['number']} ({where['name']}): its arguments give key "
                f"{repeated.args[0]!r} twice in one object; keep one"
            ) from None
        except (ValueError, RecursionError):
            continue  # not JSON: handed over as the text it is


def read_chat(
    table: Table | TableLike,
    columns: str | Sequence[str],
    *,
    system: str | None = None,
    tools: str | None = None,
    source: str | None = None,
    path: str | os.PathLike[str] | None = None,
) -> ChatColumn:
    """Read ``columns`` of ``table`` as text or conversations, recognising the shape.

    ``table`` is what :func:`evalkit.io.read_table` read, or anything it reads
    (a file, a polars, pandas or pyarrow frame; ``source`` then names it in
    errors). ``path`` is deprecated: earlier versions took a frame and the file
    it was read from; give the file (or its :class:`~evalkit.io.Table`) instead.

    One column: text, ``{role, content}`` messages or ShareGPT ``{from,
    value}`` messages (nested, or as JSON text in every non-empty row). Two
    columns: TRL's prompt-completion form (two text columns, or two
    conversation columns joined in order). Three: Alpaca's instruction, input
    and output. For conversations, ``system`` names the column of system
    prompts and ``tools`` the column of tools (default: the columns named
    ``system`` and ``tools``, when there are such columns). Values are read as
    the source wrote them (:meth:`evalkit.io.Table.values`). A malformed
    conversation (or tools value) raises
    :class:`~evalkit.errors.InvalidConversation` naming the file, the line
    (or row), the message index and the problem.
    """
    from evalkit.io import Table, read_table

    if path is not None:
        import warnings

        warnings.warn(
            "read_chat(frame, ..., path=FILE) is deprecated: pass the file, or "
            "evalkit.io.read_table(FILE), as the table",
            DeprecationWarning,
            stacklevel=2,
        )
        table = read_table(path)
    elif not isinstance(table, Table):
        table = read_table(table, name=source or "data")
        if source is not None:
            table = replace(table, label=source)
    names = _text_columns(columns)
    frame, source = table.frame, table.label
    read = _conversation_columns(table, names)
    if read.kind == "text":
        for parameter, given in (("system", system), ("tools", tools)):
            if given is not None:
                raise ParameterError(
                    parameter,
                    f"{given}: applies to conversations, but {{text}} "
                    f"{' '.join(names)} holds plain text",
                    refs=["text"],
                )
        return ChatColumn(names, "text", "text", read.texts, None, None, 0)
    normalized, prompt_turns = read.normalized, read.prompt_turns
    assert normalized is not None, "a conversation read has its conversations"
    conversations = normalized.conversations
    _check_argument_texts(conversations, table, names[0])
    system_column = resolve_column(frame, system, DEFAULT_SYSTEM, "system", source)
    added = kept = 0
    system_rows = None
    if system_column is not None and system_column not in names:
        applied = with_system(conversations, table, system_column)
        conversations, kept, system_rows = applied.conversations, applied.kept, applied.added
        added = int(applied.added.sum())
        if prompt_turns is not None:
            prompt_turns = prompt_turns + applied.added.cast(prompt_turns.dtype)
    elif system_column is not None:
        system_column = None
    tools_column = resolve_column(frame, tools, DEFAULT_TOOLS, "tools", source)
    if tools_column in names:
        tools_column = None
    tools_read = read_tools(table, tools_column) if tools_column else None
    return ChatColumn(
        columns=names,
        kind="conversation",
        shape=read.shape,
        texts=(),
        conversations=conversations.alias(names[0]),
        prompt_turns=prompt_turns.alias("prompt_turns") if prompt_turns is not None else None,
        skipped_parts=normalized.skipped_parts,
        retyped=normalized.retyped,
        tools=tools_read.texts if tools_read is not None else None,
        empty_tool_lists=tools_read.empty_lists if tools_read is not None else 0,
        tools_column=tools_column,
        system_column=system_column,
        system_rows=system_rows,
        system_added=added,
        system_kept=kept,
        json_text=normalized.json_text,
    )
