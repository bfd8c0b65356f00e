"""The typed record of the suspect gold labels a comparison found (part of ``report.json``)."""

from __future__ import annotations

from pydantic import Field

from evalkit.records._base import Persisted


class _Model(Persisted):
    """The models of this file, on the one persisted base."""


class SuspectLabel(_Model):
    """A gold item whose label every result contradicts with the same answer: a label to check.

    A hint, never a verdict: models that learnt the same shortcut agree on
    the same wrong answer too. Read the input before changing the label.
    """

    id: str
    """The item's id."""
    gold: str
    """Its gold class."""
    agreed: str
    """The class every result with a format-valid output gives instead."""
    n_agree: int
    """How many results give ``agreed`` (those with a format-valid output; none gives another)."""
    text: str | None = None
    """The first words of the item's input, from the gold file's text column (null without one)."""
    probability: float | None = None
    """The lowest probability of ``agreed`` among the results whose predictions ``evalkit
    generate`` wrote (from its recorded top logits; null when none did)."""
    probabilities: dict[str, float] = Field(default_factory=dict)
    """That probability per result (by name), where it could be computed."""


class LabelChange(_Model):
    """How many suspects have one gold class and one agreed class."""

    gold: str
    """The gold class."""
    agreed: str
    """The class the results agree on."""
    count: int
    """Suspect items with this gold and agreed class."""


class SuspectLabelCheck(_Model):
    """How the suspects were looked for, and what was found, per class."""

    field: str | None
    """The contract field whose answers were compared (its class field); null: not checked."""
    results: list[str]
    """The results compared: the baseline, then every candidate."""
    min_agree: int
    """Results that must give the same format-valid answer (``--suspect-min-agree``; default:
    every result); results whose output is invalid or missing abstain."""
    checked: int
    """Items with a gold class present in every result."""
    suspects: int
    """Items found (``suspect_labels``)."""
    by_class: dict[str, int]
    """Suspects per gold class (every class with one or more)."""
    changes: list[LabelChange]
    """Suspects per (gold, agreed) pair, most frequent first."""
    expected_by_chance: float | None
    """Suspects expected if the results erred independently, each wrong answer uniform over
    the other classes (null unless every result must agree). Errors of models tuned from one
    base are correlated, so a few more than this is usual; many more point at the labels."""
    text_column: str | None
    """The gold file's column the first words come from (null when none was read)."""
    probability_note: str
    """Where the answer probabilities come from, or why there are none."""
    note: str | None = None
    """Why the check was not made, or what it could not read."""
