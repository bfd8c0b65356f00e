"""The split manifest as plain data: what :func:`evalkit.split` builds and writes.

:mod:`evalkit.splitting.manifest` holds the pydantic models of
``manifest.json``: they document the format (``docs/schemas``), validate a
manifest read back, and are what :attr:`SplitResult.manifest` returns. A split
run does not need them to *write* one: importing pydantic and building those
models costs ~0.1 s, a fifth of a whole ``evalkit split`` of 100k items.
These frozen dataclasses mirror the models field for field, in the same
order, so ``manifest_text`` writes the bytes ``model_dump`` would have
(``tests/test_split_record.py`` holds the two together).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

MANIFEST_FORMAT_VERSION = 1


@dataclass(frozen=True, kw_only=True)
class InputInfo:
    """The input the split was made from."""

    path: str | None
    sha256: str | None
    n_items: int
    n_groups: int


@dataclass(frozen=True, kw_only=True)
class SplitOptions:
    """The options that produced the split (everything needed to reproduce it)."""

    group: list[str]
    stratify: str | None
    sizes: list[int] | None
    ratios: list[float] | None
    names: list[str]
    seed: int
    id: str | None
    text: str | None
    completion: str | None
    roles: list[str] | None
    null_group: str
    tolerance: int | None
    near_dup: float | None
    freeze: str | None
    tokenizer: str | None
    system: str | None = None
    tools: str | None = None
    engine: str = "local"


@dataclass(frozen=True, kw_only=True)
class TextInfo:
    """What the --text column(s) held, as recognised from the values."""

    columns: list[str]
    kind: str
    shape: str
    compared_roles: list[str] | None
    skipped_parts: int
    json_text: bool = False
    system_column: str | None = None
    system_added: int = 0
    system_kept: int = 0
    tools_column: str | None = None
    tool_calls: int = 0
    untrained_turns: int = 0


@dataclass(frozen=True, kw_only=True)
class LengthStats:
    """Text length: min, median, 95th percentile (linear interpolation), max."""

    min: int
    p50: float
    p95: float
    max: int
    unit: str


@dataclass(frozen=True, kw_only=True)
class SplitReport:
    """One split as produced."""

    target: int
    n_items: int
    n_groups: int
    count_deviation: int
    class_counts: dict[str, int]
    class_shares: dict[str, float]
    class_share_deviation_pp: dict[str, float]
    classes_missing: list[str]
    length: LengthStats | None


@dataclass(frozen=True, kw_only=True)
class Leakage:
    """Group leakage, checked on the final assignment."""

    groups_in_several_splits: int


@dataclass(frozen=True, kw_only=True)
class Quality:
    """How close the split came to what was asked."""

    max_count_deviation: int
    max_class_share_deviation_pp: float
    max_class_share_deviation_pp_major: float
    required_classes: list[str]
    required_classes_missing: dict[str, list[str]]
    leakage: Leakage


@dataclass(frozen=True, kw_only=True)
class Merging:
    """Groups merged because their texts are exact or near duplicates."""

    threshold: float
    merged_groups: int
    largest_merged_group: int


@dataclass(frozen=True, kw_only=True)
class Freezing:
    """Groups kept where an earlier split put them."""

    path: str
    sha256: str
    frozen_groups: int
    new_groups: int
    conflicts: int


@dataclass(frozen=True, kw_only=True)
class ManifestRecord:
    """``manifest.json`` of one ``evalkit split`` run (the model: ``SplitManifest``)."""

    format_version: int = MANIFEST_FORMAT_VERSION
    evalkit_version: str
    seed: int
    input: InputInfo
    options: SplitOptions
    targets: dict[str, int]
    splits: dict[str, SplitReport]
    unused: int
    text: TextInfo | None
    null_groups: int
    merging: Merging | None
    freezing: Freezing | None
    quality: Quality
    # Repetition within each split (with --near-dup): plain data from evalkit.leakage.within.
    within: dict[str, dict[str, object]] | None = None
    json_text_columns: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, object]:
        """The manifest as JSON values: what ``SplitManifest.model_dump(mode="json")`` gives."""
        return asdict(self)


def manifest_text(record: ManifestRecord) -> str:
    """The text of ``manifest.json``: two-space indented, UTF-8 as is, a final newline."""
    return json.dumps(record.to_json(), indent=2, ensure_ascii=False) + "\n"
