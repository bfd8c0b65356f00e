"""What a dialect is: one way a dataset writes its conversations.

Two kinds of source form exist. A **message dialect** writes each message as
an object with a role key and a content key (OpenAI's ``{role, content}``,
ShareGPT's ``{from, value}``); a conversation column holds lists of such
messages, and the dialect is recognised from the first message's keys. A
**columns dialect** spreads one conversation over several ``--text``
columns (TRL's prompt and completion, Alpaca's instruction, input and
output) and is recognised by how many columns are named. Each dialect is one
object in its own module, registered in :mod:`evalkit.chat.dialects`; the
readers ask the registry and name no dialect themselves.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from evalkit.chat.roles import ROLES, Role

if TYPE_CHECKING:
    import polars as pl

    from evalkit.io import Table

Kind = Literal["text", "conversation"]


@dataclass(frozen=True)
class NormalizedColumn:
    """A column of conversations in evalkit's form."""

    conversations: pl.Series
    """One list of messages per row, typed :func:`evalkit.chat.dtypes.conversation_dtype`."""
    skipped_parts: int
    """Content parts that are not text (images, audio), over the whole column."""
    shape: str
    """How the column wrote its messages: the message dialect's name."""
    retyped: bool = False
    """Read value by value because the frame's column had converted values."""
    json_text: bool = False
    """Read from text holding each conversation's JSON (a CSV or Parquet string column)."""


@dataclass(frozen=True)
class MessageDialect:
    """Messages written as objects with a role key and a content key."""

    name: str
    """The shape reported for a column written this way (``ChatColumn.shape``, manifests)."""
    label: str
    """Who writes it, as errors name it (``ShareGPT``)."""
    role_key: str
    """The key naming the speaker; a message with it (not null) is in this dialect."""
    content_key: str
    """The key holding the text (a string, or a list of content parts)."""
    roles: Mapping[str, Role]
    """The speaker names and the role each becomes; any other name is refused."""
    call_turns: frozenset[str] = field(default_factory=frozenset)
    """Speaker names whose content is the JSON text of the assistant's tool call
    (ShareGPT's ``function_call``); read value by value."""

    @property
    def keys(self) -> str:
        """``{role, content}``: how the dialect's messages are written, for errors."""
        return "{" + f"{self.role_key}, {self.content_key}" + "}"

    def recognises(self, message: Mapping[str, Any]) -> bool:
        """Whether one message (an object) is written in this dialect."""
        return message.get(self.role_key) is not None

    def unknown_role(self, name: str) -> str:
        """The reason given for a speaker name outside :attr:`roles`."""
        known = ", ".join(sorted(self.roles))
        return (
            f"unknown {self.role_key} {name!r}; use one of {known} "
            f"(normalised to {', '.join(ROLES)})"
        )


@dataclass(frozen=True)
class ColumnsRead:
    """What a columns dialect read: text columns, or one conversation per row."""

    kind: Kind
    shape: str
    """``text``, or the shape reported for the conversations."""
    texts: tuple[pl.Series, ...] = ()
    """``kind == "text"``: one String series per column."""
    normalized: NormalizedColumn | None = None
    """``kind == "conversation"``: the conversations."""
    prompt_turns: pl.Series | None = None
    """How many messages of each row are the prompt (None: up to the last assistant turn)."""


ColumnReader = Callable[["Table", str], "tuple[Kind, pl.Series | NormalizedColumn]"]
"""Reads one column as text or conversations (:func:`evalkit.chat.reading.read_column`)."""


@dataclass(frozen=True)
class ColumnsDialect:
    """One conversation per row spread over several named columns."""

    name: str
    label: str
    """Who writes it, as errors name it (``Alpaca``)."""
    columns: int
    """How many ``--text`` columns it takes (the number recognises it)."""
    parts: tuple[str, ...]
    """What each column holds, in order (``instruction``, ``input``, ``output``)."""
    read: Callable[[Table, tuple[str, ...], ColumnReader], ColumnsRead]
    """Reads the columns (checking them: a refusal is an error naming the column); the
    :data:`ColumnReader` reads one column the way a single ``--text`` column is read."""


Dialect = MessageDialect | ColumnsDialect
