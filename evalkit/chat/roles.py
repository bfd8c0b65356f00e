"""The roles of a normalised conversation, and how each chat shape names them.

Every conversation evalkit reads ends up with four roles, the ones chat
templates know: ``system``, ``user``, ``assistant``, ``tool``. ShareGPT files
name speakers differently (``human``/``gpt``; the assistant's own tool call
as ``function_call``, the tool's answer as ``observation`` or ``tool``), so
each shape has its own map onto those four. A name outside the map is an
error, never guessed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final, Literal

from evalkit.errors import ParameterError

Role = Literal["system", "user", "assistant", "tool"]
ROLES: Final[tuple[Role, ...]] = ("system", "user", "assistant", "tool")

# role/content messages (OpenAI chat fine-tuning files, TRL ``messages``).
# ``developer`` is OpenAI's newer name for the system turn.
MESSAGE_ROLES: Final[dict[str, Role]] = {
    "system": "system",
    "developer": "system",
    "user": "user",
    "assistant": "assistant",
    "tool": "tool",
}
# from/value messages (ShareGPT ``conversations``, axolotl, LLaMA-Factory).
# ``function_call`` is the assistant's call (LLaMA-Factory's ``function_tag``, its
# Role.FUNCTION, trained on like any assistant turn); ``observation`` the tool's
# answer (``observation_tag``): src/llamafactory/data/parser.py and converter.py.
SHAREGPT_ROLES: Final[dict[str, Role]] = {
    "system": "system",
    "human": "user",
    "user": "user",
    "gpt": "assistant",
    "assistant": "assistant",
    "tool": "tool",
    "function_call": "assistant",
    "observation": "tool",
}

# The turns compared for duplicates by default: a system prompt shared by
# every example must never make two examples look alike.
DEFAULT_COMPARED_ROLES: Final[tuple[Role, ...]] = ("user", "assistant", "tool")


def parse_roles(value: str | Iterable[str] | None) -> tuple[Role, ...]:
    """The roles of a ``--roles`` option (comma-separated or a list), validated.

    ``None`` gives the default: every role but ``system``.
    """
    if value is None:
        return DEFAULT_COMPARED_ROLES
    parts: Sequence[str] = (
        [part.strip() for part in value.split(",")] if isinstance(value, str) else list(value)
    )
    chosen = [part for part in parts if part]
    if not chosen:
        raise ParameterError("roles", f"must name at least one of {', '.join(ROLES)}")
    for part in chosen:
        if part not in ROLES:
            raise ParameterError(
                "roles",
                f"names an unknown role {part!r}; choose from {', '.join(ROLES)} "
                "(comma-separated, e.g. user,assistant)",
            )
    return tuple(role for role in ROLES if role in chosen)
