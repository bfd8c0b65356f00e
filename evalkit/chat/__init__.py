"""Conversations: every chat shape read, validated and rendered in one place.

Fine-tuning data is mostly conversations: OpenAI/TRL ``messages`` (``{role,
content}``, content a string or a list of parts, tool calls, training flags),
ShareGPT ``conversations`` (``{from, value}``, ``function_call`` and
``observation`` turns), TRL's prompt-completion pair, Alpaca's instruction,
input and output; beside them a ``system`` and a ``tools`` column. Each
such source form is a dialect registered in :mod:`evalkit.chat.dialects`
(:func:`register_dialect` adds one). :func:`read_chat` turns a text
option's column(s) into a :class:`ChatColumn`, whatever the shape;
:func:`template_conversations` gives what a chat template receives for each
conversation. The other packages (splitting, leakage,
scoring, tokens, model) use them and never parse messages themselves.

The names load when first used (:mod:`evalkit._lazy`): ``evalkit prompts
--help`` needs only :mod:`evalkit.chat.prompt_options`, not the readers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalkit._lazy import lazy_exports

if TYPE_CHECKING:
    from evalkit.chat.column import ChatColumn as ChatColumn
    from evalkit.chat.column import read_chat as read_chat
    from evalkit.chat.column import require_compared_roles as require_compared_roles
    from evalkit.chat.dialect import ColumnsDialect as ColumnsDialect
    from evalkit.chat.dialect import ColumnsRead as ColumnsRead
    from evalkit.chat.dialect import MessageDialect as MessageDialect
    from evalkit.chat.dialects import DIALECTS as DIALECTS
    from evalkit.chat.dialects import register_dialect as register_dialect
    from evalkit.chat.normalize import ConversationProblem as ConversationProblem
    from evalkit.chat.normalize import Message as Message
    from evalkit.chat.normalize import Normalized as Normalized
    from evalkit.chat.normalize import normalize_value as normalize_value
    from evalkit.chat.roles import DEFAULT_COMPARED_ROLES as DEFAULT_COMPARED_ROLES
    from evalkit.chat.roles import ROLES as ROLES
    from evalkit.chat.roles import Role as Role
    from evalkit.chat.roles import parse_roles as parse_roles
    from evalkit.chat.template import CallArguments as CallArguments
    from evalkit.chat.template import TemplateConversation as TemplateConversation
    from evalkit.chat.template import handed_counts as handed_counts
    from evalkit.chat.template import template_conversations as template_conversations

__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "ChatColumn": "evalkit.chat.column",
        "read_chat": "evalkit.chat.column",
        "require_compared_roles": "evalkit.chat.column",
        "ColumnsDialect": "evalkit.chat.dialect",
        "ColumnsRead": "evalkit.chat.dialect",
        "MessageDialect": "evalkit.chat.dialect",
        "DIALECTS": "evalkit.chat.dialects",
        "register_dialect": "evalkit.chat.dialects",
        "ConversationProblem": "evalkit.chat.normalize",
        "Message": "evalkit.chat.normalize",
        "Normalized": "evalkit.chat.normalize",
        "normalize_value": "evalkit.chat.normalize",
        "DEFAULT_COMPARED_ROLES": "evalkit.chat.roles",
        "ROLES": "evalkit.chat.roles",
        "Role": "evalkit.chat.roles",
        "parse_roles": "evalkit.chat.roles",
        "CallArguments": "evalkit.chat.template",
        "TemplateConversation": "evalkit.chat.template",
        "handed_counts": "evalkit.chat.template",
        "template_conversations": "evalkit.chat.template",
    },
)
