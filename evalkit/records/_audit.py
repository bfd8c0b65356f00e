"""The audit report: typed, versioned, and the exact shape of ``--json``.

Every field is documented because the JSON file is an interface: a CI step
or a notebook reads it. New versions may add fields, never rename or remove
one without bumping ``format_version``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from evalkit._version import __version__
from evalkit.io import source_field
from evalkit.records._base import Persisted

AUDIT_FORMAT_VERSION = 1


class LshParameters(Persisted):
    """How near duplicates are searched: shingling, MinHash and LSH banding."""

    threshold: float = Field(
        description="Jaccard similarity at or above which two texts are near duplicates."
    )
    shingle_size: int = Field(
        description="Words per shingle (a text is the set of its word k-grams)."
    )
    num_perm: int = Field(description="MinHash hash functions (signature length).")
    bands: int = Field(description="LSH bands; a pair is a candidate if one band matches entirely.")
    rows: int = Field(description="Signature values per band.")
    false_negative_rate: float = Field(
        description=(
            "Chance that a pair exactly at the threshold is never a candidate: (1 - t^rows)^bands."
        )
    )
    seed: int = Field(description="Seed of the MinHash hash functions.")


class _Model(Persisted):
    """The models of this file, on the one persisted base."""


class AuditOptions(_Model):
    """What the audit was asked to check."""

    id: str = Field(description="Id column; pairs and leaks name items by it.")
    text: str = Field(
        description="Column compared for exact and near duplicates: text, or conversations "
        "(the prompt column of the prompt-completion form)."
    )
    completion: str | None = Field(
        default=None,
        description="A second --text column: the completion of TRL's prompt-completion form.",
    )
    columns: list[str] = Field(
        default_factory=list,
        description="Every --text column: one, prompt and completion, or Alpaca's "
        "instruction, input and output.",
    )
    roles: list[str] = Field(
        default=["user", "assistant", "tool"],
        description="Roles whose turns are compared in a conversation (their text and their "
        "tool calls' names and arguments; text is compared whole); the default leaves out "
        "system, which every example may share.",
    )
    system: str | None = Field(
        default=None, description="--system: the column of system prompts, when given."
    )
    tools: str | None = Field(default=None, description="--tools: the column of tools, when given.")
    group: list[str] = Field(
        description="Group columns (a composite key when several); empty when not checked."
    )
    stratify: str | None = Field(description="Class column whose coverage is reported, if any.")
    near_dup: float | None = Field(
        description="Jaccard threshold of the near-duplicate check; null when it was skipped."
    )
    seed: int = Field(description="Seed of the MinHash hash functions.")
    opening_words: int = Field(
        default=5, description="Words of an opening counted by the within-split repetition."
    )
    within: bool = Field(
        default=False, description="--within: the pairs inside each split are listed too."
    )
    engine: str = Field(
        default="local",
        description="Where the audit ran: local (one process) or ray (a Ray cluster); both "
        "find the same.",
    )


class SplitSummary(_Model):
    """One split (one input file) and what the audit found in it."""

    path: str | None = Field(description="File the split was read from (null for a frame).")
    sha256: str | None = Field(
        description="sha256 of that file's bytes "
        "(of every file, by relative name and content, for a dataset folder; of the content, "
        "for a frame)."
    )
    source: Literal["frame"] | None = source_field()
    n_items: int = Field(description="Rows in the split.")
    shape: str = Field(
        default="text",
        description="How the split's text column is written: text, messages ({role, content}), "
        "sharegpt ({from, value}) or alpaca.",
    )
    json_text: bool = Field(
        default=False,
        description="The conversations were the JSON text of message lists in a string column.",
    )
    tool_calls: int = Field(default=0, description="Tool calls over the split's conversations.")
    skipped_parts: int = Field(
        default=0, description="Non-text content parts (images, audio) left out of the text."
    )
    n_groups: int | None = Field(description="Distinct non-null group keys; null without --group.")
    empty_texts: int = Field(
        description="Rows whose text is null or blank: never counted as anyone's duplicate."
    )
    duplicate_ids: int = Field(description="Rows whose id occurs more than once in this split.")
    items_with_duplicate_elsewhere: int = Field(
        description="Rows with an exact or near duplicate in another split."
    )
    class_counts: dict[str, int] = Field(
        description="Rows per class (--stratify), over every class of any split; empty without it."
    )
    missing_classes: list[str] = Field(
        description="Classes found in some split but not in this one."
    )


class GroupLeak(_Model):
    """A group whose items are spread over more than one split."""

    group: str = Field(description="The group key (a JSON array when the key has several columns).")
    items: dict[str, int] = Field(description="Items of the group per split it occurs in.")


class IdOverlap(_Model):
    """An id that occurs in more than one split: the same item was put in two places."""

    id: str = Field(description="The id.")
    splits: list[str] = Field(description="Splits it occurs in, in input order.")


class DuplicatePair(_Model):
    """Two items with the same normalised text (in different splits, or one with --within)."""

    a: str = Field(
        description="Id of the item in the earlier split (input order); in one split, the "
        "smaller id."
    )
    a_split: str = Field(description="Split of item a.")
    b: str = Field(description="Id of the item in the later split (in one split, the larger).")
    b_split: str = Field(description="Split of item b.")


class NearDuplicatePair(DuplicatePair):
    """Two items whose texts differ but are near duplicates (across splits, or in one)."""

    similarity: float = Field(
        description="Exact Jaccard similarity of the two texts' word-shingle sets (>= threshold)."
    )
    estimate: float = Field(description="MinHash estimate of that similarity, for reference.")


class WithinCluster(_Model):
    """One cluster of duplicates inside a split."""

    size: int = Field(description="Items of the split in the cluster.")
    example_id: str = Field(description="The smallest id in the cluster, to look at.")


class OpeningCount(_Model):
    """An opening (the first words of the normalised text) shared by several items."""

    text: str = Field(description="The opening, normalised (NFKC, lower case, single spaces).")
    n: int = Field(description="Items of the split that start with it.")


class WithinSplit(_Model):
    """How repetitive one split is: its own exact and near duplicates, and shared openings."""

    n: int = Field(description="Items in the split.")
    exact_share: float = Field(
        description="Share of the items whose normalised text another item of the split has."
    )
    near_share: float | None = Field(
        description="Share of the items in a near-duplicate cluster of the split (exact or near "
        "links, chained; exact duplicates included); null without the near-duplicate search."
    )
    in_exact_clusters: int = Field(description="Items counted by exact_share.")
    in_near_clusters: int | None = Field(description="Items counted by near_share.")
    n_clusters: int = Field(description="Clusters of two or more items in the split.")
    clusters: list[WithinCluster] = Field(
        description="The largest clusters (at most 10), largest first, with an example id."
    )
    openings: list[OpeningCount] = Field(
        description="The most repeated openings (at most 5; only those of two or more items)."
    )


class AuditCounts(_Model):
    """How many of each kind of leak were found."""

    group_leaks: int = Field(description="Groups in more than one split.")
    id_overlaps: int = Field(description="Ids in more than one split.")
    exact_duplicates: int = Field(description="Cross-split pairs of items with equal text.")
    near_duplicates: int = Field(description="Cross-split pairs of near-duplicate items.")
    candidate_pairs_checked: int = Field(
        description="Distinct-text pairs proposed by LSH and checked exactly."
    )


class AuditReport(_Model):
    """Everything ``evalkit audit`` found, as written by ``--json``."""

    format_version: int = Field(
        default=AUDIT_FORMAT_VERSION, description="Bumped on any incompatible change."
    )
    evalkit_version: str = Field(default=__version__, description="evalkit that wrote it.")
    leak: bool = Field(description="True if any leak was found: the command then exits 1.")
    options: AuditOptions = Field(description="The options of the audit.")
    lsh: LshParameters | None = Field(
        description="Shingling, MinHash and banding of the near-duplicate search (null if skipped)."
    )
    splits: dict[str, SplitSummary] = Field(description="Per split, in input order.")
    classes: list[str] = Field(description="Every class found in any split, sorted.")
    counts: AuditCounts = Field(description="Number of findings of each kind.")
    group_leaks: list[GroupLeak] = Field(description="Groups in several splits, by group key.")
    id_overlaps: list[IdOverlap] = Field(description="Ids in several splits, by id.")
    exact_duplicates: list[DuplicatePair] = Field(
        description="Cross-split pairs with equal normalised text, by split then id."
    )
    near_duplicates: list[NearDuplicatePair] = Field(
        description="Cross-split near-duplicate pairs (texts not equal), by split then id."
    )
    within: dict[str, WithinSplit] = Field(
        default={},
        description="Per split, in input order: how much of it repeats itself (not a leak).",
    )
    within_exact_duplicates: list[DuplicatePair] | None = Field(
        default=None,
        description="With --within: pairs of items of one split with equal normalised text.",
    )
    within_near_duplicates: list[NearDuplicatePair] | None = Field(
        default=None,
        description="With --within: near-duplicate pairs inside one split (texts not equal).",
    )
    within_pairs_limit: int | None = Field(
        default=None,
        description="With --within: each list holds at most this many pairs per split. A "
        "split with more lists those of its texts first in sorted order (of the normalised "
        "text; inside a text, or a pair of texts, by id) and is named in within_truncated.",
    )
    within_truncated: dict[str, list[str]] | None = Field(
        default=None,
        description="With --within: the splits whose exact and near pairs were more than "
        "within_pairs_limit (keys exact, near); their clusters are all in within.",
    )
