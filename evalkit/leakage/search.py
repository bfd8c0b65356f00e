"""The near-duplicate search: shingle → MinHash → LSH buckets → exact Jaccard check.

Works on *distinct* normalised texts (exact duplicates are collapsed before),
indexed in sorted text order, so that what is found never depends on the
order of the input rows. Two modes:

- ``split_masks`` given (audit): every candidate pair whose texts may lie in
  different splits is checked, and every pair at or above the threshold is
  returned.
- no masks (clustering for ``split``): only connectivity matters. Buckets of
  up to ``FULL_CHECK_BUCKET`` texts are checked pair by pair; in a larger
  bucket (a templated text repeated thousands of times) each text is checked
  against a pivot, the first text of the bucket, and the texts that do not
  match it form a new bucket with its own pivot, and so on. That keeps the
  work linear where all pairs would be quadratic; a pair (x, y) whose texts
  both miss the pivot can then go unlinked in that band, and is usually
  linked through another band or another text.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from evalkit.leakage.candidates import (
    Buckets,
    all_pairs,
    buckets_of,
    cross_class_pairs,
    decode_pairs,
    distinct_buckets,
    triangle_pairs,
)
from evalkit.leakage.jaccard import JaccardChecker
from evalkit.leakage.minhash import (
    LshParameters,
    band_keys,
    estimate_similarity,
    minhash_signatures,
)
from evalkit.leakage.progress import Progress
from evalkit.leakage.shingles import shingle_texts

FULL_CHECK_BUCKET = 64
_CHECK_CHUNK = 1 << 18  # candidate pairs checked per numpy call
_TOLERANCE = 1e-12  # so that a Jaccard of exactly 4/5 passes a threshold of 0.8


@dataclass(frozen=True)
class SimilarPairs:
    """Pairs of distinct texts at or above the threshold (indices into the texts)."""

    left: np.ndarray  # int64, left < right
    right: np.ndarray  # int64
    similarity: np.ndarray  # float64, exact Jaccard of the shingle sets
    estimate: np.ndarray  # float64, MinHash estimate of the same
    candidates: int  # candidate pairs checked


@dataclass(frozen=True)
class LshIndex:
    """The LSH state of a set of distinct texts: signatures, buckets and the exact checker.

    Built once, it answers both questions an audit asks: pairs across splits
    and clusters within each split.
    """

    n: int
    signatures: np.ndarray  # (n, num_perm) uint32
    buckets: Buckets  # every distinct bucket of every band
    checker: JaccardChecker


def lsh_index(
    texts: pl.Series, params: LshParameters, progress: Progress | None = None
) -> LshIndex:
    """Shingle, MinHash and band the given distinct, normalised, non-empty ``texts``."""
    progress = progress or Progress(False)
    n = len(texts)
    shingles = shingle_texts(texts, params.shingle_size)
    with progress.stage("hashing texts", n, "texts") as tick:
        signatures = minhash_signatures(shingles, params.num_perm, params.seed, tick)
    buckets = distinct_buckets(
        [buckets_of(band_keys(signatures, band, params.rows)) for band in range(params.bands)]
    )
    return LshIndex(n, signatures, buckets, JaccardChecker(shingles, buckets.members))


def _none() -> SimilarPairs:
    empty_int, empty_float = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
    return SimilarPairs(empty_int, empty_int, empty_float, empty_float, 0)


def cross_split_pairs(
    index: LshIndex, params: LshParameters, split_masks: np.ndarray, progress: Progress
) -> SimilarPairs:
    """Every pair at or above the threshold whose texts may lie in different splits."""
    codes = cross_class_pairs(index.buckets, split_masks, index.n)
    left, right = decode_pairs(codes, index.n)
    similarity = _check(index.checker, left, right, progress)
    keep = similarity >= params.threshold - _TOLERANCE
    left, right, similarity = left[keep], right[keep], similarity[keep]
    estimate = estimate_similarity(index.signatures, left, right)
    return SimilarPairs(left, right, similarity, estimate, len(codes))


def split_buckets(index: LshIndex, split_masks: np.ndarray, split: int) -> Buckets:
    """The buckets cut down to the texts that occur in ``split`` (two or more left)."""
    buckets = index.buckets
    inside = ((split_masks[buckets.members] >> split) & 1).astype(bool)
    owner = np.repeat(np.arange(len(buckets.sizes), dtype=np.int64), buckets.sizes)
    sizes = np.bincount(owner[inside], minlength=len(buckets.sizes))
    starts = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(sizes, out=starts[1:])
    cut = _subset(Buckets(members=buckets.members[inside], starts=starts), sizes >= 2)
    return distinct_buckets([cut])


def within_split_pairs(
    index: LshIndex,
    params: LshParameters,
    split_masks: np.ndarray,
    split: int,
    progress: Progress,
) -> SimilarPairs:
    """Pairs of texts that both occur in ``split`` and are near duplicates, enough to
    connect every cluster of the split.

    The buckets are cut down to the texts of the split; large buckets are
    checked against pivots, as for ``split --near-dup``, which is linear
    (``audit --within`` lists pairs through :mod:`evalkit.leakage.within_pairs`).
    """
    cut = split_buckets(index, split_masks, split)
    left, right, similarity, checked = _connecting_pairs(
        cut, index.checker, params, index.n, progress
    )
    estimate = estimate_similarity(index.signatures, left, right)
    return SimilarPairs(left, right, similarity, estimate, checked)


def find_similar_pairs(
    texts: pl.Series,
    params: LshParameters,
    *,
    split_masks: np.ndarray | None = None,
    progress: Progress | None = None,
) -> SimilarPairs:
    """Pairs of the given distinct, normalised, non-empty ``texts`` with Jaccard >= threshold."""
    progress = progress or Progress(False)
    if len(texts) < 2:
        return _none()
    index = lsh_index(texts, params, progress)
    if split_masks is not None:
        return cross_split_pairs(index, params, split_masks, progress)
    left, right, similarity, checked = _connecting_pairs(
        index.buckets, index.checker, params, index.n, progress
    )
    estimate = estimate_similarity(index.signatures, left, right)
    return SimilarPairs(left, right, similarity, estimate, checked)


def _check(
    checker: JaccardChecker, left: np.ndarray, right: np.ndarray, progress: Progress
) -> np.ndarray:
    similarity = np.empty(len(left), dtype=np.float64)
    with progress.stage("checking candidate pairs", len(left), "pairs") as tick:
        for first in range(0, len(left), _CHECK_CHUNK):
            chunk = slice(first, first + _CHECK_CHUNK)
            similarity[chunk] = checker.similarity(left[chunk], right[chunk])
            tick(len(similarity[chunk]))
    return similarity


def _subset(buckets: Buckets, chosen: np.ndarray) -> Buckets:
    """The buckets selected by the boolean mask ``chosen``."""
    sizes = buckets.sizes[chosen]
    starts = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(sizes, out=starts[1:])
    members = buckets.members[np.repeat(chosen, buckets.sizes)]
    return Buckets(members=members, starts=starts)


def _connecting_pairs(
    buckets: Buckets,
    checker: JaccardChecker,
    params: LshParameters,
    n: int,
    progress: Progress,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Verified pairs enough to connect every cluster (all pairs in small buckets)."""
    codes = all_pairs(_subset(buckets, buckets.sizes <= FULL_CHECK_BUCKET), n)
    left, right = decode_pairs(codes, n)
    similarity = _check(checker, left, right, progress)
    checked = len(codes)
    parts = [(left, right, similarity)]
    large = _subset(buckets, buckets.sizes > FULL_CHECK_BUCKET)
    while len(large.starts) > 1:
        pivot_left, pivot_right, pivot_similarity, large = _pivot_round(
            large, checker, params.threshold
        )
        parts.append((pivot_left, pivot_right, pivot_similarity))
        checked += len(pivot_left)
    left = np.concatenate([part[0] for part in parts])
    right = np.concatenate([part[1] for part in parts])
    similarity = np.concatenate([part[2] for part in parts])
    keep = similarity >= params.threshold - _TOLERANCE
    return left[keep], right[keep], similarity[keep], checked


def _pivot_round(
    bucket: Buckets, checker: JaccardChecker, threshold: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, Buckets]:
    """Check every member against its bucket's first member; the misses form new buckets.

    Buckets that have shrunk to ``FULL_CHECK_BUCKET`` members or fewer are
    checked pair by pair instead, which ends the rounds for them.
    """
    sizes = bucket.sizes
    is_small = sizes <= FULL_CHECK_BUCKET
    small = _subset(bucket, is_small)
    i, j = triangle_pairs(small.starts)
    small_left, small_right = small.members[i], small.members[j]
    big = _subset(bucket, ~is_small)
    big_sizes = big.sizes
    pivot = np.repeat(big.members[big.starts[:-1]], big_sizes)
    is_pivot = np.zeros(len(big.members), dtype=bool)
    is_pivot[big.starts[:-1]] = True
    others, pivots = big.members[~is_pivot], pivot[~is_pivot]
    left = np.concatenate([small_left, pivots])
    right = np.concatenate([small_right, others])
    similarity = _check(checker, left, right, Progress(False))  # in chunks: bounded memory
    # Members that missed their pivot stay together, as a smaller bucket of their own.
    missed = similarity[len(small_left) :] < threshold - _TOLERANCE
    owner = np.repeat(np.arange(len(big_sizes)), big_sizes)[~is_pivot]
    rest_sizes = np.bincount(owner[missed], minlength=len(big_sizes))
    starts = np.zeros(len(big_sizes) + 1, dtype=np.int64)
    np.cumsum(rest_sizes, out=starts[1:])
    rest = Buckets(members=others[missed], starts=starts)
    rest = _subset(rest, rest.sizes >= 2)
    return left, right, similarity, rest
