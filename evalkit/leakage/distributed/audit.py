"""``evalkit audit --engine ray``: the audit's stages on a Ray cluster, the same report.

Read in blocks → per-key aggregations (ids, group keys and openings, each
hashed to a partition that holds all of a key's rows, where the local
engine's own functions run) → the texts sorted, ranked, shingled and
MinHashed by range → LSH bands, a few per round → candidates checked
exactly → the findings come to the driver, which builds the report with the
local engine's builder. The driver holds per-task counts and the findings
(pairs, leaked groups and ids, clusters' partial counts), never the rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from evalkit.chat import Role
from evalkit.leakage import findings, within_pairs
from evalkit.leakage import within as local_within
from evalkit.leakage.assemble import (
    Findings,
    SplitCounts,
    WithinListing,
    build_report,
    groups_per_split,
)
from evalkit.leakage.candidates import sorted_unique
from evalkit.leakage.distributed import blocks as block_io
from evalkit.leakage.distributed import index as text_index
from evalkit.leakage.distributed import within as partial_within
from evalkit.leakage.distributed.checks import CheckedPairs, listed_scope
from evalkit.leakage.distributed.reading import ReadBlocks, read_all
from evalkit.leakage.distributed.session import RayOptions, RaySession, ray_session
from evalkit.leakage.inputs import SplitSource, _check_names, split_sources
from evalkit.leakage.minhash import choose_lsh
from evalkit.leakage.progress import Progress
from evalkit.leakage.search import SimilarPairs
from evalkit.leakage.within_pairs import LIMIT
from evalkit.records import LshParameters
from evalkit.records._audit import AuditOptions, AuditReport, WithinSplit

ROWS_PER_PARTITION = 250_000
BYTES_PER_ROW_GUESS = 200  # only sizes the partitions: any count gives the same answer

if TYPE_CHECKING:
    from evalkit.io import TableLike


def partitions_for(session: RaySession, n_rows: int, options: RayOptions) -> int:
    """Partitions of each shuffle: every CPU busy, and about 250k rows each (at least 2)."""
    if options.partitions is not None:
        return max(2, options.partitions)
    return max(2, session.cpus, -(-n_rows // ROWS_PER_PARTITION))


def audit_on_ray(
    inputs: Sequence[Path | str] | Mapping[str, TableLike],
    *,
    options: AuditOptions,
    roles: Sequence[Role],
    roles_given: bool,
    progress: bool,
    ray: RayOptions,
) -> AuditReport:
    """The audit of :func:`evalkit.leakage.api.audit`, computed on a Ray cluster."""
    from evalkit.leakage.inputs import require_conversations

    frames: list[pl.DataFrame | None]
    if isinstance(inputs, Mapping):
        from evalkit.io import is_path, read_table

        sources, frames = [], []
        for name, value in inputs.items():  # files are read on the cluster, frames sent
            if is_path(value):
                sources.append(SplitSource(name=str(name), path=Path(value)))
                frames.append(None)
                continue
            given = read_table(value, name=f"split {str(name)!r}", ids=[options.id])
            sources.append(SplitSource(name=str(name), path=None, sha256=given.sha256))
            frames.append(given.frame)
        _check_names([s.name for s in sources], [f"split {s.name!r}" for s in sources])
    else:
        sources = split_sources([Path(path) for path in inputs])
        frames = [None] * len(sources)
    from evalkit.io import hash_early, sha256_input

    # The files are read on the cluster; the driver hashes them meanwhile.
    hash_early([s.path for s in sources if s.path is not None])
    near_dup = options.near_dup
    params = choose_lsh(near_dup, seed=options.seed) if near_dup is not None else None
    text_columns = options.columns or [options.text, *filter(None, [options.completion])]
    with ray_session(ray, Progress(progress)) as session:
        sizes = [s.path.stat().st_size if s.path is not None else 0 for s in sources]
        rows = sum(f.height for f in frames if f is not None) + sum(sizes) // BYTES_PER_ROW_GUESS
        parts = partitions_for(session, rows, ray)
        spec = block_io.ReadSpec(
            options.id,
            tuple(text_columns),
            tuple(roles),
            tuple(options.group),
            options.stratify,
            len(sources),
            parts,
            options.opening_words,
            options.system,
            options.tools,
        )
        read = read_all(session, spec, sources, frames, ray)
        conversations = any(s.kind == "conversation" for s in read.summaries)
        require_conversations(roles_given, conversations, options)
        names = [source.name for source in sources]
        texts, found = _findings(session, spec, read, params, options, ray, names)
    sources = [
        s if s.path is None else SplitSource(s.name, s.path, sha256_input(s.path)) for s in sources
    ]
    return build_report(options, params, sources, texts, found)


@dataclass(frozen=True)
class _SplitText:
    """A split's text column facts for its summary, gathered from its blocks."""

    shape: str
    skipped_parts: int
    json_text: bool
    tool_call_count: int


def _split_counts(
    read: ReadBlocks, spec: block_io.ReadSpec, repeated: np.ndarray, n_groups: np.ndarray | None
) -> tuple[list[_SplitText], SplitCounts]:
    n_splits = spec.n_splits
    n_items = np.zeros(n_splits, dtype=np.int64)
    empty = np.zeros(n_splits, dtype=np.int64)
    skipped = np.zeros(n_splits, dtype=np.int64)
    tool_calls = np.zeros(n_splits, dtype=np.int64)
    seen: list[dict[str, int]] = [{} for _ in range(n_splits)]
    shaping: dict[int, block_io.BlockSummary] = {}  # a split's first block with rows
    for summary in read.summaries:
        n_items[summary.split] += summary.n_rows
        empty[summary.split] += summary.empty_texts
        skipped[summary.split] += summary.skipped_parts
        tool_calls[summary.split] += summary.tool_calls
        current = shaping.get(summary.split)
        if current is None or (not current.n_rows and summary.n_rows):
            shaping[summary.split] = summary
        for label, count in summary.classes.items():
            seen[summary.split][label] = seen[summary.split].get(label, 0) + count
    classes = sorted(set().union(*seen)) if spec.stratify is not None else []
    class_counts = [{label: mine.get(label, 0) for label in classes} for mine in seen]
    texts = [
        _SplitText(
            shaping[split].shape if split in shaping else "text",
            int(skipped[split]),
            shaping[split].json_text if split in shaping else False,
            int(tool_calls[split]),
        )
        for split in range(n_splits)
    ]
    return texts, SplitCounts(n_items, empty, repeated, n_groups, classes, class_counts)


def _findings(
    session: RaySession,
    spec: block_io.ReadSpec,
    read: ReadBlocks,
    params: LshParameters | None,
    options: AuditOptions,
    ray: RayOptions,
    names: list[str],
) -> tuple[list[_SplitText], Findings]:
    parts, n_splits = spec.parts, spec.n_splits
    first = block_io.first_rows(read.summaries)
    ids = session.remote(_aggregate_ids, num_returns=2)
    id_results = [ids.remote(n_splits, *read.part(0, k)) for k in range(parts)]
    top = session.remote(partial_within.top_openings)
    opening_tops = [top.remote(*read.part(2, k)) for k in range(parts)]
    index = text_index.sort_texts(
        session,
        list(zip(read.texts(), first.tolist(), strict=True)),
        [s.sample for s in read.summaries],
        params or choose_lsh(0.8),
        params is not None,
        parts,
    )
    read.release_texts()  # sorted into the text partitions now
    similar = CheckedPairs.concat([])
    if params is not None:
        similar = text_index.similar_pairs(
            session,
            index,
            params,
            cross=True,
            per_round=ray.bands_per_round,
            splits=n_splits,
            listing=LIMIT + 1 if options.within else 0,
        )
    overlaps = session.run("ids in several splits", [r[0] for r in id_results])
    repeated = sum(session.get("ids in several splits", [r[1] for r in id_results]))
    leaks, n_groups = _group_findings(session, spec, read)
    exact = _sorted(session.run("exact duplicates", index.exact), ["a_split", "b_split", "a", "b"])
    across = _as_similar(similar.of_scope(-1))
    involved = sorted_unique(np.concatenate([similar.left, similar.right]))
    keyed = text_index.rows_of(session, index, involved) if len(involved) else _no_rows()
    near = findings.with_ids(
        findings.near_pairs(keyed.select("row", "split", "text_index"), across),
        keyed.select("row", "id"),
    )
    texts, counts = _split_counts(read, spec, np.asarray(repeated, dtype=np.int64), n_groups)
    within = _within_summary(
        session, index, similar, counts.n_items, names, opening_tops, params is not None
    )
    listing = None
    if options.within:
        listing = _within_listing(session, index, similar, keyed, n_splits, params is not None)
    found = Findings(
        counts=counts,
        exact=exact,
        near=near,
        candidates=similar.candidates.get(-1, 0),
        leaks=leaks,
        overlaps=pl.concat(overlaps).sort("id"),
        within=within,
        listing=listing,
    )
    return texts, found


def _group_findings(
    session: RaySession, spec: block_io.ReadSpec, read: ReadBlocks
) -> tuple[pl.DataFrame | None, np.ndarray | None]:
    if not spec.group:
        return None, None
    groups = session.remote(_aggregate_groups, num_returns=2)
    columns = [f"group_{k}" for k in range(len(spec.group))]
    results = [groups.remote(columns, spec.n_splits, *read.part(1, k)) for k in range(spec.parts)]
    leaks = pl.concat(session.run("groups in several splits", [r[0] for r in results]))
    n_groups = sum(session.get("groups in several splits", [r[1] for r in results]))
    return leaks.sort("label", "split"), np.asarray(n_groups, dtype=np.int64)


def _within_summary(
    session: RaySession,
    index: text_index.TextIndex,
    similar: CheckedPairs,
    n_items: np.ndarray,
    names: list[str],
    opening_tops: list[Any],
    near: bool,
) -> dict[str, WithinSplit]:
    """``report.within`` from the text partitions' partial cluster counts."""
    linked = partial_within.split_components(similar, len(n_items))
    partial = session.remote(_cluster_partials)
    pieces = []
    for k, partition in enumerate(index.partitions):
        lo, hi = int(index.first_ranks[k]), int(index.first_ranks[k + 1])
        mine = linked.filter(pl.col("text_index").is_between(lo, hi, closed="left"))
        pieces.append(partial.remote(partition, lo, mine, len(n_items)))
    partials = session.run("repetition within splits", pieces)
    tops = session.run("repeated openings", opening_tops)
    summary = partial_within.summaries(names, n_items, partials, tops, near)
    return {name: WithinSplit.model_validate(value) for name, value in summary.items()}


def _cluster_partials(partition: Any, first_rank: int, linked: pl.DataFrame, n_splits: int) -> Any:
    return partial_within.cluster_partials(partition.keyed, first_rank, linked, n_splits)


def _within_listing(
    session: RaySession,
    index: text_index.TextIndex,
    similar: CheckedPairs,
    keyed: pl.DataFrame,
    n_splits: int,
    near: bool,
) -> WithinListing:
    """``--within``'s pairs: each text partition lists its first exact pairs per split (all
    rows of a text are in one partition), and the driver keeps the first of them all; the
    near pairs of texts are the links and the listing's large-bucket pairs."""
    listing = session.remote(_exact_within, num_returns=2)
    pieces = [
        listing.remote(partition, int(first))
        for partition, first in zip(index.partitions, index.first_ranks[:-1], strict=True)
    ]
    frames = session.run("exact duplicates within splits", [piece[0] for piece in pieces])
    totals = session.get("exact duplicates within splits", [piece[1] for piece in pieces])
    exact = within_pairs.first_per_split(pl.concat(frames), within_pairs.EXACT_ORDER, LIMIT)
    summed = pl.concat(totals).group_by("split").agg(pl.sum("pairs"))
    near_pairs: pl.DataFrame | None = None
    near_cut: list[int] = []
    if near:
        texts = []
        for split in range(n_splits):
            for scope in (split, listed_scope(split)):  # small buckets' pairs are all links
                mine = similar.of_scope(scope)
                texts.append(
                    within_pairs.text_pair_frame(
                        split, mine.left, mine.right, mine.similarity, mine.estimate
                    )
                )
        pairs, near_cut = within_pairs.near_row_pairs(pl.concat(texts), keyed)
        near_pairs = _named(pairs, keyed)
    return WithinListing(
        exact=local_within.smaller_id_first(exact.drop("text_index")),
        near=near_pairs,
        exact_truncated=within_pairs.over_limit(summed),
        near_truncated=near_cut,
    )


def _exact_within(partition: Any, first_rank: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    keyed = partition.keyed.with_columns(pl.col("text_index") + first_rank)
    return within_pairs.exact_listing(keyed)


def _named(pairs: pl.DataFrame, keyed: pl.DataFrame) -> pl.DataFrame:
    if pairs.height == 0:
        return pairs
    return local_within.smaller_id_first(findings.with_ids(pairs, keyed.select("row", "id")))


def _sorted(frames: list[pl.DataFrame], keys: list[str]) -> pl.DataFrame:
    filled = [frame for frame in frames if frame.height]
    if not filled:
        return frames[0] if frames else pl.DataFrame()
    return pl.concat(filled, how="vertical_relaxed").sort(keys)


def _no_rows() -> pl.DataFrame:
    return pl.DataFrame(
        schema={"row": pl.Int64, "split": pl.Int64, "text_index": pl.Int64, "id": pl.String}
    )


def _as_similar(pairs: CheckedPairs) -> SimilarPairs:
    return SimilarPairs(
        pairs.left, pairs.right, pairs.similarity, pairs.estimate, sum(pairs.candidates.values())
    )


def _aggregate_ids(n_splits: int, *parts: pl.DataFrame) -> tuple[pl.DataFrame, np.ndarray]:
    """Ids in several splits, and rows with an id repeated in their split, for one hash part."""
    table = _stack(parts, {"split": pl.Int64, "id": pl.String})
    return findings.id_overlaps(table), findings.duplicate_ids_per_split(table, n_splits)


def _aggregate_groups(
    group_columns: list[str], n_splits: int, *parts: pl.DataFrame
) -> tuple[pl.DataFrame, np.ndarray]:
    """Groups in several splits, and distinct groups per split, for one hash part."""
    schema = {"split": pl.Int64, **dict.fromkeys(group_columns, pl.String)}
    table = _stack(parts, schema)
    counts = groups_per_split(table, group_columns, n_splits)
    assert counts is not None
    return findings.group_leaks(table, group_columns), counts


def _stack(parts: Sequence[pl.DataFrame], schema: dict[str, Any]) -> pl.DataFrame:
    frames = [part for part in parts if part.width]
    return pl.concat(frames, how="vertical_relaxed") if frames else pl.DataFrame(schema=schema)
