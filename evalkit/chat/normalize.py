"""One conversation value -> normalised messages: the reference semantics.

A conversation is a list of messages, each written in one registered message
dialect (:mod:`evalkit.chat.dialects`): ``{role, content}`` (OpenAI chat
fine-tuning files, TRL ``messages``), ``{from, value}`` (ShareGPT
``conversations``); a column holds one dialect, never two. ``content`` is a
string or a list of parts
``[{type: "text", text: …}, …]``: the text parts are concatenated, as the chat
templates of multimodal families do, and other parts (images, audio) are
skipped and counted. LLaMA-Factory's parts ``{type, value}`` read as it reads
them: ``text`` joined, ``reasoning`` the message's reasoning, ``tool_call``
(``{name, arguments}`` as JSON text) a tool call; its per-message
``loss_weight`` is the training flag (0: not trained on). An assistant
message that only calls tools (``content: null`` beside ``tool_calls``) has
empty text. Besides its text a
message keeps what templates and APIs need (:mod:`evalkit.chat.calls`): its
tool calls, the ``tool_call_id`` it answers, its ``name`` and its training
flag; a dialect's call turn (ShareGPT's ``function_call``) becomes an
assistant message that calls tools.

This module works on Python values, one conversation at a time. The column
reader (:mod:`evalkit.chat.frame`) does the same work on whole polars columns;
tests hold the two to the same result on every input.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evalkit.chat.calls import (
    ToolCall,
    check_answers,
    function_call_turn,
    text_field,
    tool_calls,
    train_flag,
)
from evalkit.chat.dialect import MessageDialect
from evalkit.chat.dialects import message_dialect, message_dialects, recognise_message
from evalkit.chat.roles import Role
from evalkit.chat.values import ConversationProblem, described, json_kind, short

__all__ = [
    "ConversationProblem",
    "Message",
    "Normalized",
    "ToolCall",
    "described",
    "json_kind",
    "normalize_value",
]


@dataclass(frozen=True)
class Message:
    """One message in evalkit's form."""

    role: Role
    content: str
    """The text: a string as written, text parts joined, empty for a call-only turn."""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    train: bool | None = None
    """The training flag as written (``weight``/``training``/``loss_weight``); None when not
    written."""
    reasoning: str | None = None
    """The reasoning parts' text (LLaMA-Factory), handed to a template as
    ``reasoning_content``; None when there is none."""

    def row(self) -> dict[str, Any]:
        """The message as a row of the normalised column (see ``dtypes.conversation_dtype``)."""
        return {
            "role": self.role,
            "content": self.content,
            "tool_calls": [call.row() for call in self.tool_calls] if self.tool_calls else None,
            "tool_call_id": self.tool_call_id,
            "name": self.name,
            "train": self.train,
            "reasoning": self.reasoning,
        }


@dataclass(frozen=True)
class Normalized:
    """One conversation in evalkit's form: its messages, in order."""

    messages: list[Message]
    skipped_parts: int
    shape: str
    """The message dialect's name (:mod:`evalkit.chat.dialects`)."""

    @property
    def pairs(self) -> list[tuple[Role, str]]:
        """(role, text) of every message."""
        return [(message.role, message.content) for message in self.messages]


@dataclass(frozen=True)
class Content:
    """What a message's content holds: its text, and what LLaMA-Factory's parts add."""

    text: str
    skipped: int = 0
    """Parts that are neither text nor reasoning nor a tool call (images, audio)."""
    reasoning: str | None = None
    """The ``reasoning`` parts' text (LLaMA-Factory), None when there is none."""
    calls: tuple[ToolCall, ...] = ()
    """The ``tool_call`` parts (LLaMA-Factory): ``{name, arguments}`` as JSON text."""


def _part_text(part: dict[str, Any], key: str, number: int, index: int) -> str:
    text = part.get(key)
    if not isinstance(text, str):
        raise ConversationProblem(
            f"content part {number} has type {short(part.get('type'))} but its {key!r} is "
            f"{described(text)}; give the part its text, or remove it",
            index,
        )
    return text


def parts_content(parts: list[Any], index: int) -> Content:
    """A content list: OpenAI's parts (``{type: "text", text}``; other types skipped and
    counted) or LLaMA-Factory's (``{type, value}``), read as LLaMA-Factory reads them:
    ``text`` parts joined, ``reasoning`` parts joined into the reasoning, each
    ``tool_call`` part (the JSON text of ``{name, arguments}``) a tool call."""
    texts: list[str] = []
    reasoning: list[str] = []
    calls: list[ToolCall] = []
    skipped = 0
    for number, part in enumerate(parts):
        if not isinstance(part, dict):
            raise ConversationProblem(
                f"content part {number} is {described(part)}, not an object "
                '{"type": "text", "text": ...}',
                index,
            )
        kind = part.get("type")
        key = "value" if "value" in part and "text" not in part else "text"
        if kind == "text":
            texts.append(_part_text(part, key, number, index))
        elif key == "value" and kind == "reasoning":
            reasoning.append(_part_text(part, key, number, index))
        elif key == "value" and kind == "tool_call":
            value = _part_text(part, key, number, index)
            calls.extend(function_call_turn(value, index, what=f"content part {number}"))
        else:
            skipped += 1
    return Content("".join(texts), skipped, "".join(reasoning) or None, tuple(calls))


def message_content(message: dict[str, Any], dialect: MessageDialect, index: int) -> Content:
    """The content of one message: its text, skipped parts, reasoning and part calls."""
    key = dialect.content_key
    content = message.get(key)
    if isinstance(content, str):
        return Content(content)
    if isinstance(content, list):
        return parts_content(content, index)
    if content is None:
        if message.get("tool_calls"):
            return Content("")
        raise ConversationProblem(
            f"has no {key!r}; give every message its text (only an assistant message "
            "with tool_calls may have none)",
            index,
        )
    raise ConversationProblem(
        f"{key!r} is {described(content)}; it must be text or a list of parts", index
    )


def _message(
    message: dict[str, Any], dialect: MessageDialect, name: str, role: Role, index: int
) -> tuple[Message, int]:
    """One message in evalkit's form, and the non-text content parts it skipped."""
    if name in dialect.call_turns:
        calls = function_call_turn(message.get(dialect.content_key), index)
        content = Content("")
    else:
        calls = tool_calls(message, role, index)
        content = message_content(message, dialect, index)
        if content.calls:
            if role != "assistant":
                raise ConversationProblem(
                    f"a {role} message has tool_call parts; only assistant messages call tools",
                    index,
                )
            calls = (*calls, *content.calls)
    normalized = Message(
        role=role,
        content=content.text,
        tool_calls=calls,
        tool_call_id=text_field(message, "tool_call_id", index),
        name=text_field(message, "name", index),
        train=train_flag(message, role, index),
        reasoning=content.reasoning,
    )
    return normalized, content.skipped


def _no_role_key() -> str:
    first, *others = message_dialects()
    nor = ", ".join(f"{other.label}'s {other.role_key!r}" for other in others)
    return (
        f"has no {first.role_key!r}" + (f" (nor {nor})" if nor else "")
        + f"; each message needs {first.role_key} and {first.content_key}"
    )  # fmt: skip


def normalize_value(value: Any, expected: str | None = None) -> Normalized:
    """Normalise one conversation, or raise :class:`ConversationProblem` saying why not.

    ``expected`` is the dialect the rest of the column uses (a column holds one).
    """
    if not isinstance(value, list | tuple):
        raise ConversationProblem(
            f"is {described(value)}, not a list of messages; write each conversation as "
            '[{"role": ..., "content": ...}, ...]'
        )
    if not value:
        raise ConversationProblem("is an empty list; a conversation needs at least one message")
    dialect = message_dialect(expected) if expected is not None else None
    messages: list[Message] = []
    skipped = 0
    for index, message in enumerate(value):
        if not isinstance(message, dict):
            raise ConversationProblem(
                f"is {described(message)}, not an object; write each message as "
                '{"role": ..., "content": ...}',
                index,
            )
        found = recognise_message(message)
        if found is None:
            raise ConversationProblem(_no_role_key(), index)
        if dialect is None:
            dialect = found
        elif found != dialect:
            raise ConversationProblem(
                f"is written {found.keys} but the column's messages are "
                f"{dialect.keys}; use one shape per column",
                index,
            )
        name = message[dialect.role_key]
        role = dialect.roles.get(name) if isinstance(name, str) else None
        if role is None:
            raise ConversationProblem(dialect.unknown_role(str(name)), index)
        normalized, parts_skipped = _message(message, dialect, name, role, index)
        messages.append(normalized)
        skipped += parts_skipped
    assert dialect is not None
    check_answers(
        [m.role for m in messages], [m.tool_calls for m in messages],
        [m.tool_call_id for m in messages],
    )  # fmt: skip
    return Normalized(messages, skipped, dialect.name)
