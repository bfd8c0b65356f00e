"""The split manifest: what was asked, what was produced, and how well it holds.

The manifest is the record a later reader trusts without re-running the
split: it names the input by sha256, keeps every option and the seed, and
states the quality figures (count deviation, class-share deviation, leaked
groups) computed from the final assignment itself, not from the algorithm's
bookkeeping.

These models are the format's definition (its JSON Schema in
``docs/schemas`` is generated from them) and what ``SplitResult.manifest``
returns; a split run builds and writes the plain mirror in
:mod:`evalkit.splitting.record`, which must keep their fields and order.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from evalkit.leakage.models import WithinSplit
from evalkit.persisted import Persisted
from evalkit.splitting.record import MANIFEST_FORMAT_VERSION
from evalkit.table_input import source_field


class _Model(Persisted):
    """The models of this file, on the one persisted base."""


class InputInfo(_Model):
    """The input the split was made from."""

    path: str | None = Field(description="Input file as given (null for an in-memory table).")
    sha256: str | None = Field(
        description="sha256 of the input file's bytes "
        "(of every file, by relative name and content, for a dataset folder; of the content, "
        "for a frame)."
    )
    n_items: int = Field(description="Rows in the input.")
    n_groups: int = Field(description="Groups after null handling and duplicate merging.")
    source: Literal["frame"] | None = source_field()


class SplitOptions(_Model):
    """The options that produced the split (everything needed to reproduce it)."""

    group: list[str] = Field(description="Group columns; their values together form the key.")
    stratify: str | None = Field(default=None, description="Class column balanced across splits.")
    sizes: list[int] | None = Field(default=None, description="Requested items per split.")
    ratios: list[float] | None = Field(default=None, description="Requested share per split.")
    names: list[str] = Field(description="Split names, in the order of sizes/ratios.")
    seed: int = Field(description="Seed of the random generator.")
    id: str | None = Field(default=None, description="Id column (unique per row).")
    text: str | None = Field(
        default=None,
        description="--text column: length statistics and the --near-dup comparison; text "
        "or a conversation (the prompt column of the prompt-completion form).",
    )
    completion: str | None = Field(
        default=None,
        description="A second --text column: the completion of TRL's prompt-completion form.",
    )
    roles: list[str] | None = Field(
        default=None,
        description="--roles as given: the conversation turns compared for --near-dup "
        "(null: the default, every role but system).",
    )
    null_group: str = Field(description="What a null group key means: error or singleton.")
    tolerance: int | None = Field(
        default=None, description="Largest allowed count deviation per split, in items."
    )
    near_dup: float | None = Field(
        default=None, description="Jaccard threshold for merging near-duplicate texts."
    )
    freeze: str | None = Field(default=None, description="Assignments file of an earlier split.")
    tokenizer: str | None = Field(
        default=None,
        description="Tokenizer folder (counted as evalkit tokens counts) or tokenizer.json "
        "file whose token counts are the lengths.",
    )
    system: str | None = Field(
        default=None, description="--system: the column of system prompts, when given."
    )
    tools: str | None = Field(default=None, description="--tools: the column of tools, when given.")
    engine: str = Field(
        default="local",
        description="Where the --near-dup search ran: local (one process) or ray (a Ray "
        "cluster); both give the same split.",
    )


class TextInfo(_Model):
    """What the --text column(s) held, as recognised from the values."""

    columns: list[str] = Field(
        description="The --text columns: one, prompt and completion, or Alpaca's instruction, "
        "input and output."
    )
    kind: str = Field(description="text (plain strings) or conversation (lists of messages).")
    shape: str = Field(
        description="How the (first) column is written: text, messages ({role, content}), "
        "sharegpt ({from, value}) or alpaca."
    )
    compared_roles: list[str] | None = Field(
        description="Roles whose turns --near-dup compares (null for text, compared whole)."
    )
    skipped_parts: int = Field(
        description="Non-text content parts (images, audio) left out of the text."
    )
    json_text: bool = Field(
        default=False,
        description="The conversations were the JSON text of message lists in a string column.",
    )
    system_column: str | None = Field(
        default=None, description="The column of system prompts put first, if any."
    )
    system_added: int = Field(
        default=0, description="Conversations that got the system column's prompt first."
    )
    system_kept: int = Field(
        default=0,
        description="Conversations that start with their own system message, kept (the system "
        "column's value unused, as LLaMA-Factory and axolotl do).",
    )
    tools_column: str | None = Field(default=None, description="The column of tools, if any.")
    tool_calls: int = Field(default=0, description="Tool calls over every conversation.")
    untrained_turns: int = Field(
        default=0,
        description="Turns flagged not to train on (OpenAI weight 0, axolotl training false).",
    )


class LengthStats(_Model):
    """Text length: min, median, 95th percentile (linear interpolation), max.

    A conversation's length is the characters of every turn's content, the
    system prompt included.
    """

    min: int
    p50: float
    p95: float
    max: int
    unit: str = Field(default="chars", description="chars, or tokens with --tokenizer.")


class SplitReport(_Model):
    """One split as produced."""

    target: int = Field(description="Requested number of items.")
    n_items: int = Field(description="Items placed in the split.")
    n_groups: int = Field(description="Groups placed in the split.")
    count_deviation: int = Field(description="n_items - target.")
    class_counts: dict[str, int] = Field(description="Items per class (every class listed).")
    class_shares: dict[str, float] = Field(description="Share of the split's items per class.")
    class_share_deviation_pp: dict[str, float] = Field(
        description="Class share minus the class's share of the whole input, in points."
    )
    classes_missing: list[str] = Field(description="Classes of the input absent from the split.")
    length: LengthStats | None = Field(default=None, description="Length of --text, if given.")


class Leakage(_Model):
    """Group leakage, checked on the final assignment."""

    groups_in_several_splits: int = Field(description="Groups with items in two or more splits.")


class Quality(_Model):
    """How close the split came to what was asked."""

    max_count_deviation: int = Field(description="Largest |n_items - target| over the splits.")
    max_class_share_deviation_pp: float = Field(
        description="Largest |class share deviation| over splits and classes, in points."
    )
    max_class_share_deviation_pp_major: float = Field(
        description="The same over classes holding at least 5% of the input's items."
    )
    required_classes: list[str] = Field(
        description="Classes found in at least as many groups as there are splits."
    )
    required_classes_missing: dict[str, list[str]] = Field(
        description="Per split, required classes it still lacks (empty when all are covered)."
    )
    leakage: Leakage


class Merging(_Model):
    """Groups merged because their texts are exact or near duplicates."""

    threshold: float = Field(description="Jaccard threshold used.")
    merged_groups: int = Field(description="Key groups merged into another group.")
    largest_merged_group: int = Field(description="Items in the largest merged group.")


class Freezing(_Model):
    """Groups kept where an earlier split put them."""

    path: str = Field(description="The assignments file given to --freeze.")
    sha256: str = Field(description="sha256 of that file.")
    frozen_groups: int = Field(description="Groups of the input found in the file (kept in place).")
    new_groups: int = Field(description="Groups placed anew.")
    conflicts: int = Field(description="Merged groups whose parts were frozen in different splits.")


class SplitManifest(_Model):
    """``manifest.json``: the record of one ``evalkit split`` run."""

    format_version: int = Field(default=MANIFEST_FORMAT_VERSION, description="Manifest format.")
    evalkit_version: str = Field(description="evalkit version that wrote the manifest.")
    seed: int = Field(description="Seed of the random generator.")
    input: InputInfo
    options: SplitOptions
    targets: dict[str, int] = Field(description="Requested items per split.")
    splits: dict[str, SplitReport]
    unused: int = Field(description="Items left out because the sizes add up to less.")
    text: TextInfo | None = Field(default=None, description="The --text column(s), if given.")
    null_groups: int = Field(description="Rows with a null group key made their own group.")
    merging: Merging | None = None
    freezing: Freezing | None = None
    quality: Quality
    within: dict[str, WithinSplit] | None = Field(
        default=None,
        description="With --near-dup: per split, how much of it repeats itself (its own exact "
        "and near-duplicate clusters, which --near-dup keeps whole, and repeated openings); "
        "the audit's `within`.",
    )
    json_text_columns: list[str] = Field(
        default_factory=list,
        description="Columns written to the Parquet split files as the JSON text of each value "
        "as the JSONL input wrote it (their keys differ from row to row; a Parquet struct would "
        "give every row every key).",
    )
