"""The audit report from its findings: one builder for the local and the Ray engine.

Both engines compute the same findings (frames of row pairs with ids, leaked
groups and ids, per-split counts, the within-split summaries); this module
turns them into the :class:`~evalkit.records._audit.AuditReport`, so that
the two reports can only differ where the findings do.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

import numpy as np
import polars as pl

from evalkit.io import FRAME_SOURCE
from evalkit.leakage.inputs import SplitSource, file_fingerprint
from evalkit.leakage.within_pairs import LIMIT
from evalkit.records import LshParameters
from evalkit.records._audit import (
    AuditCounts,
    AuditOptions,
    AuditReport,
    DuplicatePair,
    GroupLeak,
    IdOverlap,
    NearDuplicatePair,
    SplitSummary,
    WithinSplit,
)

PairT = TypeVar("PairT", bound=DuplicatePair)


class ChatFacts(Protocol):
    """What a split summary says of a split's text column (a ChatColumn has it)."""

    @property
    def shape(self) -> str: ...

    @property
    def skipped_parts(self) -> int: ...

    @property
    def json_text(self) -> bool: ...

    @property
    def tool_call_count(self) -> int: ...


@dataclass(frozen=True)
class SplitCounts:
    """Per split (arrays indexed by split): what the summaries count."""

    n_items: np.ndarray
    empty_texts: np.ndarray
    duplicate_ids: np.ndarray
    n_groups: np.ndarray | None
    classes: list[str]
    class_counts: list[dict[str, int]]


@dataclass(frozen=True)
class Findings:
    """What an engine found, in the frames the report is built from."""

    counts: SplitCounts
    exact: pl.DataFrame  # a_row, b_row, a_split, b_split, a, b: cross-split, sorted
    near: pl.DataFrame  # the same, with similarity and estimate
    candidates: int  # distinct-text pairs checked exactly
    leaks: pl.DataFrame | None  # label, split, items (with --group)
    overlaps: pl.DataFrame  # id, splits
    within: dict[str, WithinSplit]
    listing: WithinListing | None  # with --within


@dataclass(frozen=True)
class WithinListing:
    """The pairs inside each split that ``--within`` lists (see :mod:`within_pairs`)."""

    exact: pl.DataFrame  # a_row, b_row, a_split, b_split, a, b: smaller id first, sorted
    near: pl.DataFrame | None  # the same, with similarity and estimate (None: no near search)
    exact_truncated: list[int]  # splits with more exact pairs than listed
    near_truncated: list[int]


def build_report(
    options: AuditOptions,
    params: LshParameters | None,
    sources: Sequence[SplitSource],
    texts: Sequence[ChatFacts],
    found: Findings,
) -> AuditReport:
    """The report of ``found`` for splits ``sources`` audited with ``options``."""
    names = [source.name for source in sources]
    listing = found.listing
    group_list = _group_leak_models(found.leaks, names)
    overlap_list = [
        IdOverlap(id=value, splits=[names[s] for s in splits])
        for value, splits in found.overlaps.iter_rows()
    ]
    exact_list = _pair_models(found.exact, names, DuplicatePair)
    near_list = _pair_models(found.near, names, NearDuplicatePair)
    totals = AuditCounts(
        group_leaks=len(group_list),
        id_overlaps=len(overlap_list),
        exact_duplicates=len(exact_list),
        near_duplicates=len(near_list),
        candidate_pairs_checked=found.candidates,
    )
    return AuditReport(
        leak=any((totals.group_leaks, totals.id_overlaps, len(exact_list), len(near_list))),
        options=options,
        lsh=params,
        splits=_split_summaries(sources, texts, found),
        classes=found.counts.classes,
        counts=totals,
        group_leaks=group_list,
        id_overlaps=overlap_list,
        exact_duplicates=exact_list,
        near_duplicates=near_list,
        within=found.within,
        within_exact_duplicates=_within_models(
            listing.exact if listing else None, names, DuplicatePair
        ),
        within_near_duplicates=_within_models(
            listing.near if listing else None, names, NearDuplicatePair
        ),
        within_pairs_limit=LIMIT if listing else None,
        within_truncated=_truncated(listing, names),
    )


def _truncated(listing: WithinListing | None, names: list[str]) -> dict[str, list[str]] | None:
    if listing is None:
        return None
    return {
        "exact": [names[split] for split in listing.exact_truncated],
        "near": [names[split] for split in listing.near_truncated],
    }


def _within_models(
    pairs: pl.DataFrame | None, names: list[str], model: type[PairT]
) -> list[PairT] | None:
    if pairs is None:
        return None
    return _pair_models(pairs, names, model) if pairs.height else []


def _pair_models(pairs: pl.DataFrame, names: list[str], model: type[PairT]) -> list[PairT]:
    """Pair frames as report models, validated in one call (millions of pairs are possible,
    and building them one by one in Python would dominate the run time)."""
    from pydantic import TypeAdapter

    split_name = pl.Enum(names)
    columns = list(model.model_fields)
    frame = pairs.with_columns(
        pl.col("a_split")
        .cast(pl.UInt32)
        .replace_strict(range(len(names)), names, return_dtype=split_name),
        pl.col("b_split")
        .cast(pl.UInt32)
        .replace_strict(range(len(names)), names, return_dtype=split_name),
    ).select(columns)
    return TypeAdapter(list[model]).validate_python(frame.to_dicts())  # type: ignore[valid-type]


def _group_leak_models(leaks: pl.DataFrame | None, names: list[str]) -> list[GroupLeak]:
    if leaks is None or leaks.height == 0:
        return []
    grouped = leaks.group_by("label", maintain_order=True).agg("split", "items")
    return [
        GroupLeak(group=label, items={names[s]: int(n) for s, n in zip(splits, items, strict=True)})
        for label, splits, items in grouped.iter_rows()
    ]


def _split_summaries(
    sources: Sequence[SplitSource], texts: Sequence[ChatFacts], found: Findings
) -> dict[str, SplitSummary]:
    counts = found.counts
    # Rows with a duplicate in another split, counted once each, per split.
    involved = pl.concat(
        [
            frame.select(
                pl.col(f"{side}_row").cast(pl.Int64).alias("row"),
                pl.col(f"{side}_split").cast(pl.Int64).alias("split"),
            )
            for frame in (found.exact, found.near)
            for side in ("a", "b")
        ]
    ).unique("row")
    duplicated = np.bincount(involved["split"].to_numpy(), minlength=len(sources))
    summaries = {}
    for index, source in enumerate(sources):
        chat = texts[index]
        class_counts = counts.class_counts[index]
        summaries[source.name] = SplitSummary(
            path=str(source.path) if source.path is not None else None,
            sha256=file_fingerprint(source),
            source=FRAME_SOURCE if source.path is None else None,
            n_items=int(counts.n_items[index]),
            shape=chat.shape,
            json_text=chat.json_text,
            tool_calls=chat.tool_call_count,
            skipped_parts=chat.skipped_parts,
            n_groups=None if counts.n_groups is None else int(counts.n_groups[index]),
            empty_texts=int(counts.empty_texts[index]),
            duplicate_ids=int(counts.duplicate_ids[index]),
            items_with_duplicate_elsewhere=int(duplicated[index]),
            class_counts=class_counts,
            missing_classes=[label for label, n in class_counts.items() if n == 0],
        )
    return summaries


def groups_per_split(
    table: pl.DataFrame, group_columns: list[str], n_splits: int
) -> np.ndarray | None:
    """Distinct non-null group keys per split (None without group columns)."""
    if not group_columns:
        return None
    keyed = table.drop_nulls(group_columns).select("split", *group_columns).unique()
    return np.bincount(keyed["split"].to_numpy(), minlength=n_splits)
