"""The contract's ``gate`` block, as comparison reads it from a result.

The gate rules travel inside every ``summary.json`` (``contract.normalized``),
so a comparison needs nothing but the two result folders. The block is
validated again with the contract's own model, strictly: an unknown or
misspelt rule must not be ignored silently, because a gate that skips a rule
passes what it should block (a hand-edited or older summary could hold one).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from evalkit.errors import InvalidContract
from evalkit.records import GateRules

__all__ = ["GateRules", "parse_gate_rules"]


def parse_gate_rules(normalized_contract: dict[str, Any], source: Path) -> GateRules:
    """Validate the ``gate`` block of a normalised contract (absent means no rules)."""
    gate = normalized_contract.get("gate") or {}
    if not isinstance(gate, dict):
        raise InvalidContract(
            f"{source}: contract.normalized.gate: expected a mapping of rules, "
            f"found {type(gate).__name__}; fix the contract's gate block and re-score"
        )
    raw = dict(gate)
    if raw.get("vs_baseline") is None:  # a normaliser may write null for "no such rules"
        raw.pop("vs_baseline", None)
    try:
        return GateRules.model_validate(raw)
    except ValidationError as error:
        detail = error.errors()[0]
        key = ".".join(["contract", "normalized", "gate", *map(str, detail["loc"])])
        reason = "unknown rule" if detail["type"] == "extra_forbidden" else detail["msg"].lower()
        raise InvalidContract(
            f"{source}: {key}: {reason}; fix the contract's gate block and re-score"
        ) from error
