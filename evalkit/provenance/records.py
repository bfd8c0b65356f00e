"""Helpers on ``score``'s path: the base a result records, from a card or options.

``score`` without provenance options imports nothing from here but these
few lines.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalkit.records._card import AdapterCard

HEX_COMMIT = re.compile(r"^[0-9a-f]{40}$")


def is_commit(revision: str | None) -> bool:
    """Whether a revision pins the base: a full 40-hex commit (a branch or tag moves)."""
    return bool(revision and HEX_COMMIT.match(revision))


def card_base(card: AdapterCard) -> dict[str, Any]:
    """The ``base`` block a result records for predictions of a carded adapter."""
    base = card.base
    return {
        "id": base.id,
        "revision": base.revision,
        "pinned": is_commit(base.revision),
        "quantization": base.quantization,
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
