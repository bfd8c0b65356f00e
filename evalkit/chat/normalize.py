"""One conversation value -> normalised messages: the reference semantics.

A conversation is a list of messages. Each message is either
``{role, content}`` (OpenAI chat fine-tuning files, TRL ``messages``) or
``{from, value}`` (ShareGPT ``conversations``); a column holds one shape or
the other, never both. ``content`` is a string or a list of parts
``[{type: "text", text: …}, …]``: the text parts are concatenated, as the chat
templates of multimodal families do, and other parts (images, audio) are
skipped and counted. An assistant message that only calls tools
(``content: null`` beside ``tool_calls``) has empty text.

This module works on Python values, one conversation at a time. The column
reader (:mod:`evalkit.chat.frame`) does the same work on whole polars columns;
tests hold the two to the same result on every input.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from evalkit.chat.roles import MESSAGE_ROLES, ROLES, SHAREGPT_ROLES, Role

Shape = Literal["messages", "sharegpt"]
SHAPE_KEYS: dict[Shape, tuple[str, str]] = {
    "messages": ("role", "content"),
    "sharegpt": ("from", "value"),
}
SHAPE_ROLES: dict[Shape, dict[str, Role]] = {"messages": MESSAGE_ROLES, "sharegpt": SHAREGPT_ROLES}


class ConversationProblem(Exception):
    """Why one conversation is malformed; ``message`` is the 0-based message index or None."""

    def __init__(self, reason: str, message: int | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.message = message


@dataclass(frozen=True)
class Normalized:
    """One conversation in evalkit's form: (role, text) per message, in order."""

    messages: list[tuple[Role, str]]
    skipped_parts: int
    shape: Shape


def shape_keys(shape: Shape) -> str:
    """``{role, content}`` or ``{from, value}``: how a shape is named in messages."""
    return "{" + ", ".join(SHAPE_KEYS[shape]) + "}"


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


def message_shape(message: dict[str, Any]) -> Shape | None:
    """The shape a message is written in, from its keys (None: neither)."""
    if message.get("role") is not None:
        return "messages"
    if message.get("from") is not None:
        return "sharegpt"
    return None


def unknown_role_reason(name: str, shape: Shape) -> str:
    """The reason given for a role name outside the shape's map."""
    known = ", ".join(sorted(SHAPE_ROLES[shape]))
    key = SHAPE_KEYS[shape][0]
    return f"unknown {key} {name!r}; use one of {known} (normalised to {', '.join(ROLES)})"


def parts_text(parts: list[Any], index: int) -> tuple[str, int]:
    """The concatenated text parts of a content list, and how many other parts were skipped."""
    texts: list[str] = []
    skipped = 0
    for number, part in enumerate(parts):
        if not isinstance(part, dict):
            raise ConversationProblem(
                f"content part {number} is {described(part)}, not an object "
                '{"type": "text", "text": ...}',
                index,
            )
        if part.get("type") != "text":
            skipped += 1
            continue
        text = part.get("text")
        if not isinstance(text, str):
            raise ConversationProblem(
                f"content part {number} has type 'text' but its 'text' is {described(text)}; "
                "give the part its text, or remove it",
                index,
            )
        texts.append(text)
    return "".join(texts), skipped


def message_text(message: dict[str, Any], shape: Shape, index: int) -> tuple[str, int]:
    """The text of one message and the non-text parts it skipped."""
    key = SHAPE_KEYS[shape][1]
    content = message.get(key)
    if isinstance(content, str):
        return content, 0
    if isinstance(content, list):
        return parts_text(content, index)
    if content is None:
        if message.get("tool_calls"):
            return "", 0
        raise ConversationProblem(
            f"has no {key!r}; give every message its text (only an assistant message "
            "with tool_calls may have none)",
            index,
        )
    raise ConversationProblem(
        f"{key!r} is {described(content)}; it must be text or a list of parts", index
    )


def normalize_value(value: Any, expected: Shape | None = None) -> Normalized:
    """Normalise one conversation, or raise :class:`ConversationProblem` saying why not.

    ``expected`` is the shape the rest of the column uses (a column holds one).
    """
    if not isinstance(value, list | tuple):
        raise ConversationProblem(
            f"is {described(value)}, not a list of messages; write each conversation as "
            '[{"role": ..., "content": ...}, ...]'
        )
    if not value:
        raise ConversationProblem("is an empty list; a conversation needs at least one message")
    shape = expected
    messages: list[tuple[Role, str]] = []
    skipped = 0
    for index, message in enumerate(value):
        if not isinstance(message, dict):
            raise ConversationProblem(
                f"is {described(message)}, not an object; write each message as "
                '{"role": ..., "content": ...}',
                index,
            )
        found = message_shape(message)
        if found is None:
            raise ConversationProblem(
                "has no 'role' (nor ShareGPT's 'from'); each message needs role and content",
                index,
            )
        if shape is None:
            shape = found
        elif found != shape:
            raise ConversationProblem(
                f"is written {shape_keys(found)} but the column's messages are "
                f"{shape_keys(shape)}; use one shape per column",
                index,
            )
        name = message[SHAPE_KEYS[shape][0]]
        role = SHAPE_ROLES[shape].get(name) if isinstance(name, str) else None
        if role is None:
            raise ConversationProblem(unknown_role_reason(str(name), shape), index)
        text, parts_skipped = message_text(message, shape, index)
        messages.append((role, text))
        skipped += parts_skipped
    assert shape is not None
    return Normalized(messages, skipped, shape)
