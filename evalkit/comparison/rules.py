"""The contract's ``gate`` block, as comparison reads it from a result.

The gate rules travel inside every ``summary.json`` (``contract.normalized``),
so a comparison needs nothing but the two result folders. The block is checked
again here, strictly: an unknown or misspelt rule must not be ignored
silently, because a gate that skips a rule passes what it should block.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evalkit.errors import InvalidContract

Fraction = Field(default=None, ge=0.0, le=1.0)


class VsBaselineRules(BaseModel):
    """Largest allowed drops against the baseline (a drop fails when greater)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_accuracy_drop: float | None = Fraction
    """Overall content accuracy, absolute (0.01 = one percentage point)."""
    max_format_drop: float | None = Fraction
    """Overall format validity, absolute."""
    max_class_drop: float | None = Fraction
    """Content accuracy of any non-rare class."""
    max_rare_class_drop: float | None = Fraction
    """Content accuracy of any rare class, judged by this threshold alone."""
    max_slice_drop: float | None = Fraction
    """Content accuracy of any slice, judged by this threshold alone."""
    significance: float | None = Field(default=None, gt=0.0, lt=1.0)
    """When set, an overall or non-rare class drop fails only if also significant."""


class GateRules(BaseModel):
    """The contract's ``gate`` block: absolute minimums and drops against the baseline."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    min_format_validity: float | None = Fraction
    """Smallest allowed overall format validity of the candidate."""
    min_content_accuracy: float | None = Fraction
    """Smallest allowed overall content accuracy of the candidate."""
    max_missing: int | None = Field(default=None, ge=0)
    """Largest allowed number of gold items without a prediction."""
    vs_baseline: VsBaselineRules = VsBaselineRules()
    """Rules that compare the candidate with the baseline."""


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
