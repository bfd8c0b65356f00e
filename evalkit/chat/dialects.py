"""The dialect registry: every source form of conversations evalkit reads, in one table.

The readers never name a dialect. A conversation column's messages are
recognised by asking each registered :class:`~evalkit.chat.dialect.MessageDialect`
in turn (the first whose role key a message has), and its speaker names,
content key and call turns come from that dialect; several ``--text``
columns are read by the :class:`~evalkit.chat.dialect.ColumnsDialect`
registered for that many columns. A new dialect is one module that defines
its object and one :func:`register_dialect` call below (docs/development.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalkit.chat.alpaca import ALPACA
from evalkit.chat.dialect import ColumnsDialect, Dialect, MessageDialect
from evalkit.chat.openai_messages import MESSAGES
from evalkit.chat.prompt_completion import PROMPT_COMPLETION
from evalkit.chat.sharegpt import SHAREGPT

DIALECTS: dict[str, Dialect] = {}
"""Every dialect by name, in registration order: message dialects are tried in this
order (a message with both ``role`` and ``from`` is OpenAI's)."""


def register_dialect(dialect: Dialect) -> Dialect:
    """Add a dialect to the registry; a taken name, role key or column count is refused."""
    if dialect.name in DIALECTS:
        raise ValueError(f"a dialect named {dialect.name!r} is already registered")
    for other in DIALECTS.values():
        if isinstance(dialect, MessageDialect) and isinstance(other, MessageDialect):
            taken = other.role_key == dialect.role_key
            what = f"uses key {dialect.role_key!r}"
        elif isinstance(dialect, ColumnsDialect) and isinstance(other, ColumnsDialect):
            taken = other.columns == dialect.columns
            what = f"reads {dialect.columns} columns"
        else:
            continue
        if taken:
            raise ValueError(f"dialect {other.name!r} already {what}")
    DIALECTS[dialect.name] = dialect
    return dialect


def message_dialects() -> list[MessageDialect]:
    """The message dialects, in the order they are tried."""
    return [dialect for dialect in DIALECTS.values() if isinstance(dialect, MessageDialect)]


def message_dialect(name: str) -> MessageDialect:
    """The message dialect of a shape name (a column's ``shape``)."""
    dialect = DIALECTS[name]
    assert isinstance(dialect, MessageDialect), f"{name} is not a message dialect"
    return dialect


def default_message_dialect() -> MessageDialect:
    """The dialect reported for a column with no message to recognise one from."""
    return message_dialects()[0]


def recognise_message(message: Mapping[str, Any]) -> MessageDialect | None:
    """The dialect a message (an object) is written in, from its keys (None: none)."""
    for dialect in message_dialects():
        if dialect.recognises(message):
            return dialect
    return None


def role_keys() -> tuple[str, ...]:
    """Every message dialect's role key (a message needs one of them)."""
    return tuple(dialect.role_key for dialect in message_dialects())


def content_keys() -> tuple[str, ...]:
    """Every message dialect's content key, each once."""
    return tuple(dict.fromkeys(dialect.content_key for dialect in message_dialects()))


def described_message_dialects() -> str:
    """``{role, content} or {from, value}``: the message forms, for errors."""
    return " or ".join(dialect.keys for dialect in message_dialects())


def columns_dialect(count: int) -> ColumnsDialect | None:
    """The dialect that reads ``count`` ``--text`` columns (None: one column, read alone)."""
    for dialect in DIALECTS.values():
        if isinstance(dialect, ColumnsDialect) and dialect.columns == count:
            return dialect
    return None


register_dialect(MESSAGES)
register_dialect(SHAREGPT)
register_dialect(PROMPT_COMPLETION)
register_dialect(ALPACA)
