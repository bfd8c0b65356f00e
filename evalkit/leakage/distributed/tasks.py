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
from evalkit.leakage.distributed.partitions import (
    BandRecords,
    CheckedPairs,
    SubsetChecker,
    TextSubset,
    band_buckets,
    band_records,
    check_codes,
    code_part,
    cross_split_codes,
    extract,
    large_buckets,
    pivot_links,
    range_part,
    small_bucket_codes,
    split_by_part,
)
from evalkit.leakage.minhash import LshParameters, minhash_signatures
from evalkit.leakage.normalize import normalize_texts
from evalkit.leakage.shingles import Shingles, shingle_texts

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
    n: int, cross: bool, parts: int, *records: BandRecords
) -> tuple[int | np.ndarray | Buckets, ...]:
    """Buckets of one band-key partition: candidate codes cut by code, and the large buckets.

    ``cross`` (audit): the pairs that may cross splits, every one a candidate.
    Otherwise (clusters): every pair of a bucket of at most 64 texts; larger
    buckets are returned whole, for the pivot rounds. The first value, the
    number of codes, is what the driver waits on.
    """
    merged = BandRecords.concat(list(records))
    buckets = band_buckets(merged)
    if cross:
        codes = cross_split_codes(buckets, merged, n)
        large = Buckets(members=np.zeros(0, np.int64), starts=np.zeros(1, np.int64))
    else:
        codes = small_bucket_codes(buckets, n)
        large = large_buckets(buckets)
    part = code_part(codes, parts)
    order = np.argsort(part, kind="stable")
    bounds = np.searchsorted(part[order], np.arange(parts + 1))
    pieces = [codes[order[bounds[k] : bounds[k + 1]]] for k in range(parts)]
    return (len(codes), *pieces, large)


def distinct_codes(first_ranks: np.ndarray, *pieces: np.ndarray) -> tuple[np.ndarray, ...]:
    """One verification partition's distinct candidate codes, and the ranks it needs from
    each text partition (``first_ranks`` are where the text partitions start)."""
    codes = sorted_unique(np.concatenate([np.asarray(p, dtype=np.int64) for p in pieces]))
    return (codes, *requests_by_partition(codes_to_ranks(codes, first_ranks), first_ranks))


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
    subsets = tuple(
        extract(partition.shingles, partition.signatures, first_rank, np.asarray(r))
        for r in requests
    )
    return subsets


def check_partition(
    n: int, threshold: float, num_perm: int, codes: np.ndarray, *subsets: TextSubset
) -> CheckedPairs:
    """The exact Jaccard check of one verification partition's candidates."""
    checker = SubsetChecker(TextSubset.concat(list(subsets), num_perm))
    return check_codes(codes, n, checker, threshold)


def large_requests(first_ranks: np.ndarray, large: Buckets) -> tuple[np.ndarray, ...]:
    """The ranks a band partition's large buckets need from each text partition."""
    members = large.members.astype(np.int64)
    pieces = requests_by_partition(sorted_unique(members), first_ranks)
    return tuple(pieces)


def pivot_partition(
    threshold: float, num_perm: int, large: Buckets, *subsets: TextSubset
) -> CheckedPairs:
    """The local engine's pivot rounds over one band partition's large buckets."""
    checker = SubsetChecker(TextSubset.concat(list(subsets), num_perm))
    left, right, similarity = pivot_links(large, checker, threshold)
    return CheckedPairs(left, right, similarity, checker.estimate(left, right), len(left))


def rows_of_texts(partition: TextPartition, first_rank: int, ranks: np.ndarray) -> pl.DataFrame:
    """``row, split, text_index, id`` of the rows whose text has one of ``ranks``."""
    keyed = partition.keyed.with_columns(pl.col("text_index") + first_rank)
    return keyed.filter(pl.col("text_index").is_in(pl.Series(ranks, dtype=pl.Int64).implode()))


def first_rows_of_shared_texts(partition: TextPartition) -> pl.DataFrame:
    """``row, first_row`` of every row whose text other rows share: its text's first row."""
    keyed = partition.keyed.select("row", "text_index")
    shared = keyed.filter(pl.len().over("text_index") > 1)
    return shared.select("row", pl.col("row").min().over("text_index").alias("first_row"))
