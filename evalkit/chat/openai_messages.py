"""OpenAI chat fine-tuning files and TRL's ``messages``: ``{role, content}`` messages.

``developer`` is OpenAI's newer name for the system turn. Content is a string
or a list of parts (:mod:`evalkit.chat.normalize` reads both, and
LLaMA-Factory's ``{type, value}`` parts); tool calls, ``tool_call_id``,
``name`` and the training flags are read the same in every message dialect.
"""

from __future__ import annotations

from evalkit.chat.dialect import MessageDialect

MESSAGES = MessageDialect(
    name="messages",
    label="OpenAI",
    role_key="role",
    content_key="content",
    roles={
        "system": "system",
        "developer": "system",
        "user": "user",
        "assistant": "assistant",
        "tool": "tool",
    },
)
