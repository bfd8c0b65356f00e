"""``evalkit.audit``: check an existing split for leaks, and say what was found.

Read → stack the splits → group leaks and ids in several splits → normalise
texts → exact duplicates (equal normalised text) → near duplicates (MinHash
LSH over distinct texts, checked by exact Jaccard) → class coverage → report.
Only cross-split findings count as leaks: a duplicate inside one split is the
training set's own business.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol, TypeVar

import numpy as np
import polars as pl

from evalkit.chat import parse_roles
from evalkit.errors import UsageError
from evalkit.leakage import findings
from evalkit.leakage.clusters import distinct_texts
from evalkit.leakage.distributed.session import RayOptions
from evalkit.leakage.inputs import Rows, SplitSource, file_fingerprint, read_rows
from evalkit.leakage.minhash import LshParameters, choose_lsh
from evalkit.leakage.models import (
    AuditCounts,
    AuditOptions,
    AuditReport,
    DuplicatePair,
    GroupLeak,
    IdOverlap,
    NearDuplicatePair,
    SplitSummary,
)
from evalkit.leakage.normalize import normalize_texts
from evalkit.leakage.progress import Progress
from evalkit.leakage.search import SimilarPairs, find_similar_pairs

DEFAULT_NEAR_DUP = 0.8
PairT = TypeVar("PairT", bound=DuplicatePair)
Engine = Literal["local", "ray"]


class ChatFacts(Protocol):
    """What a split summary says of a split's text column (a ChatColumn has it)."""

    @property
    def shape(self) -> str: ...

    @property
    def skipped_parts(self) -> int: ...


def audit(
    inputs: Sequence[Path | str] | Mapping[str, pl.DataFrame],
    *,
    id_column: str,
    text_column: str | Sequence[str],
    roles: str | Sequence[str] | None = None,
    group: Sequence[str] = (),
    stratify: str | None = None,
    near_dup: float | None = DEFAULT_NEAR_DUP,
    seed: int = 0,
    progress: bool = False,
    engine: Engine = "local",
    ray: RayOptions | None = None,
) -> AuditReport:
    """Audit the splits of a dataset for leakage; ``report.leak`` says whether any was found.

    ``inputs`` are split files (JSONL, CSV, Parquet; the split is named by the
    file stem), folders written by ``evalkit split``, or a mapping of split
    name to polars frame. Reports groups (``group`` columns) and ids found in
    several splits, cross-split pairs of items whose normalised ``text_column``
    is equal, cross-split near-duplicate pairs (Jaccard similarity of word
    3-shingles >= ``near_dup``; None skips the check) and the classes of
    ``stratify`` per split. Raises an ``EvalkitError`` on bad input (a
    missing column names the file and the columns it has).

    ``text_column`` may hold conversations (``{role, content}`` or ShareGPT
    ``{from, value}`` messages), or be two columns (prompt and completion);
    the text compared is then the content of the ``roles`` turns (default:
    every role but system, so a system prompt shared by every example never
    makes two items duplicates).

    ``engine="ray"`` runs the same stages on a Ray cluster (``ray`` says
    which, and how) and returns the same report; ``local`` is the reference.
    """
    if near_dup is not None and not 0.0 < near_dup <= 1.0:
        raise UsageError(f"--near-dup: a Jaccard threshold in (0, 1], got {near_dup}")
    if seed < 0:
        raise UsageError(f"--seed: must be >= 0, got {seed}")
    if engine not in ("local", "ray"):
        raise UsageError(f"--engine: local or ray, got {engine!r}")
    if ray is not None and engine != "ray":
        raise UsageError("--ray-address needs --engine ray")
    text_columns = [text_column] if isinstance(text_column, str) else list(text_column)
    if not text_columns or len(text_columns) > 2:
        raise UsageError(
            f"--text: give one column, or two (prompt and completion); got {len(text_columns)}"
        )
    compared_roles = parse_roles(roles)
    options = AuditOptions(
        id=id_column,
        text=text_columns[0],
        completion=text_columns[1] if len(text_columns) > 1 else None,
        roles=list(compared_roles),
        group=list(group),
        stratify=stratify,
        near_dup=near_dup,
        seed=seed,
        engine=engine,
    )
    if engine == "ray":
        from evalkit.leakage.distributed.audit import audit_on_ray

        return audit_on_ray(
            inputs,
            options=options,
            roles=compared_roles,
            progress=progress,
            ray=ray or RayOptions(),
        )
    rows = read_rows(
        inputs,
        id_column=id_column,
        text_column=text_columns,
        roles=compared_roles,
        group=group,
        stratify=stratify,
    )
    params = choose_lsh(near_dup, seed=seed) if near_dup is not None else None
    table = rows.table
    normalized = normalize_texts(table["text"])
    distinct, text_rows, text_index = distinct_texts(normalized)
    keyed = pl.DataFrame(
        {
            "row": text_rows,
            "split": table["split"].to_numpy()[text_rows],
            "text_index": text_index,
        }
    )
    exact = findings.with_ids(findings.exact_pairs(keyed), table)
    similar = _similar(distinct, keyed, params, progress)
    near = findings.with_ids(findings.near_pairs(keyed, similar), table)
    leaks = findings.group_leaks(table, rows.group_columns) if group else None
    overlaps = findings.id_overlaps(table)
    counts = _split_counts(rows, normalized)
    return build_report(
        options, params, rows.sources, rows.texts, counts, exact, near, similar, leaks, overlaps
    )


@dataclass(frozen=True)
class SplitCounts:
    """Per split (arrays indexed by split): what the summaries count, from either engine."""

    n_items: np.ndarray
    empty_texts: np.ndarray
    duplicate_ids: np.ndarray
    n_groups: np.ndarray | None
    classes: list[str]
    class_counts: list[dict[str, int]]


def build_report(
    options: AuditOptions,
    params: LshParameters | None,
    sources: Sequence[SplitSource],
    texts: Sequence[ChatFacts],
    counts: SplitCounts,
    exact: pl.DataFrame,
    near: pl.DataFrame,
    similar: SimilarPairs,
    leaks: pl.DataFrame | None,
    overlaps: pl.DataFrame,
) -> AuditReport:
    """The report from the findings: one builder for the local and the Ray engine."""
    names = [source.name for source in sources]
    report_splits = _split_summaries(sources, texts, counts, exact, near)
    group_list = _group_leak_models(leaks, names)
    overlap_list = [
        IdOverlap(id=value, splits=[names[s] for s in splits])
        for value, splits in overlaps.iter_rows()
    ]
    exact_list = _pair_models(exact, names, DuplicatePair)
    near_list = _pair_models(near, names, NearDuplicatePair)
    totals = AuditCounts(
        group_leaks=len(group_list),
        id_overlaps=len(overlap_list),
        exact_duplicates=len(exact_list),
        near_duplicates=len(near_list),
        candidate_pairs_checked=similar.candidates,
    )
    return AuditReport(
        leak=any((totals.group_leaks, totals.id_overlaps, len(exact_list), len(near_list))),
        options=options,
        lsh=params,
        splits=report_splits,
        classes=counts.classes,
        counts=totals,
        group_leaks=group_list,
        id_overlaps=overlap_list,
        exact_duplicates=exact_list,
        near_duplicates=near_list,
    )


def _similar(
    distinct: pl.Series, keyed: pl.DataFrame, params: LshParameters | None, progress: bool
) -> SimilarPairs:
    """Near-duplicate pairs of distinct texts that can span splits (none when skipped)."""
    if params is None:
        nothing = np.zeros(0, dtype=np.int64)
        return SimilarPairs(nothing, nothing, nothing.astype(float), nothing.astype(float), 0)
    masks = findings.split_masks(
        keyed["split"].to_numpy(), keyed["text_index"].to_numpy(), len(distinct)
    )
    return find_similar_pairs(distinct, params, split_masks=masks, progress=Progress(progress))


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


def _split_counts(rows: Rows, normalized: pl.Series) -> SplitCounts:
    """What the summaries count, from the stacked rows (the local engine)."""
    table = rows.table
    n_splits = len(rows.names)
    split_of_row = table["split"].to_numpy()
    classes: list[str] = []
    class_counts: list[dict[str, int]] = [{} for _ in range(n_splits)]
    if "class" in table.columns:
        classes, class_counts = findings.class_counts(table, n_splits)
    return SplitCounts(
        n_items=np.bincount(split_of_row, minlength=n_splits),
        empty_texts=np.bincount(split_of_row[normalized.is_null().to_numpy()], minlength=n_splits),
        duplicate_ids=findings.duplicate_ids_per_split(table, n_splits),
        n_groups=_groups_per_split(table, rows.group_columns, n_splits),
        classes=classes,
        class_counts=class_counts,
    )


def _split_summaries(
    sources: Sequence[SplitSource],
    texts: Sequence[ChatFacts],
    counts: SplitCounts,
    exact: pl.DataFrame,
    near: pl.DataFrame,
) -> dict[str, SplitSummary]:
    n_splits = len(sources)
    # Rows with a duplicate in another split, counted once each, per split.
    involved = pl.concat(
        [
            frame.select(pl.col(f"{side}_row").alias("row"), pl.col(f"{side}_split").alias("split"))
            for frame in (exact, near)
            for side in ("a", "b")
        ],
        how="vertical_relaxed",
    ).unique("row")
    duplicated = np.bincount(involved["split"].to_numpy().astype(np.int64), minlength=n_splits)
    summaries = {}
    for index, source in enumerate(sources):
        chat = texts[index]
        class_counts = counts.class_counts[index]
        summaries[source.name] = SplitSummary(
            path=str(source.path) if source.path is not None else None,
            sha256=file_fingerprint(source),
            n_items=int(counts.n_items[index]),
            shape=chat.shape,
            skipped_parts=chat.skipped_parts,
            n_groups=None if counts.n_groups is None else int(counts.n_groups[index]),
            empty_texts=int(counts.empty_texts[index]),
            duplicate_ids=int(counts.duplicate_ids[index]),
            items_with_duplicate_elsewhere=int(duplicated[index]),
            class_counts=class_counts,
            missing_classes=[label for label, n in class_counts.items() if n == 0],
        )
    return summaries


def _groups_per_split(
    table: pl.DataFrame, group_columns: list[str], n_splits: int
) -> np.ndarray | None:
    if not group_columns:
        return None
    keyed = table.drop_nulls(group_columns).select("split", *group_columns).unique()
    return np.bincount(keyed["split"].to_numpy(), minlength=n_splits)
