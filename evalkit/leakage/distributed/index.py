"""The near-duplicate search on Ray: range-sort the texts, band them, check candidates.

Stages (each a set of tasks; the driver holds object references, per-task
counts and the findings, never the texts):

1. **Sort** — every block's normalised texts go to a range partition (the
   boundaries come from a sample of each block); a partition's distinct
   texts are sorted, so a text's *rank* (its partition's first rank plus its
   position) is the local engine's ``text_index``. The same task shingles and
   MinHashes its texts and finds the exact duplicates among its rows (all
   rows of one text are in one partition).
2. **Bands**, a few per round — every text partition emits (band, key, rank,
   split mask) records cut by key; a band task forms the buckets and their
   candidate pairs with the local engine's code: the pairs that may cross
   splits (audit), or, for clusters, every pair of a bucket of up to 64
   texts; larger buckets are kept for the pivot rounds.
3. **Check** — candidate codes are cut by code, made distinct, and checked by
   exact Jaccard after fetching only the candidates' shingles from the text
   partitions that hold them (a join by rank range). Large buckets run the
   local engine's pivot rounds on their members' shingles, fetched the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from evalkit.leakage.distributed import tasks
from evalkit.leakage.distributed.checks import CheckedPairs
from evalkit.leakage.distributed.partitions import range_boundaries
from evalkit.leakage.distributed.session import RaySession
from evalkit.records import LshParameters


@dataclass(frozen=True)
class TextIndex:
    """The sorted text partitions on the cluster: references and rank ranges."""

    n: int  # distinct texts
    first_ranks: np.ndarray  # int64, partitions + 1: partition k holds ranks [k, k+1)
    partitions: list[Any]  # TextPartition refs
    exact: list[Any]  # refs of each partition's cross-split exact pairs (with ids)

    @property
    def parts(self) -> int:
        """Text partitions."""
        return len(self.partitions)


def sort_texts(
    session: RaySession,
    blocks: Sequence[tuple[Any, int]],
    samples: Sequence[pl.Series],
    params: LshParameters,
    near: bool,
    parts: int,
) -> TextIndex:
    """Route blocks (frame ref, first row) to text ranges; rank, shingle and hash them."""
    boundaries = range_boundaries(
        pl.concat([s for s in samples if len(s)])
        if any(len(s) for s in samples)
        else pl.Series("text", [], dtype=pl.String),
        parts,
    )
    route = session.remote(tasks.route_texts, num_returns=parts)
    routed = [route.remote(frame, first_row, boundaries, parts) for frame, first_row in blocks]
    rank = session.remote(tasks.rank_partition, num_returns=3)
    ranked = [rank.remote(params, near, *[r[k] for r in routed]) for k in range(parts)]
    stage = "sorting and hashing texts" if near else "sorting texts"
    counts = session.run(stage, [r[0] for r in ranked])
    first_ranks = np.zeros(parts + 1, dtype=np.int64)
    np.cumsum(counts, out=first_ranks[1:])
    return TextIndex(
        n=int(first_ranks[-1]),
        first_ranks=first_ranks,
        partitions=[r[1] for r in ranked],
        exact=[r[2] for r in ranked],
    )


def _band_rounds(params: LshParameters, per_round: int) -> list[range]:
    step = max(1, per_round)
    return [range(b, min(b + step, params.bands)) for b in range(0, params.bands, step)]


def similar_pairs(
    session: RaySession,
    index: TextIndex,
    params: LshParameters,
    *,
    cross: bool,
    per_round: int,
    splits: int = 0,
    listing: int = 0,
) -> CheckedPairs:
    """Near-duplicate pairs of ranks, by scope. Scope -1: all that may cross splits
    (``cross``), else links enough to connect every cluster (the local engine's pivot
    rule for large buckets). Scopes 0 .. ``splits`` - 1: links inside each split.

    With ``listing`` (``audit --within``), the pairs that the listing of each
    split needs come too, under scope ``listed_scope(split)`` (-2 - split):
    the first ``listing`` passing pairs of its large buckets, by rank (the pairs
    of its small buckets are all among its links already).
    """
    parts = index.parts
    if index.n < 2:
        return CheckedPairs.concat([])
    code_pieces: list[list[Any]] = [[] for _ in range(parts)]
    larges: list[Any] = []
    band_map = session.remote(tasks.band_map, num_returns=parts)
    band_reduce = session.remote(tasks.band_reduce, num_returns=parts + 2)
    shape = (index.n, cross, splits, parts)
    rounds = _band_rounds(params, per_round)
    for number, bands in enumerate(rounds, start=1):
        mapped = [
            band_map.remote(partition, int(index.first_ranks[k]), bands, params.rows, parts, cross)
            for k, partition in enumerate(index.partitions)
        ]
        reduced = [band_reduce.remote(*shape, *[m[q] for m in mapped]) for q in range(parts)]
        # One round at a time: a band task holds its share of this round's records only.
        session.run(
            f"bands {bands.start + 1}-{bands.stop} ({number}/{len(rounds)})",
            [r[0] for r in reduced],
        )
        for r in reduced:
            for d in range(parts):
                code_pieces[d].append(r[1 + d])
            larges.append(r[parts + 1])
    checked = _check_candidates(session, index, params, code_pieces)
    if cross and not splits:
        return checked
    found = [checked, _pivot_rounds(session, index, params, larges)]
    if listing:
        found.append(_listing_rounds(session, index, params, larges, listing))
    return CheckedPairs.concat(found)


def _fetch(session: RaySession, index: TextIndex, requests: list[list[Any]]) -> list[list[Any]]:
    """For each requesting task j (its ranks per text partition), the subsets it asked for."""
    extract = session.remote(tasks.extract_for, num_returns=max(2, len(requests)))
    padded = requests if len(requests) > 1 else [*requests, requests[0]]
    extracted = [
        extract.remote(partition, int(index.first_ranks[k]), *[r[k] for r in padded])
        for k, partition in enumerate(index.partitions)
    ]
    return [[extracted[k][j] for k in range(index.parts)] for j in range(len(requests))]


def _check_candidates(
    session: RaySession, index: TextIndex, params: LshParameters, pieces: list[list[Any]]
) -> CheckedPairs:
    prepare = session.remote(tasks.distinct_codes, num_returns=1 + index.parts)
    prepared = [prepare.remote(index.first_ranks, *piece) for piece in pieces]
    subsets = _fetch(session, index, [list(p[1:]) for p in prepared])
    check = session.remote(tasks.check_partition)
    checked = [
        check.remote(index.n, params.threshold, params.num_perm, p[0], *subsets[d])
        for d, p in enumerate(prepared)
    ]
    return CheckedPairs.concat(session.run("checking candidate pairs", checked))


def _pivot_rounds(
    session: RaySession, index: TextIndex, params: LshParameters, larges: list[Any]
) -> CheckedPairs:
    requests_of = session.remote(tasks.large_requests, num_returns=index.parts)
    requests = [list(requests_of.remote(index.first_ranks, large)) for large in larges]
    subsets = _fetch(session, index, requests)
    pivot = session.remote(tasks.pivot_partition)
    linked = [
        pivot.remote(params.threshold, params.num_perm, large, *subsets[j])
        for j, large in enumerate(larges)
    ]
    return CheckedPairs.concat(session.run("checking large buckets", linked))


def _listing_rounds(
    session: RaySession, index: TextIndex, params: LshParameters, larges: list[Any], keep: int
) -> CheckedPairs:
    """The first ``keep`` passing pairs of each split's large buckets, per band task."""
    requests_of = session.remote(tasks.large_requests, num_returns=index.parts)
    requests = [list(requests_of.remote(index.first_ranks, large)) for large in larges]
    subsets = _fetch(session, index, requests)
    listing = session.remote(tasks.listing_partition)
    listed = [
        listing.remote(index.n, params.threshold, params.num_perm, keep, large, *subsets[j])
        for j, large in enumerate(larges)
    ]
    return CheckedPairs.concat(session.run("listing pairs within splits", listed))


def rows_of(session: RaySession, index: TextIndex, ranks: np.ndarray) -> pl.DataFrame:
    """``row, split, text_index, id`` of every row whose text has one of the (sorted) ranks."""
    pieces = tasks.requests_by_partition(np.asarray(ranks, dtype=np.int64), index.first_ranks)
    lookup = session.remote(tasks.rows_of_texts)
    frames = session.run(
        "collecting rows",
        [
            lookup.remote(partition, int(index.first_ranks[k]), pieces[k])
            for k, partition in enumerate(index.partitions)
        ],
    )
    return pl.concat(frames).sort("row")
