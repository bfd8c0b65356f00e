"""The roles of a normalised conversation.

Every conversation evalkit reads ends up with four roles, the ones chat
templates know: ``system``, ``user``, ``assistant``, ``tool``. Each message
dialect (:mod:`evalkit.chat.dialects`) maps its own speaker names onto those
four (ShareGPT's ``human``/``gpt``, ``function_call``, ``observation``); a
name outside its map is an error, never guessed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final, Literal

from evalkit.errors import ParameterError

Role = Literal["system", "user", "assistant", "tool"]
ROLES: Final[tuple[Role, ...]] = ("system", "user", "assistant", "tool")

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
