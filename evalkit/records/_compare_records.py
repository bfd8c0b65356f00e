"""The provenance part of a comparison report: settings, test set, what a reload needs.

Persisted in ``report.json`` beside the statistics (``models.py``); every
field has a docstring because these models are the file format.
"""

from __future__ import annotations

from typing import Any, Literal

from evalkit.records._base import Persisted

State = Literal["fresh", "seen", "reused", "burned", "unknown"]
"""A test set's state; ``unknown`` when no ledger counted its looks."""


class _Model(Persisted):
    """The models of this file, on the one persisted base."""


class SettingDifference(_Model):
    """A setting of the adapter cards that differs between baseline and candidate."""

    key: str
    """``<block>.<key>`` of the cards: ``lora.r``, ``training.learning_rate``, ``base.revision``."""
    baseline: Any
    """The baseline's value (null when it has none)."""
    candidate: Any
    """The candidate's value (null when it has none)."""
    follows_from: str | None
    """The ``--factor`` it follows from (the scaling when r changes, say), or null."""


class ProvenanceComparison(_Model):
    """Where the two results came from, and what differs between their adapters."""

    baseline_base: dict[str, Any] | None
    """The baseline's base model (``summary.json`` ``base``), if recorded."""
    candidate_base: dict[str, Any] | None
    """The candidate's base model, if recorded."""
    base_changed: list[str]
    """Base keys (``id``, ``revision``, ``quantization``) both sides state and that differ."""
    base_change_allowed: bool
    """True when ``--allow-base-change`` let a comparison across bases through."""
    baseline_weights_sha256: str | None
    """The baseline adapter's weights hash (null for a prompt-only baseline)."""
    candidate_weights_sha256: str | None
    """The candidate adapter's weights hash."""
    differences: list[SettingDifference]
    """Every setting of the ``base``, ``lora`` and ``training`` blocks that differs
    (blocks present on both sides; hashes and parameter counts are not settings)."""
    factors: list[str]
    """The settings the comparison studies (``--factor``), as full keys."""
    protocol: str | None
    """With ``--factor r``: which protocol the candidate follows, ``fixed lora_alpha`` or
    ``fixed lora_alpha/r`` (they answer different questions)."""
    confounded: list[str]
    """Differing settings that neither are a factor nor follow from one."""


class GoldSplit(_Model):
    """The test set the results were scored on."""

    gold_path: str | None
    """The gold file as scored."""
    gold_sha256: str
    """Its sha256."""
    n_items: int
    """Paired examples."""
    split: str | None
    """The split's name in the manifest beside the gold file, if there is one."""
    n_groups: int | None
    """Groups the split covers (each wholly inside it), from the manifest."""
    group_columns: list[str]
    """The columns that define a group."""
    manifest: str | None
    """The manifest read."""
    manifest_sha256: str | None
    """Its sha256."""


class LedgerStatus(_Model):
    """How often the test set was looked at, from its ledger."""

    ledger: str | None
    """The ledger read (null when none was found)."""
    state: State
    """The ledger's state for the gold file; ``unknown`` without a ledger."""
    looks: int
    """Distinct (answers judged, contract rules) pairs scored on it."""
    reasons: list[str]
    """Why, one sentence each."""
    recorded: bool
    """Whether the ledger holds the looks of both results compared here."""
    selection_bias_se: float
    """Worst-case selection bias of the figures, in standard errors (0.45·√looks)."""
    selection_bias_delta: float | None
    """The same, in units of the overall accuracy delta (its paired standard error times
    ``selection_bias_se``)."""


class ReloadNeeds(_Model):
    """What reloading the chosen adapter (or the kept baseline) needs."""

    result: str
    """The result it describes."""
    base_id: str | None
    """The base model id."""
    base_revision: str | None
    """The base's commit."""
    base_pinned: bool
    """Whether that revision is a 40-hex commit."""
    base_quantization: str | None
    """How the base was quantized, when known."""
    adapter_weights_sha256: str | None
    """The adapter's canonical weights hash (null for a prompt-only result)."""
    missing: list[str]
    """What a reload cannot be pinned to, e.g. ``base revision``; empty when complete."""
