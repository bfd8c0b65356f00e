"""MinHash signatures and the LSH banding that turns them into candidate pairs.

For each of ``num_perm`` seeded hash functions h(x) = (a·x + b) mod 2^64 (a odd;
the top 32 bits are kept), a text's signature value is the minimum of h over
its shingle hashes. Two texts agree on one value with probability equal to the
Jaccard similarity J of their shingle sets, so the share of agreeing values is
an unbiased estimate of J (standard error sqrt(J(1-J)/num_perm)).

Banding: the signature is cut into ``bands`` bands of ``rows`` values; two
texts become a candidate pair when they agree on every value of at least one
band, which happens with probability 1 - (1 - J^rows)^bands. The rows are
chosen per threshold as the largest number that keeps the chance of missing a
pair *at* the threshold below 1 in 1,000 (pairs above it are missed even less);
more rows would mean fewer needless candidates but more misses.

The work is vectorised with numpy, one hash function at a time over all
shingles of a chunk of texts, on a few threads (numpy releases the GIL).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from evalkit.leakage.shingles import Shingles, splitmix64
from evalkit.records import LshParameters

DEFAULT_NUM_PERM = 128
DEFAULT_SHINGLE_SIZE = 3
MAX_FALSE_NEGATIVE_RATE = 1e-3
# Shingles per chunk: 512 KB of uint64 per working buffer, which stays in the core's
# cache through the 3 passes of each of the 128 hash functions (a 32 MB buffer went to
# memory and back every pass: 1.7 s of CPU for 100k texts instead of 1.0 s).
_CHUNK_SHINGLES = 1 << 16


def miss_probability(similarity: float, bands: int, rows: int) -> float:
    """Probability that LSH never proposes a pair of this Jaccard similarity."""
    return float((1.0 - similarity**rows) ** bands)


def choose_lsh(
    threshold: float,
    *,
    num_perm: int = DEFAULT_NUM_PERM,
    shingle_size: int = DEFAULT_SHINGLE_SIZE,
    seed: int = 0,
) -> LshParameters:
    """The banding for ``threshold``: the most rows per band whose miss rate stays <= 1e-3.

    At threshold 0.8 with 128 hash functions this is 25 bands of 5 rows: a pair
    at J = 0.8 is missed with probability 4.9e-5, at J = 0.9 with 2e-10.
    """
    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"threshold must be in (0, 1], got {threshold}")
    if num_perm < 1:
        raise ValueError(f"num_perm must be at least 1, got {num_perm}")
    rows = 1
    for candidate in range(1, num_perm + 1):
        if miss_probability(threshold, num_perm // candidate, candidate) <= MAX_FALSE_NEGATIVE_RATE:
            rows = candidate
    bands = num_perm // rows
    return LshParameters(
        threshold=threshold,
        shingle_size=shingle_size,
        num_perm=num_perm,
        bands=bands,
        rows=rows,
        false_negative_rate=miss_probability(threshold, bands, rows),
        seed=seed,
    )


def hash_functions(num_perm: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The (a, b) coefficients of the MinHash functions, from a seeded generator."""
    rng = np.random.default_rng(seed)
    high = np.iinfo(np.uint64).max
    multipliers = rng.integers(1, high, size=num_perm, dtype=np.uint64, endpoint=True)
    multipliers |= np.uint64(1)
    offsets = rng.integers(0, high, size=num_perm, dtype=np.uint64, endpoint=True)
    return multipliers, offsets


def _signature_rows(
    hashes: np.ndarray, starts: np.ndarray, a: np.ndarray, b: np.ndarray, out: np.ndarray
) -> None:
    """Fill ``out[:, j]`` with the minimum of h_j over each text's shingles (in place)."""
    buffer = np.empty(len(hashes), dtype=np.uint64)
    for j in range(len(a)):
        np.multiply(hashes, a[j], out=buffer)
        buffer += b[j]
        out[:, j] = np.minimum.reduceat(buffer, starts) >> np.uint64(32)


def _threads() -> int:
    return max(1, min(4, os.cpu_count() or 1))


def minhash_signatures(
    shingles: Shingles,
    num_perm: int,
    seed: int,
    on_progress: Callable[[int], object] | None = None,
) -> np.ndarray:
    """The (n_texts, num_perm) uint32 MinHash signatures; ``on_progress(k)`` after k more texts."""
    a, b = hash_functions(num_perm, seed)
    n = shingles.n_texts
    signatures = np.empty((n, num_perm), dtype=np.uint32)
    workers = _threads()
    slices = np.array_split(np.arange(num_perm), workers)
    first = 0
    with ThreadPoolExecutor(max_workers=workers) as pool:
        while first < n:
            # A chunk of whole texts holding about _CHUNK_SHINGLES shingles (at least one text).
            limit = shingles.starts[first] + _CHUNK_SHINGLES
            last = max(first + 1, int(np.searchsorted(shingles.starts, limit, side="right")) - 1)
            last = min(last, n)
            lo, hi = shingles.starts[first], shingles.starts[last]
            hashes = shingles.hashes[lo:hi]
            starts = shingles.starts[first:last] - lo
            block = np.empty((last - first, num_perm), dtype=np.uint32)
            columns = [block[:, part[0] : part[-1] + 1] for part in slices if len(part)]
            jobs = [
                pool.submit(_fill, hashes, starts, a[part], b[part], column)
                for part, column in zip((p for p in slices if len(p)), columns, strict=True)
            ]
            for job in jobs:
                job.result()
            signatures[first:last] = block
            if on_progress is not None:
                on_progress(last - first)
            first = last
    return signatures


def _fill(
    hashes: np.ndarray, starts: np.ndarray, a: np.ndarray, b: np.ndarray, column: np.ndarray
) -> None:
    out = np.empty((len(starts), len(a)), dtype=np.uint32)
    _signature_rows(hashes, starts, a, b, out)
    column[:] = out


def band_keys(signatures: np.ndarray, band: int, rows: int) -> np.ndarray:
    """One uint64 key per text for ``band``: equal keys mean (up to 2^-64) equal band values."""
    key = np.full(len(signatures), np.uint64(band) + np.uint64(1), dtype=np.uint64)
    for column in range(band * rows, (band + 1) * rows):
        key = splitmix64(key * np.uint64(0x9E3779B97F4A7C15) + signatures[:, column])
    return key


def estimate_similarity(signatures: np.ndarray, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """MinHash estimate of the Jaccard similarity of each pair (left[i], right[i])."""
    if len(left) == 0:
        return np.zeros(0, dtype=np.float64)
    agree = np.zeros(len(left), dtype=np.int64)
    step = 1 << 16
    for first in range(0, len(left), step):
        chunk = slice(first, first + step)
        agree[chunk] = (signatures[left[chunk]] == signatures[right[chunk]]).sum(axis=1)
    return agree / signatures.shape[1]
