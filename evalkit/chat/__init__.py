"""Conversations: every chat shape read, validated and rendered in one place.

Fine-tuning data is mostly conversations: OpenAI/TRL ``messages`` (``{role,
content}``, content a string or a list of parts), ShareGPT ``conversations``
(``{from, value}``), TRL's prompt-completion pair. :func:`read_chat` turns a
text option's column(s) into a :class:`ChatColumn`, whatever the shape; the
other packages (splitting, leakage, scoring, tokens, model) use it and never
parse messages themselves.
"""

from __future__ import annotations

from evalkit.chat.column import ChatColumn, read_chat, require_compared_roles
from evalkit.chat.normalize import ConversationProblem, Normalized, normalize_value
from evalkit.chat.roles import DEFAULT_COMPARED_ROLES, ROLES, Role, parse_roles

__all__ = [
    "DEFAULT_COMPARED_ROLES",
    "ROLES",
    "ChatColumn",
    "ConversationProblem",
    "Normalized",
    "Role",
    "normalize_value",
    "parse_roles",
    "read_chat",
    "require_compared_roles",
]
