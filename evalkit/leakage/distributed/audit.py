"""``evalkit audit --engine ray``: the audit's stages on a Ray cluster, the same report.

Read in blocks → per-key aggregations (ids and group keys, each hashed to a
partition that holds all of a key's rows, where the local engine's own
functions run) → the texts sorted, ranked, shingled and MinHashed by range
→ LSH bands, a few per round → candidates checked exactly → the findings
come to the driver, which builds the report as the local engine does.
The driver holds per-task counts and the findings (pairs, leaked groups and
ids), not the rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from evalkit.chat import Role, require_compared_roles
from evalkit.leakage import findings
from evalkit.leakage.api import SplitCounts
from evalkit.leakage.candidates import sorted_unique
from evalkit.leakage.distributed import blocks as block_io
from evalkit.leakage.distributed import index as text_index
from evalkit.leakage.distributed.session import RayOptions, RaySession, ray_session
from evalkit.leakage.inputs import SplitSource, _check_names, split_sources
from evalkit.leakage.minhash import LshParameters, choose_lsh
from evalkit.leakage.models import AuditOptions, AuditReport
from evalkit.leakage.progress import Progress
from evalkit.leakage.search import SimilarPairs

ROWS_PER_PARTITION = 250_000


def partitions_for(session: RaySession, n_rows: int, options: RayOptions) -> int:
    """Partitions of each shuffle: every CPU busy, and about 250k rows each (at least 2)."""
    if options.partitions is not None:
        return max(2, options.partitions)
    return max(2, session.cpus, -(-n_rows // ROWS_PER_PARTITION))


def audit_on_ray(
    inputs: Sequence[Path | str] | Mapping[str, pl.DataFrame],
    *,
    options: AuditOptions,
    roles: Sequence[Role],
    progress: bool,
    ray: RayOptions,
) -> AuditReport:
    """The audit of :func:`evalkit.leakage.api.audit`, computed on a Ray cluster.

    The findings are those of the local engine, computed by its own functions
    on partitions; the report is built by the same builder.
    """
    from evalkit.leakage.api import build_report

    frames: list[pl.DataFrame | None]
    if isinstance(inputs, Mapping):
        sources = [SplitSource(name=str(name), path=None) for name in inputs]
        _check_names([s.name for s in sources], [f"frame {s.name!r}" for s in sources])
        frames = list(inputs.values())
    else:
        sources = split_sources([Path(path) for path in inputs])
        frames = [None] * len(sources)
    near_dup = options.near_dup
    params = choose_lsh(near_dup, seed=options.seed) if near_dup is not None else None
    text_columns = [options.text, *filter(None, [options.completion])]
    with ray_session(ray, Progress(progress)) as session:
        sizes = [s.path.stat().st_size if s.path is not None else 0 for s in sources]
        rows = sum(frame.height for frame in frames if frame is not None) + sum(sizes) // 200
        parts = partitions_for(session, rows, ray)
        spec = block_io.ReadSpec(
            options.id,
            tuple(text_columns),
            tuple(roles),
            tuple(options.group),
            options.stratify,
            len(sources),
            parts,
        )
        read = _read_all(session, spec, sources, frames, ray)
        found = _findings(session, spec, read, params, ray)
    return build_report(
        options,
        params,
        sources,
        found.texts,
        found.counts,
        found.exact,
        found.near,
        found.similar,
        found.leaks,
        found.overlaps,
    )


class _Read:
    """The blocks of every split as read: summaries on the driver, parts on the cluster."""

    def __init__(self, summaries: list[block_io.BlockSummary], outputs: list[list[Any]]) -> None:
        self.summaries = summaries
        self.outputs = outputs


def _read_all(
    session: RaySession,
    spec: block_io.ReadSpec,
    sources: list[SplitSource],
    frames: list[pl.DataFrame | None],
    options: RayOptions,
) -> _Read:
    read = session.remote(block_io.read_block, num_returns=2 + 2 * spec.parts)
    stored = [session.put(frame) if frame is not None else None for frame in frames]
    planned = block_io.plan_blocks(sources, options.block_bytes)
    outputs = [list(read.remote(spec, b, stored[b.split])) for b in planned]
    summaries = session.run("reading blocks", [out[0] for out in outputs])
    again = block_io.splits_to_reread(summaries, planned)
    if again:  # read those splits whole: types decided by the whole file, errors as local
        kept = [i for i, b in enumerate(planned) if b.split not in again]
        whole = [block_io.Block(split, sources[split]) for split in sorted(again)]
        redone = [list(read.remote(spec, b, stored[b.split])) for b in whole]
        redone_summaries = session.run("reading splits whole", [out[0] for out in redone])
        merged = [(planned[i], summaries[i], outputs[i]) for i in kept] + list(
            zip(whole, redone_summaries, redone, strict=True)
        )
        merged.sort(key=lambda item: (item[0].split, item[0].start or 0))
        summaries = [item[1] for item in merged]
        outputs = [item[2] for item in merged]
    _require_roles(summaries, spec.roles)
    return _Read(summaries, outputs)


class _ChatFacts:
    """What :func:`require_compared_roles` asks of a split's conversations, from its blocks."""

    def __init__(self, summaries: list[block_io.BlockSummary]) -> None:
        self.is_conversation = any(s.kind == "conversation" for s in summaries)
        self.rows = sum(s.n_rows for s in summaries)
        self.present = set().union(*(s.roles_present for s in summaries))

    def __len__(self) -> int:
        return self.rows

    def roles_present(self) -> set[str]:
        return self.present


def _require_roles(summaries: list[block_io.BlockSummary], roles: Sequence[Role]) -> None:
    by_split: dict[int, list[block_io.BlockSummary]] = {}
    for summary in summaries:
        by_split.setdefault(summary.split, []).append(summary)
    facts = [_ChatFacts(by_split[split]) for split in sorted(by_split)]
    require_compared_roles(facts, roles)  # type: ignore[arg-type]


@dataclass(frozen=True)
class _SplitText:
    """A split's text column facts for its summary, gathered from its blocks."""

    shape: str
    skipped_parts: int


@dataclass(frozen=True)
class _Findings:
    """Everything the report is built from, as the local engine computes it."""

    texts: list[_SplitText]
    counts: SplitCounts
    exact: pl.DataFrame
    near: pl.DataFrame
    similar: SimilarPairs
    leaks: pl.DataFrame | None
    overlaps: pl.DataFrame


def _split_counts(
    summaries: list[block_io.BlockSummary],
    n_splits: int,
    repeated: np.ndarray,
    n_groups: np.ndarray | None,
    stratified: bool,
) -> tuple[list[_SplitText], SplitCounts]:
    n_items = np.zeros(n_splits, dtype=np.int64)
    empty = np.zeros(n_splits, dtype=np.int64)
    skipped = np.zeros(n_splits, dtype=np.int64)
    seen: list[dict[str, int]] = [{} for _ in range(n_splits)]
    shaping: dict[int, block_io.BlockSummary] = {}  # a split's first block with rows
    for summary in summaries:
        n_items[summary.split] += summary.n_rows
        empty[summary.split] += summary.empty_texts
        skipped[summary.split] += summary.skipped_parts
        current = shaping.get(summary.split)
        if current is None or (not current.n_rows and summary.n_rows):
            shaping[summary.split] = summary
        for label, count in summary.classes.items():
            seen[summary.split][label] = seen[summary.split].get(label, 0) + count
    classes = sorted(set().union(*seen)) if stratified else []
    class_counts = [{label: mine.get(label, 0) for label in classes} for mine in seen]
    shapes = [shaping[split].shape if split in shaping else "text" for split in range(n_splits)]
    texts = [_SplitText(shape, int(n)) for shape, n in zip(shapes, skipped, strict=True)]
    counts = SplitCounts(n_items, empty, repeated, n_groups, classes, class_counts)
    return texts, counts


def _findings(
    session: RaySession,
    spec: block_io.ReadSpec,
    read: _Read,
    params: LshParameters | None,
    options: RayOptions,
) -> _Findings:
    parts, n_splits = spec.parts, spec.n_splits
    summaries, outputs = read.summaries, read.outputs
    first = block_io.first_rows(summaries)
    ids = session.remote(_aggregate_ids, num_returns=2)
    id_results = [ids.remote(n_splits, *[out[2 + k] for out in outputs]) for k in range(parts)]
    index = text_index.sort_texts(
        session,
        [(out[1], int(first[i])) for i, out in enumerate(outputs)],
        [s.sample for s in summaries],
        params or choose_lsh(0.8),
        params is not None,
        parts,
    )
    similar = (
        text_index.similar_pairs(
            session, index, params, cross=True, per_round=options.bands_per_round
        )
        if params is not None
        else None
    )
    overlaps = session.run("ids in several splits", [r[0] for r in id_results])
    repeated = sum(session.get("ids in several splits", [r[1] for r in id_results]))
    leaks, n_groups = None, None
    if spec.group:
        groups = session.remote(_aggregate_groups, num_returns=2)
        group_columns = [f"group_{k}" for k in range(len(spec.group))]
        results = [
            groups.remote(group_columns, n_splits, *[out[2 + parts + k] for out in outputs])
            for k in range(parts)
        ]
        leak_frames = session.run("groups in several splits", [r[0] for r in results])
        leaks = pl.concat(leak_frames).sort("label", "split")
        n_groups = sum(session.get("groups in several splits", [r[1] for r in results]))
    exact_frames = session.run("exact duplicates", index.exact)
    exact = pl.concat(exact_frames).sort(["a_split", "b_split", "a", "b"])
    pairs = _as_similar(similar)
    involved = sorted_unique(np.concatenate([pairs.left, pairs.right]))
    keyed = text_index.rows_of(session, index, involved) if len(involved) else _no_rows()
    near = findings.with_ids(
        findings.near_pairs(keyed.select("row", "split", "text_index"), pairs),
        keyed.select("row", "id"),
    )
    texts, counts = _split_counts(
        summaries,
        n_splits,
        np.asarray(repeated, dtype=np.int64),
        n_groups,
        spec.stratify is not None,
    )
    return _Findings(
        texts=texts,
        counts=counts,
        exact=exact,
        near=near,
        similar=pairs,
        leaks=leaks,
        overlaps=pl.concat(overlaps).sort("id"),
    )


def _no_rows() -> pl.DataFrame:
    return pl.DataFrame(
        schema={"row": pl.Int64, "split": pl.Int64, "text_index": pl.Int64, "id": pl.String}
    )


def _as_similar(pairs: Any) -> SimilarPairs:
    if pairs is None:
        nothing = np.zeros(0, dtype=np.int64)
        return SimilarPairs(nothing, nothing, nothing.astype(float), nothing.astype(float), 0)
    return SimilarPairs(pairs.left, pairs.right, pairs.similarity, pairs.estimate, pairs.candidates)


def _aggregate_ids(n_splits: int, *parts: pl.DataFrame) -> tuple[pl.DataFrame, np.ndarray]:
    """Ids in several splits, and rows with an id repeated in their split, for one hash part."""
    table = _stack(parts, {"split": pl.Int64, "id": pl.String})
    return findings.id_overlaps(table), findings.duplicate_ids_per_split(table, n_splits)


def _aggregate_groups(
    group_columns: list[str], n_splits: int, *parts: pl.DataFrame
) -> tuple[pl.DataFrame, np.ndarray]:
    """Groups in several splits, and distinct groups per split, for one hash part."""
    from evalkit.leakage.api import _groups_per_split

    schema = {"split": pl.Int64, **dict.fromkeys(group_columns, pl.String)}
    table = _stack(parts, schema)
    counts = _groups_per_split(table, group_columns, n_splits)
    assert counts is not None
    return findings.group_leaks(table, group_columns), counts


def _stack(parts: Sequence[pl.DataFrame], schema: dict[str, Any]) -> pl.DataFrame:
    frames = [part for part in parts if part.width]
    return pl.concat(frames, how="vertical_relaxed") if frames else pl.DataFrame(schema=schema)
