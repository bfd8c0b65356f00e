"""What one task of the Ray engine computes on its partition: plain numpy and polars.

Nothing here imports Ray, so each function is tested directly against the
local engine (``tests/test_leakage_partitions.py``). The distributed stages
(:mod:`evalkit.leakage.distributed.stages`) only move these functions' inputs
and outputs between tasks.

Text indices are *ranks*: the position of a distinct normalised text in the
sorted order of all of them, exactly the ``text_index`` of the local engine,
so every pair code, bucket order and pivot is the local engine's own.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from evalkit.leakage.candidates import (
    Buckets,
    all_pairs,
    cross_class_pairs,
    decode_pairs,
    sorted_unique,
)
from evalkit.leakage.minhash import band_keys
from evalkit.leakage.search import FULL_CHECK_BUCKET, _subset
from evalkit.leakage.shingles import GOLDEN, splitmix64

_FNV_PRIME = np.uint64(0x100000001B3)


def range_boundaries(samples: pl.Series, parts: int) -> pl.Series:
    """``parts - 1`` sorted texts that cut the sampled texts into ``parts`` equal ranges.

    Boundaries only balance the work: any boundaries give the same ranks.
    """
    distinct = samples.drop_nulls().unique().sort()
    if parts <= 1 or len(distinct) == 0:
        return pl.Series("text", [], dtype=pl.String)
    cuts = np.linspace(0, len(distinct), parts + 1)[1:-1].astype(np.int64)
    return distinct.gather(sorted(set(np.minimum(cuts, len(distinct) - 1).tolist())))


def range_part(texts: pl.Series, boundaries: pl.Series) -> np.ndarray:
    """The range partition of each text: how many boundaries are <= it (equal texts agree)."""
    if len(boundaries) == 0:
        return np.zeros(len(texts), dtype=np.int64)
    return boundaries.search_sorted(texts, side="right").to_numpy().astype(np.int64)


def string_hashes(values: pl.Series) -> np.ndarray:
    """A stable 64-bit hash of each string (null: 0), from its UTF-8 bytes alone.

    Not polars' hash, whose values may change between polars versions, nor
    Python's salted ``hash``: nodes of one cluster must agree on where a key
    goes whatever they run. A polynomial over the bytes, vectorised over the
    Arrow buffers, then the SplitMix64 finaliser.
    """
    import pyarrow as pa

    array = values.cast(pl.String).to_arrow()
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    array = array.cast(pa.large_binary())
    _, offset_buffer, data_buffer = array.buffers()
    offsets = np.frombuffer(offset_buffer, dtype=np.int64)[
        array.offset : array.offset + len(array) + 1
    ]
    data = (
        np.frombuffer(data_buffer, dtype=np.uint8)
        if data_buffer is not None
        else np.zeros(0, np.uint8)
    )
    data = data[offsets[0] : offsets[-1]].astype(np.uint64) + np.uint64(1)
    starts = offsets[:-1] - offsets[0]
    lengths = np.diff(offsets)
    position = np.arange(len(data), dtype=np.int64) - np.repeat(starts, lengths)
    powers = np.cumprod(
        np.r_[np.uint64(1), np.full(int(lengths.max(initial=0)), _FNV_PRIME, dtype=np.uint64)]
    )
    terms = np.append(data * powers[position], np.uint64(0))
    sums = np.add.reduceat(terms, np.minimum(starts, len(data)))
    sums[lengths == 0] = 0
    hashed = splitmix64(sums + lengths.astype(np.uint64) * GOLDEN)
    hashed[values.is_null().to_numpy()] = 0
    return hashed


def hash_part(values: pl.Series | pl.DataFrame, parts: int) -> np.ndarray:
    """A partition per value (per row of a frame of string columns) from a stable hash.

    The answer never depends on which partition a key lands in, only that all
    of its rows land in the same one, on every node.
    """
    if parts <= 1:
        return np.zeros(len(values), dtype=np.int64)
    columns = values.get_columns() if isinstance(values, pl.DataFrame) else [values]
    hashed = np.zeros(len(values), dtype=np.uint64)
    for column in columns:
        hashed = splitmix64(hashed * GOLDEN + string_hashes(column))
    return (hashed % np.uint64(parts)).astype(np.int64)


def split_by_part(frame: pl.DataFrame, part: np.ndarray, parts: int) -> list[pl.DataFrame]:
    """``frame``'s rows of each partition, in row order."""
    order = np.argsort(part, kind="stable")
    bounds = np.searchsorted(part[order], np.arange(parts + 1))
    ordered = frame[order] if len(order) else frame
    return [ordered[int(bounds[k]) : int(bounds[k + 1])] for k in range(parts)]


def code_part(codes: np.ndarray, parts: int) -> np.ndarray:
    """The verification partition of each pair code (mixed, so that ranges spread)."""
    if parts <= 1:
        return np.zeros(len(codes), dtype=np.int64)
    return (splitmix64(codes.astype(np.uint64)) % np.uint64(parts)).astype(np.int64)


@dataclass(frozen=True)
class BandRecords:
    """Band keys of texts, for one shuffle partition: one record per (text, band)."""

    band: np.ndarray  # int64
    key: np.ndarray  # uint64, from :func:`evalkit.leakage.minhash.band_keys` (stable)
    rank: np.ndarray  # int64 text rank
    mask: np.ndarray  # int64 split mask of the text (0 when splits do not matter)

    @staticmethod
    def concat(parts: list[BandRecords]) -> BandRecords:
        """All records of several parts."""
        return BandRecords(
            *(np.concatenate([getattr(p, f) for p in parts]) for f in BandRecords._fields())
        )

    @staticmethod
    def _fields() -> tuple[str, ...]:
        return ("band", "key", "rank", "mask")


def band_records(
    signatures: np.ndarray,
    first_rank: int,
    masks: np.ndarray,
    bands: range,
    rows: int,
    parts: int,
) -> list[BandRecords]:
    """The records of ``bands`` for a partition of texts, cut by band key into ``parts``.

    ``signatures[i]`` is the MinHash signature of the text of rank
    ``first_rank + i``. The shuffle partition is the key modulo ``parts``, so
    all texts with one band key meet in one task.
    """
    n = len(signatures)
    ranks = np.arange(first_rank, first_rank + n, dtype=np.int64)
    keys = [band_keys(signatures, band, rows) for band in bands]
    records = BandRecords(
        band=np.repeat(np.array(list(bands), dtype=np.int64), n),
        key=np.concatenate(keys) if keys else np.zeros(0, dtype=np.uint64),
        rank=np.tile(ranks, len(bands)),
        mask=np.tile(masks.astype(np.int64), len(bands)),
    )
    part = (records.key % np.uint64(max(parts, 1))).astype(np.int64)
    order = np.argsort(part, kind="stable")
    bounds = np.searchsorted(part[order], np.arange(parts + 1))
    return [
        BandRecords(
            *(getattr(records, f)[order[bounds[k] : bounds[k + 1]]] for f in BandRecords._fields())
        )
        for k in range(parts)
    ]


def band_buckets(records: BandRecords) -> Buckets:
    """The buckets (texts with equal keys in one band, two or more) of the records.

    Members are ascending within a bucket, as the local engine's
    :func:`~evalkit.leakage.candidates.buckets_of` gives them.
    """
    order = np.lexsort((records.rank, records.key, records.band))
    band, key, rank = records.band[order], records.key[order], records.rank[order]
    new = np.ones(len(rank), dtype=bool)
    new[1:] = (band[1:] != band[:-1]) | (key[1:] != key[:-1])
    first = np.flatnonzero(new)
    sizes = np.diff(np.append(first, len(rank)))
    shared = sizes >= 2
    members = rank[np.repeat(shared, sizes)]
    starts = np.zeros(int(shared.sum()) + 1, dtype=np.int64)
    np.cumsum(sizes[shared], out=starts[1:])
    return Buckets(members=members, starts=starts)


def member_masks(records: BandRecords, members: np.ndarray) -> np.ndarray:
    """The split mask of each of the (sorted, distinct) ``members``."""
    order = np.argsort(records.rank, kind="stable")
    found = np.searchsorted(records.rank[order], members)
    return records.mask[order][found]


def _localised(buckets: Buckets) -> tuple[Buckets, np.ndarray]:
    """The buckets over local indices 0..m-1 (order kept), and the ranks they stand for."""
    ranks = sorted_unique(buckets.members)
    local = np.searchsorted(ranks, buckets.members).astype(np.int64)
    return Buckets(members=local, starts=buckets.starts), ranks


def _global_codes(local_codes: np.ndarray, ranks: np.ndarray, n: int) -> np.ndarray:
    low, high = decode_pairs(local_codes, len(ranks))
    return ranks[low] * np.int64(n) + ranks[high]


def cross_split_codes(buckets: Buckets, records: BandRecords, n: int) -> np.ndarray:
    """Codes ``low * n + high`` of the bucket pairs that may cross splits (the local rule)."""
    if len(buckets.members) == 0:
        return np.zeros(0, dtype=np.int64)
    local, ranks = _localised(buckets)
    masks = member_masks(records, ranks)
    return _global_codes(cross_class_pairs(local, masks, len(ranks)), ranks, n)


def small_bucket_codes(buckets: Buckets, n: int) -> np.ndarray:
    """Codes of every pair in the buckets of at most ``FULL_CHECK_BUCKET`` texts."""
    small = _subset(buckets, buckets.sizes <= FULL_CHECK_BUCKET)
    if len(small.members) == 0:
        return np.zeros(0, dtype=np.int64)
    local, ranks = _localised(small)
    return _global_codes(all_pairs(local, len(ranks)), ranks, n)


def large_buckets(buckets: Buckets) -> Buckets:
    """The buckets of more than ``FULL_CHECK_BUCKET`` texts (checked against pivots)."""
    return _subset(buckets, buckets.sizes > FULL_CHECK_BUCKET)


def cut_buckets(buckets: Buckets, records: BandRecords, split: int) -> Buckets:
    """The buckets cut down to the texts that occur in ``split`` (two or more left).

    The local engine's rule for repetition inside one split
    (:func:`evalkit.leakage.search.within_split_pairs`).
    """
    masks = member_masks(records, buckets.members)
    inside = ((masks >> split) & 1).astype(bool)
    owner = np.repeat(np.arange(len(buckets.sizes), dtype=np.int64), buckets.sizes)
    sizes = np.bincount(owner[inside], minlength=len(buckets.sizes))
    starts = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(sizes, out=starts[1:])
    cut = Buckets(members=buckets.members[inside], starts=starts)
    return _subset(cut, cut.sizes >= 2)


@dataclass(frozen=True)
class ScopedBuckets:
    """Buckets, each for one scope: -1 across splits (or all texts), else a split index."""

    scope: np.ndarray  # int64 per bucket
    buckets: Buckets

    @staticmethod
    def of(parts: list[tuple[int, Buckets]]) -> ScopedBuckets:
        """Several scopes' buckets as one."""
        members = [b.members for _, b in parts] or [np.zeros(0, np.int64)]
        sizes = [b.sizes for _, b in parts] or [np.zeros(0, np.int64)]
        scope = [np.full(len(b.sizes), s, dtype=np.int64) for s, b in parts]
        all_sizes = np.concatenate(sizes)
        starts = np.zeros(len(all_sizes) + 1, dtype=np.int64)
        np.cumsum(all_sizes, out=starts[1:])
        return ScopedBuckets(
            np.concatenate(scope) if scope else np.zeros(0, np.int64),
            Buckets(members=np.concatenate(members).astype(np.int64), starts=starts),
        )

    def of_scope(self, scope: int) -> Buckets:
        """The buckets of one scope."""
        return _subset(self.buckets, self.scope == scope)
