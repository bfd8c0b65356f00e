"""Plain-data helpers on ``score``'s path: the base a result records, from a card or options.

Kept apart from the card's pydantic models so that ``evalkit score --card``
validates the card only when it reads one, and ``score`` without provenance
options imports nothing from here but these few lines.
"""

from __future__ import annotations

import re
from typing import Any

HEX_COMMIT = re.compile(r"^[0-9a-f]{40}$")


def is_commit(revision: str | None) -> bool:
    """Whether a revision pins the base: a full 40-hex commit (a branch or tag moves)."""
    return bool(revision and HEX_COMMIT.match(revision))


def card_base(card: dict[str, Any]) -> dict[str, Any]:
    """The ``base`` block a result records for predictions of a carded adapter."""
    base = card.get("base") or {}
    return {
        "id": base.get("id"),
        "revision": base.get("revision"),
        "pinned": is_commit(base.get("revision")),
        "quantization": base.get("quantization"),
        "source": "card",
    }


def options_base(model_id: str, revision: str | None) -> dict[str, Any]:
    """The ``base`` block of a prompt-only run (``--base-model ID --base-revision SHA``)."""
    return {
        "id": model_id,
        "revision": revision,
        "pinned": is_commit(revision),
        "quantization": None,
        "source": "options",
    }
