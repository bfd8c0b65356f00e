"""Conversations: every chat shape read, validated and rendered in one place.

Fine-tuning data is mostly conversations: OpenAI/TRL ``messages`` (``{role,
content}``, content a string or a list of parts, tool calls, training flags),
ShareGPT ``conversations`` (``{from, value}``, ``function_call`` and
``observation`` turns), TRL's prompt-completion pair, Alpaca's instruction,
input and output; beside them a ``system`` and a ``tools`` column.
:func:`read_chat` turns a text option's column(s) into a :class:`ChatColumn`,
whatever the shape; :func:`template_conversations` gives what a chat template
receives for each conversation. The other packages (splitting, leakage,
scoring, tokens, model) use them and never parse messages themselves.
"""

from __future__ import annotations

from evalkit.chat.column import ChatColumn, read_chat, require_compared_roles
from evalkit.chat.normalize import ConversationProblem, Message, Normalized, normalize_value
from evalkit.chat.roles import DEFAULT_COMPARED_ROLES, ROLES, Role, parse_roles
from evalkit.chat.template import (
    CallArguments,
    TemplateConversation,
    handed_counts,
    template_conversations,
)

__all__ = [
    "DEFAULT_COMPARED_ROLES",
    "ROLES",
    "CallArguments",
    "ChatColumn",
    "ConversationProblem",
    "Message",
    "Normalized",
    "Role",
    "TemplateConversation",
    "handed_counts",
    "normalize_value",
    "parse_roles",
    "read_chat",
    "require_compared_roles",
    "template_conversations",
]
