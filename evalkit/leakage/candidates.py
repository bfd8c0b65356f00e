"""Candidate pairs from LSH buckets, enumerated without Python loops over pairs.

A *bucket* is a set of texts with equal keys in one band. Pairs are produced
as blocks: "every member of segment A with every member of segment B" (a
cartesian block) or "every later member of the same segment" (a triangle),
expanded with ``np.repeat`` arithmetic. Pairs are encoded as one int64
``low * n + high`` so that duplicates vanish in one sort.

The same bucket often recurs in many bands (a cluster of near-identical
texts agrees on every band), so buckets with identical member sets are
merged across bands *before* any pair is enumerated: a cluster of thousands
of texts is expanded once, not once per band.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from evalkit.leakage.shingles import splitmix64


@dataclass(frozen=True)
class Buckets:
    """The buckets of one band with two or more members: ``members[starts[i]:starts[i+1]]``."""

    members: np.ndarray  # int64 text indices, ascending within each bucket
    starts: np.ndarray  # int64, n_buckets + 1 offsets

    @property
    def sizes(self) -> np.ndarray:
        """Members per bucket."""
        return np.diff(self.starts)


def sorted_unique(values: np.ndarray) -> np.ndarray:
    """Sorted distinct values (a sort and a comparison: faster than ``np.unique`` here)."""
    ordered = np.sort(values)
    keep = np.ones(len(ordered), dtype=bool)
    keep[1:] = ordered[1:] != ordered[:-1]
    return ordered[keep]


def buckets_of(keys: np.ndarray) -> Buckets:
    """Group texts by band key, keeping only the groups of two or more texts."""
    # An unstable sort (half the time of a stable one on 64-bit keys, 25 times per
    # audit); the few texts that share a bucket are then put in ascending order,
    # as a stable sort leaves them.
    n = len(keys)
    order = np.argsort(keys)
    ordered = keys[order]
    new = np.ones(n, dtype=bool)
    new[1:] = ordered[1:] != ordered[:-1]
    first = np.flatnonzero(new)
    sizes = np.diff(np.append(first, n))
    shared = sizes >= 2
    members = order[np.repeat(shared, sizes)].astype(np.int64)
    starts = np.zeros(int(shared.sum()) + 1, dtype=np.int64)
    np.cumsum(sizes[shared], out=starts[1:])
    owner = np.repeat(np.arange(len(starts) - 1, dtype=np.int64), sizes[shared])
    ranked = owner * n + members
    ranked.sort()
    return Buckets(members=ranked % n if n else members, starts=starts)


def expand_blocks(
    a_start: np.ndarray, a_size: np.ndarray, b_start: np.ndarray, b_size: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Every (i, j) with i in [a_start, a_start + a_size) and j in the b range, per block."""
    counts = (a_size * b_size).astype(np.int64)
    keep = counts > 0
    a_start, b_start, b_size, counts = a_start[keep], b_start[keep], b_size[keep], counts[keep]
    block = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    first = np.zeros(len(counts), dtype=np.int64)
    np.cumsum(counts[:-1], out=first[1:])
    k = np.arange(int(counts.sum()), dtype=np.int64) - first[block]
    width = b_size[block]
    return a_start[block] + k // width, b_start[block] + k % width


def triangle_pairs(starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every (i, j), i < j, of positions inside the same segment [starts[s], starts[s+1])."""
    sizes = np.diff(starts)
    positions = np.arange(int(starts[-1]) if len(starts) else 0, dtype=np.int64)
    end = np.repeat(starts[1:], sizes)
    return expand_blocks(positions, np.ones_like(positions), positions + 1, end - positions - 1)


def pair_codes(left: np.ndarray, right: np.ndarray, n: int) -> np.ndarray:
    """Encode unordered pairs of text indices as ``low * n + high`` (int64)."""
    low, high = np.minimum(left, right), np.maximum(left, right)
    return low.astype(np.int64) * n + high


def decode_pairs(codes: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Inverse of :func:`pair_codes`: (low, high) text indices."""
    return codes // n, codes % n


def all_pairs(buckets: Buckets, n: int) -> np.ndarray:
    """Codes of every pair of texts that share a bucket."""
    i, j = triangle_pairs(buckets.starts)
    return sorted_unique(pair_codes(buckets.members[i], buckets.members[j], n))


def cross_class_pairs(buckets: Buckets, text_class: np.ndarray, n: int) -> np.ndarray:
    """Codes of the bucket pairs whose texts may lie in different splits.

    ``text_class`` is a bit mask per text: the splits it occurs in. Two texts
    whose masks are one and the same single split cannot leak into each
    other, and in a bucket of a templated text repeated thousands of times in
    one split such pairs are almost all of them, so they are never produced:
    members are ordered by mask, and pairs are made only between runs of
    different masks, and inside runs whose mask names several splits.
    """
    bucket_of = np.repeat(np.arange(len(buckets.sizes), dtype=np.int64), buckets.sizes)
    masks = text_class[buckets.members]
    order = np.lexsort((buckets.members, masks, bucket_of))
    members, masks, bucket_of = buckets.members[order], masks[order], bucket_of[order]
    new_run = np.ones(len(members), dtype=bool)
    new_run[1:] = (masks[1:] != masks[:-1]) | (bucket_of[1:] != bucket_of[:-1])
    run_start = np.flatnonzero(new_run)
    run_size = np.diff(np.append(run_start, len(members)))
    run_bucket, run_mask = bucket_of[run_start], masks[run_start]
    # Runs of one bucket are consecutive: pair every run with every later run of its bucket.
    bucket_runs = np.zeros(len(buckets.sizes) + 1, dtype=np.int64)
    np.cumsum(np.bincount(run_bucket, minlength=len(buckets.sizes)), out=bucket_runs[1:])
    run_a, run_b = triangle_pairs(bucket_runs)
    left, right = expand_blocks(
        run_start[run_a], run_size[run_a], run_start[run_b], run_size[run_b]
    )
    # Inside a run, pairs matter only if its texts occur in several splits.
    several = (run_mask & (run_mask - 1)) != 0  # two or more bits set
    inner_starts = np.zeros(int(several.sum()) + 1, dtype=np.int64)
    np.cumsum(run_size[several], out=inner_starts[1:])
    inner_positions = np.repeat(several, run_size)
    inner_i, inner_j = triangle_pairs(inner_starts)
    inner = np.flatnonzero(inner_positions)
    codes = np.concatenate(
        [
            pair_codes(members[left], members[right], n),
            pair_codes(members[inner[inner_i]], members[inner[inner_j]], n),
        ]
    )
    return sorted_unique(codes)


def distinct_buckets(bands: list[Buckets]) -> Buckets:
    """All buckets of all bands, each distinct member set once (in a fixed order).

    A bucket is fingerprinted by its size and two independent 64-bit sums of
    mixed member indices; equal fingerprints of different sets would need a
    2^-128 coincidence.
    """
    members = np.concatenate([bucket.members for bucket in bands])
    sizes = np.concatenate([bucket.sizes for bucket in bands])
    if len(sizes) == 0:
        return Buckets(members=members.astype(np.int64), starts=np.zeros(1, dtype=np.int64))
    starts = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(sizes, out=starts[1:])
    as_uint = members.astype(np.uint64)
    first = np.add.reduceat(splitmix64(as_uint + np.uint64(0x632BE59BD9B4E019)), starts[:-1])
    second = np.add.reduceat(splitmix64(as_uint ^ np.uint64(0x8CB92BA72F3D8DD7)), starts[:-1])
    order = np.lexsort((second, first, sizes))
    same = np.zeros(len(sizes), dtype=bool)
    same[1:] = (
        (sizes[order][1:] == sizes[order][:-1])
        & (first[order][1:] == first[order][:-1])
        & (second[order][1:] == second[order][:-1])
    )
    chosen = np.zeros(len(sizes), dtype=bool)
    chosen[order[~same]] = True
    return Buckets(
        members=members[np.repeat(chosen, sizes)],
        starts=np.concatenate([[0], np.cumsum(sizes[chosen])]).astype(np.int64),
    )
