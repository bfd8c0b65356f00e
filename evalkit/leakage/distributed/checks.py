"""The exact check of candidate pairs, on the texts a task fetched: plain numpy.

A check task holds only the shingles and signatures of the texts its
candidates name (a :class:`TextSubset`, fetched from the text partitions by
rank), and runs the local engine's :class:`~evalkit.leakage.jaccard.JaccardChecker`
and pivot rounds on them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import numpy as np

from evalkit.leakage.candidates import Buckets, decode_pairs
from evalkit.leakage.jaccard import JaccardChecker, segment_positions
from evalkit.leakage.minhash import estimate_similarity
from evalkit.leakage.search import _TOLERANCE as TOLERANCE
from evalkit.leakage.search import _pivot_round
from evalkit.leakage.shingles import Shingles


def listed_scope(split: int) -> int:
    """The scope of the pairs that ``audit --within`` lists for ``split`` (-1 is across)."""
    return -2 - split


@dataclass(frozen=True)
class TextSubset:
    """The shingles and signatures of some texts, named by rank (for checking pairs)."""

    ranks: np.ndarray  # int64, sorted, distinct
    shingles: Shingles
    signatures: np.ndarray  # (len(ranks), num_perm) uint32

    @staticmethod
    def concat(parts: list[TextSubset], num_perm: int) -> TextSubset:
        """Subsets of disjoint rank ranges, in ascending order, as one."""
        parts = [part for part in parts if len(part.ranks)]
        if not parts:
            empty = Shingles(np.zeros(0, np.uint64), np.zeros(1, np.int64))
            return TextSubset(np.zeros(0, np.int64), empty, np.zeros((0, num_perm), np.uint32))
        offsets = np.cumsum([0] + [len(p.shingles.hashes) for p in parts[:-1]])
        starts = np.concatenate(
            [p.shingles.starts[:-1] + o for p, o in zip(parts, offsets, strict=True)]
            + [np.array([sum(len(p.shingles.hashes) for p in parts)], dtype=np.int64)]
        )
        return TextSubset(
            ranks=np.concatenate([p.ranks for p in parts]),
            shingles=Shingles(np.concatenate([p.shingles.hashes for p in parts]), starts),
            signatures=np.concatenate([p.signatures for p in parts]),
        )


def extract(
    shingles: Shingles, signatures: np.ndarray, first_rank: int, ranks: np.ndarray
) -> TextSubset:
    """The subset of a text partition (ranks from ``first_rank`` on) holding ``ranks``."""
    local = ranks.astype(np.int64) - first_rank
    counts = shingles.counts()[local]
    positions, _ = segment_positions(shingles.starts[local], counts)
    starts = np.zeros(len(local) + 1, dtype=np.int64)
    np.cumsum(counts, out=starts[1:])
    return TextSubset(
        ranks=ranks.astype(np.int64),
        shingles=Shingles(shingles.hashes[positions], starts),
        signatures=signatures[local],
    )


class SubsetChecker:
    """The exact Jaccard check of :class:`JaccardChecker`, over texts named by rank."""

    def __init__(self, subset: TextSubset) -> None:
        self.subset = subset
        self.checker = JaccardChecker(subset.shingles, np.arange(len(subset.ranks)))

    def local(self, ranks: np.ndarray) -> np.ndarray:
        """Position in the subset of each rank (each must be in it)."""
        return np.searchsorted(self.subset.ranks, ranks)

    def similarity(self, left: np.ndarray, right: np.ndarray) -> np.ndarray:
        """Exact Jaccard similarity of each pair of ranks."""
        return self.checker.similarity(self.local(left), self.local(right))

    def estimate(self, left: np.ndarray, right: np.ndarray) -> np.ndarray:
        """MinHash estimate of each pair's similarity."""
        return estimate_similarity(self.subset.signatures, self.local(left), self.local(right))


@dataclass(frozen=True)
class CheckedPairs:
    """Pairs of ranks at or above the threshold, each in a scope (-1 across splits, or a
    split), with the number of candidates checked per scope."""

    scope: np.ndarray
    left: np.ndarray
    right: np.ndarray
    similarity: np.ndarray
    estimate: np.ndarray
    candidates: dict[int, int]

    @staticmethod
    def concat(parts: list[CheckedPairs]) -> CheckedPairs:
        """All pairs of several parts, ordered by (scope, left, right)."""

        def joined(name: str, dtype: type) -> np.ndarray:
            arrays = [getattr(p, name) for p in parts]
            return np.concatenate(arrays) if arrays else np.zeros(0, dtype)

        scope, left, right = (
            joined("scope", np.int64),
            joined("left", np.int64),
            joined("right", np.int64),
        )
        order = np.lexsort((right, left, scope))
        candidates: dict[int, int] = {}
        for part in parts:
            for key, count in part.candidates.items():
                candidates[key] = candidates.get(key, 0) + count
        return CheckedPairs(
            scope[order],
            left[order],
            right[order],
            joined("similarity", np.float64)[order],
            joined("estimate", np.float64)[order],
            candidates,
        )

    def of_scope(self, scope: int) -> CheckedPairs:
        """The pairs of one scope."""
        keep = self.scope == scope
        return CheckedPairs(
            self.scope[keep],
            self.left[keep],
            self.right[keep],
            self.similarity[keep],
            self.estimate[keep],
            {scope: self.candidates.get(scope, 0)},
        )


def distinct_scoped(scope: np.ndarray, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each (scope, code) once, sorted by scope then code."""
    order = np.lexsort((codes, scope))
    scope, codes = scope[order], codes[order]
    keep = np.ones(len(codes), dtype=bool)
    keep[1:] = (codes[1:] != codes[:-1]) | (scope[1:] != scope[:-1])
    return scope[keep], codes[keep]


def check_codes(
    scope: np.ndarray,
    codes: np.ndarray,
    n: int,
    checker: SubsetChecker,
    threshold: float,
    chunk: int = 1 << 18,
) -> CheckedPairs:
    """Check the distinct candidates (scope, code); keep the pairs at or above ``threshold``."""
    candidates = {
        int(s): int(c) for s, c in zip(*np.unique(scope, return_counts=True), strict=True)
    }
    left, right = decode_pairs(codes, n)
    similarity = np.empty(len(left), dtype=np.float64)
    for first in range(0, len(left), chunk):
        part = slice(first, first + chunk)
        similarity[part] = checker.similarity(left[part], right[part])
    keep = similarity >= threshold - TOLERANCE
    scope, left, right, similarity = scope[keep], left[keep], right[keep], similarity[keep]
    estimate = checker.estimate(left, right)
    return CheckedPairs(scope, left, right, similarity, estimate, candidates)


def pivot_links(
    large: Buckets, checker: SubsetChecker, threshold: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The verified links (and similarities) of the local engine's pivot rounds."""
    lefts, rights = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
    similarities = [np.zeros(0, np.float64)]
    while len(large.starts) > 1:
        # The local engine's own round: the checker only needs ``similarity``.
        left, right, similarity, large = _pivot_round(
            large, cast(JaccardChecker, checker), threshold
        )
        keep = similarity >= threshold - TOLERANCE
        lefts.append(left[keep])
        rights.append(right[keep])
        similarities.append(similarity[keep])
    return np.concatenate(lefts), np.concatenate(rights), np.concatenate(similarities)
