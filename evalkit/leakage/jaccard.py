"""Exact Jaccard similarity of the shingle sets of candidate pairs, vectorised.

LSH only proposes candidates; every candidate is then checked against the
exact Jaccard similarity of its two shingle sets, so a reported pair is never
below the threshold (MinHash estimates scatter by about ±0.035 at 128 hash
functions, which would both drop true pairs and admit false ones near the
threshold). "Exact" is up to collisions of 64-bit shingle hashes truncated to
at least 40 bits within one text pair: a chance below 1e-8 per pair.
"""

from __future__ import annotations

import numpy as np

from evalkit.leakage.candidates import sorted_unique
from evalkit.leakage.shingles import Shingles

POSITIONS = 1 << 22  # shingles looked up at once: a few arrays of this many int64s


def segment_positions(starts: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """All positions of the segments [starts[i], starts[i] + lengths[i]) and their segment i."""
    lengths = lengths.astype(np.int64)
    owner = np.repeat(np.arange(len(lengths), dtype=np.int64), lengths)
    first = np.zeros(len(lengths), dtype=np.int64)
    np.cumsum(lengths[:-1], out=first[1:])
    positions = np.arange(int(lengths.sum()), dtype=np.int64) - first[owner] + starts[owner]
    return positions, owner


class JaccardChecker:
    """Exact Jaccard similarity between any two of a fixed set of texts.

    Built once for the texts that appear in some candidate pair: their shingle
    hashes are deduplicated per text and kept as one sorted array of keys
    (text << hash_bits | top hash bits), so a membership test is one binary
    search and a whole chunk of pairs is checked with a few numpy calls.
    """

    def __init__(self, shingles: Shingles, texts: np.ndarray) -> None:
        self.texts = sorted_unique(texts.astype(np.int64))
        text_bits = max(1, len(self.texts).bit_length())
        self.hash_bits = 64 - text_bits
        counts = shingles.counts()[self.texts]
        positions, owner = segment_positions(shingles.starts[self.texts], counts)
        low = shingles.hashes[positions] >> np.uint64(64 - self.hash_bits)
        keys = (owner.astype(np.uint64) << np.uint64(self.hash_bits)) | low
        self.keys = sorted_unique(keys)
        local = (self.keys >> np.uint64(self.hash_bits)).astype(np.int64)
        self.sizes = np.bincount(local, minlength=len(self.texts)).astype(np.int64)
        self.offsets = np.zeros(len(self.texts), dtype=np.int64)
        np.cumsum(self.sizes[:-1], out=self.offsets[1:])
        self.low_mask = np.uint64((1 << self.hash_bits) - 1)

    def local(self, texts: np.ndarray) -> np.ndarray:
        """Local index of each text (every text must have been given to the constructor)."""
        found = np.searchsorted(self.texts, texts)
        if len(texts) and (found.max() >= len(self.texts) or (self.texts[found] != texts).any()):
            raise ValueError("JaccardChecker asked about a text it was not built for")
        return found

    def similarity(self, left: np.ndarray, right: np.ndarray) -> np.ndarray:
        """Exact Jaccard similarity of the shingle sets of each pair (left[i], right[i]).

        Pairs are checked in pieces of at most ``POSITIONS`` looked-up shingles, so
        memory stays bounded however long the texts are (a piece of one pair may
        hold more: that pair's smaller text).
        """
        if len(left) == 0:
            return np.zeros(0, dtype=np.float64)
        a, b = self.local(left), self.local(right)
        looked_up = np.cumsum(np.minimum(self.sizes[a], self.sizes[b]))
        if looked_up[-1] <= POSITIONS:
            return self._similarity(a, b)
        result = np.empty(len(a), dtype=np.float64)
        start = 0
        while start < len(a):
            before = looked_up[start - 1] if start else 0
            stop = max(start + 1, int(np.searchsorted(looked_up, before + POSITIONS, "right")))
            result[start:stop] = self._similarity(a[start:stop], b[start:stop])
            start = stop
        return result

    def _similarity(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """:meth:`similarity` of pairs of local indices, in one piece."""
        # Look the smaller set of each pair up in the larger one.
        swap = self.sizes[a] < self.sizes[b]
        big, small = np.where(swap, b, a), np.where(swap, a, b)
        positions, pair = segment_positions(self.offsets[small], self.sizes[small])
        query = (big[pair].astype(np.uint64) << np.uint64(self.hash_bits)) | (
            self.keys[positions] & self.low_mask
        )
        hit = np.searchsorted(self.keys, query)
        hit = np.minimum(hit, len(self.keys) - 1)
        shared = np.bincount(pair, weights=self.keys[hit] == query, minlength=len(a))
        union = self.sizes[a] + self.sizes[b] - shared
        return shared / union
