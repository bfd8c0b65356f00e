"""The functions that Ray runs as tasks, one per partition of a stage.

Each takes its inputs as arguments (Ray fetches them from the object store)
and returns plain numpy arrays, polars frames and small dataclasses, so a
task never reaches into the driver. Every shuffle has one shape: a map task
returns one part per reduce partition (``num_returns``), and reduce task
``k`` takes the ``k``-th part of every map task. The partition functions
themselves live in :mod:`evalkit.leakage.distributed.partitions`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from evalkit.leakage import findings
from evalkit.leakage.candidates import Buckets, sorted_unique
from evalkit.leakage.distributed.checks import (
    CheckedPairs,
    SubsetChecker,
    TextSubset,
    check_codes,
    distinct_scoped,
    extract,
    listed_scope,
    pivot_links,
)
from evalkit.leakage.distributed.partitions import (
    BandRecords,
    ScopedBuckets,
    band_buckets,
    band_records,
    code_part,
    cross_split_codes,
    cut_buckets,
    large_buckets,
    range_part,
    small_bucket_codes,
    split_by_part,
)
from evalkit.leakage.minhash import minhash_signatures
from evalkit.leakage.normalize import normalize_texts
from evalkit.leakage.shingles import Shingles, shingle_texts
from evalkit.leakage.within_pairs import first_text_pairs
from evalkit.records import LshParameters

SAMPLE_TEXTS = 64  # texts per block for the range boundaries
TEXT_SCHEMA = {"text": pl.String, "split": pl.Int64, "row": pl.Int64, "id": pl.String}


@dataclass(frozen=True)
class TextBlock:
    """A block's texts, ready to route: what a text partition receives from it."""

    frame: pl.DataFrame  # text (normalised, non-null), split, row (in block), id
    sample: pl.Series  # a few of its texts, for the range boundaries


def text_block(texts: pl.Series, split: pl.Series, ids: pl.Series | None) -> TextBlock:
    """Normalise a block's texts and keep the rows that have one, with a sample."""
    normalized = normalize_texts(texts)
    frame = pl.DataFrame(
        {
            "text": normalized,
            "split": split.cast(pl.Int64),
            "row": pl.int_range(len(normalized), dtype=pl.Int64, eager=True),
            "id": ids if ids is not None else pl.Series([None] * len(texts), dtype=pl.String),
        },
        schema=TEXT_SCHEMA,
    ).drop_nulls("text")
    distinct = frame["text"].unique().sort()
    step = max(1, len(distinct) // SAMPLE_TEXTS)
    return TextBlock(frame=frame, sample=distinct.gather_every(step))


def normalize_chunk(texts: pl.Series) -> tuple[pl.Series, pl.DataFrame]:
    """A chunk of ``split --near-dup`` texts as a routable frame, and its sample."""
    block = text_block(texts, pl.Series([0] * len(texts), dtype=pl.Int64), None)
    return block.sample, block.frame


def route_texts(
    frame: pl.DataFrame, first_row: int, boundaries: pl.Series, parts: int
) -> tuple[pl.DataFrame, ...]:
    """Give a block's rows their global row numbers and cut them by text range."""
    frame = frame.with_columns(pl.col("row") + first_row)
    pieces = split_by_part(frame, range_part(frame["text"], boundaries), parts)
    return tuple(pieces)


@dataclass(frozen=True)
class TextPartition:
    """One range of distinct texts, by rank: what the later stages read."""

    shingles: Shingles
    signatures: np.ndarray  # (count, num_perm) uint32
    masks: np.ndarray  # int64 split mask per text
    keyed: pl.DataFrame  # row, split, text_index (local), id: the rows of these texts


def rank_partition(
    params: LshParameters, near: bool, *parts: pl.DataFrame
) -> tuple[int, TextPartition, pl.DataFrame]:
    """Distinct texts of one range in sorted order, their rows, shingles and signatures.

    Returns the number of distinct texts (their ranks start where the
    previous ranges' counts end), the partition, and the exact-duplicate
    row pairs across splits found in it (with ids, the local engine's frame).
    """
    frames = [part for part in parts if part.width]
    frame = pl.concat(frames) if frames else pl.DataFrame(schema=TEXT_SCHEMA)
    distinct = frame.select("text").unique().sort("text").with_row_index("text_index")
    joined = frame.join(distinct, on="text", how="left")
    keyed = pl.DataFrame(
        {
            "row": joined["row"].to_numpy().astype(np.int64),
            "split": joined["split"].to_numpy().astype(np.int64),
            "text_index": joined["text_index"].to_numpy().astype(np.int64),
            "id": joined["id"],
        }
    )
    n = distinct.height
    masks = findings.split_masks(keyed["split"].to_numpy(), keyed["text_index"].to_numpy(), n)
    exact = findings.with_ids(findings.exact_pairs(keyed), keyed.select("row", "id"))
    if near and n:
        shingles = shingle_texts(distinct["text"], params.shingle_size)
        signatures = minhash_signatures(shingles, params.num_perm, params.seed)
    else:
        shingles = Shingles(np.zeros(0, np.uint64), np.zeros(n + 1, np.int64))
        signatures = np.zeros((n, params.num_perm), dtype=np.uint32)
    return n, TextPartition(shingles, signatures, masks, keyed), exact


def band_map(
    partition: TextPartition, first_rank: int, bands: range, rows: int, parts: int, use_masks: bool
) -> tuple[BandRecords, ...]:
    """The band records of one text partition for a round of bands, cut by band key."""
    masks = partition.masks if use_masks else np.zeros(len(partition.masks), dtype=np.int64)
    pieces = band_records(partition.signatures, first_rank, masks, bands, rows, parts)
    return tuple(pieces)


def band_reduce(
    n: int, cross: bool, splits: int, parts: int, *records: BandRecords
) -> tuple[int | tuple[np.ndarray, np.ndarray] | ScopedBuckets, ...]:
    """Buckets of one band-key partition: candidates cut by code, and the large buckets.

    Scope -1: with ``cross`` (audit) the pairs that may cross splits, every one
    a candidate; otherwise (clusters) every pair of a bucket of at most 64
    texts, larger buckets kept whole for the pivot rounds. Scopes ``0 ..
    splits - 1``: the same inside each split (the buckets cut to its texts).
    The first value, the number of candidates, is what the driver waits on.
    """
    merged = BandRecords.concat(list(records))
    buckets = band_buckets(merged)
    scoped: list[tuple[int, np.ndarray]] = []
    large: list[tuple[int, Buckets]] = []
    if cross:
        scoped.append((-1, cross_split_codes(buckets, merged, n)))
    elif not splits:
        scoped.append((-1, small_bucket_codes(buckets, n)))
        large.append((-1, large_buckets(buckets)))
    for split in range(splits):
        cut = cut_buckets(buckets, merged, split)
        scoped.append((split, small_bucket_codes(cut, n)))
        large.append((split, large_buckets(cut)))
    scope = np.concatenate(
        [np.full(len(c), k, np.int64) for k, c in scoped] or [np.zeros(0, np.int64)]
    )
    codes = np.concatenate([c for _, c in scoped] or [np.zeros(0, np.int64)]).astype(np.int64)
    part = code_part(codes, parts)
    order = np.argsort(part, kind="stable")
    bounds = np.searchsorted(part[order], np.arange(parts + 1))
    pieces = [
        (scope[order[bounds[k] : bounds[k + 1]]], codes[order[bounds[k] : bounds[k + 1]]])
        for k in range(parts)
    ]
    return (len(codes), *pieces, ScopedBuckets.of(large))


def distinct_codes(
    first_ranks: np.ndarray, *pieces: tuple[np.ndarray, np.ndarray]
) -> tuple[tuple[np.ndarray, np.ndarray] | np.ndarray, ...]:
    """One verification partition's distinct candidates (scope, code), and the ranks it
    needs from each text partition (``first_ranks`` are where the text partitions start)."""
    scope = np.concatenate([np.asarray(p[0], dtype=np.int64) for p in pieces])
    codes = np.concatenate([np.asarray(p[1], dtype=np.int64) for p in pieces])
    scope, codes = distinct_scoped(scope, codes)
    return ((scope, codes), *requests_by_partition(codes_to_ranks(codes, first_ranks), first_ranks))


def codes_to_ranks(codes: np.ndarray, first_ranks: np.ndarray) -> np.ndarray:
    """The distinct ranks named by the codes (``first_ranks[-1]`` is the number of texts)."""
    n = int(first_ranks[-1])
    return sorted_unique(np.concatenate([codes // n, codes % n])) if len(codes) else codes


def requests_by_partition(ranks: np.ndarray, first_ranks: np.ndarray) -> list[np.ndarray]:
    """Sorted ``ranks`` cut at the text partitions' first ranks."""
    bounds = np.searchsorted(ranks, first_ranks)
    return [ranks[bounds[k] : bounds[k + 1]] for k in range(len(first_ranks) - 1)]


def extract_for(
    partition: TextPartition, first_rank: int, *requests: np.ndarray
) -> tuple[TextSubset, ...]:
    """The shingles and signatures each requesting task needs from one text partition."""
    return tuple(
        extract(partition.shingles, partition.signatures, first_rank, np.asarray(r))
        for r in requests
    )


def check_partition(
    n: int,
    threshold: float,
    num_perm: int,
    candidates: tuple[np.ndarray, np.ndarray],
    *subsets: TextSubset,
) -> CheckedPairs:
    """The exact Jaccard check of one verification partition's candidates."""
    checker = SubsetChecker(TextSubset.concat(list(subsets), num_perm))
    return check_codes(candidates[0], candidates[1], n, checker, threshold)


def large_requests(first_ranks: np.ndarray, large: ScopedBuckets) -> tuple[np.ndarray, ...]:
    """The ranks a band partition's large buckets need from each text partition."""
    members = large.buckets.members.astype(np.int64)
    return tuple(requests_by_partition(sorted_unique(members), first_ranks))


def pivot_partition(
    threshold: float, num_perm: int, large: ScopedBuckets, *subsets: TextSubset
) -> CheckedPairs:
    """The local engine's pivot rounds over one band partition's large buckets, per scope."""
    checker = SubsetChecker(TextSubset.concat(list(subsets), num_perm))
    found = []
    for scope in sorted_unique(large.scope).tolist():
        left, right, similarity = pivot_links(large.of_scope(scope), checker, threshold)
        scopes = np.full(len(left), scope, dtype=np.int64)
        estimate = checker.estimate(left, right)
        found.append(CheckedPairs(scopes, left, right, similarity, estimate, {}))
    return CheckedPairs.concat(found)


def listing_partition(
    n: int, threshold: float, num_perm: int, keep: int, large: ScopedBuckets, *subsets: TextSubset
) -> CheckedPairs:
    """The first ``keep`` passing pairs of one band partition's large buckets, per split
    (scope ``listed_scope(split)``): the local engine's bounded listing, on these buckets."""
    checker = SubsetChecker(TextSubset.concat(list(subsets), num_perm))
    found = []
    for scope in sorted_unique(large.scope).tolist():
        if scope < 0:
            continue
        left, right, similarity = first_text_pairs(
            large.of_scope(scope), checker.similarity, threshold, n, keep
        )
        scopes = np.full(len(left), listed_scope(scope), dtype=np.int64)
        found.append(
            CheckedPairs(scopes, left, right, similarity, checker.estimate(left, right), {})
        )
    return CheckedPairs.concat(found)


def rows_of_texts(partition: TextPartition, first_rank: int, ranks: np.ndarray) -> pl.DataFrame:
    """``row, split, text_index, id`` of the rows whose text has one of ``ranks``."""
    keyed = partition.keyed.with_columns(pl.col("text_index") + first_rank)
    return keyed.filter(pl.col("text_index").is_in(pl.Series(ranks, dtype=pl.Int64).implode()))


def first_rows_of_shared_texts(partition: TextPartition) -> pl.DataFrame:
    """``row, first_row`` of every row whose text other rows share: its text's first row."""
    keyed = partition.keyed.select("row", "text_index")
    shared = keyed.filter(pl.len().over("text_index") > 1)
    return shared.select("row", pl.col("row").min().over("text_index").alias("first_row"))
