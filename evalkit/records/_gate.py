"""The contract's ``gate`` block: the rules a comparison applies, kept with its results.

The rules are written by the user in the contract and travel inside every
``summary.json`` and ``report.json`` (what a gate applied is part of its
verdict), so their model is a persisted one: the contract (evalkit.contract)
and the comparison (evalkit.comparison) both read it from here.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Fraction = Field(default=None, ge=0.0, le=1.0)


class _Strict(BaseModel):
    model_config = ConfigDict(
        extra="forbid", frozen=True, populate_by_name=True, use_attribute_docstrings=True
    )


class VsBaselineRules(_Strict):
    """Largest allowed drops of a candidate against the baseline (a drop fails when greater)."""

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
    """When set, an overall or non-rare class drop fails only if also significant
    (Holm-adjusted exact McNemar p below this)."""


class GateRules(_Strict):
    """The CI gate: absolute minimums and drops against the baseline."""

    min_format_validity: float | None = Fraction
    """Smallest allowed overall format validity of the candidate."""
    min_content_accuracy: float | None = Fraction
    """Smallest allowed overall content accuracy of the candidate."""
    max_missing: int | None = Field(default=None, ge=0)
    """Largest allowed number of gold items without a prediction."""
    vs_baseline: VsBaselineRules = VsBaselineRules()
    """Rules that compare the candidate with the baseline."""
    require_fresh_test: bool = False
    """Fail the gate when the test set's ledger says it is burned (5 or more looks, the
    rules changed after a look, or an edited ledger), or when its looks cannot be
    counted (no ledger, or one without these results' looks)."""
    require_servable: Literal["vllm"] | None = None
    """Fail the gate unless the candidate's adapter card says the server named serves the
    adapter as it is (``servable.vllm`` true); a candidate scored without a card fails."""
