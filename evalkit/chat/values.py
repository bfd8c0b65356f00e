"""What a malformed conversation is reported with, and how a JSON value is named in it.

Shared by the per-value normaliser and the readers of the columns beside a
conversation (tools, system): every problem is a :class:`ConversationProblem`
that names the message (or tool) it is about, and every value is described the
way JSON would name it, never by its Python type.
"""

from __future__ import annotations

from typing import Any


class ConversationProblem(Exception):
    """Why one conversation is malformed; ``message`` is the 0-based message index or None."""

    def __init__(self, reason: str, message: int | None = None, *, item: str = "message") -> None:
        super().__init__(reason)
        self.reason = reason
        self.message = message
        self.item = item
        """What ``message`` counts: ``message`` (of the conversation) or ``tool`` (of a tools
        list)."""


def json_kind(value: Any) -> str:
    """How JSON would name a Python value's type, for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "list"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, bytes | bytearray):
        return "binary"  # a Parquet binary column; JSON has none
    return type(value).__name__


def described(value: Any) -> str:
    """A value's JSON kind with its article, for error messages: ``an object``, ``null``."""
    kind = json_kind(value)
    if kind == "null":
        return "null"
    if kind == "string":
        return "text"
    if kind == "binary":
        return "binary data"
    return f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"


def short(value: Any, limit: int = 60) -> str:
    """``repr`` of a value, cut to ``limit`` characters: a bad value quoted in one line."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
