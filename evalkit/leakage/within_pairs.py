"""The pairs inside each split that ``audit --within`` lists: at most ``LIMIT`` per split.

A template repeated 20,000 times in one split is 200 million pairs of equal
texts, and 20,000 variants of it are as many near pairs: listing them all
took more memory than the machine had (Rust's allocator aborted under 6 GB).
The clusters (``report.within``) never need the pairs; the listing does, so
each of its two lists (exact, near) holds at most ``LIMIT`` pairs per split,
and the report names the splits that had more. Which pairs are listed is
fixed by an order both engines share:

- **exact pairs** by the split's texts in sorted order (the rank of the
  normalised text, ``text_index``), then, inside a text, its items by id
  (the pairs of a triangle, row by row);
- **near pairs** by pairs of texts in sorted order (smaller rank, then the
  larger), then, inside a pair of texts, the items of the first text by id,
  each with the items of the second by id.

The work is bounded too. Exact pairs are counted per text (k items make
k(k-1)/2 pairs) and only the listed ones are made. Near pairs are found
bucket row by bucket row in the order of their first text, checked a chunk
at a time (at most ``CHUNK`` candidates), and the search stops once the
first ``LIMIT + 1`` passing text pairs are known and no later candidate can
come before them. Memory stays at the chunk, the listing and the texts.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import polars as pl

from evalkit.leakage.candidates import Buckets

LIMIT = 100_000  # pairs listed per split in each --within list
CHUNK = 1 << 18  # candidate pairs checked at a time
TOLERANCE = 1e-12  # as in evalkit.leakage.search: a Jaccard of exactly 4/5 passes 0.8


def _expand(a_start: np.ndarray, b_start: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, ...]:
    """For each block k: (a_start[k], b_start[k] + t) for t < counts[k]; and the block."""
    counts = counts.astype(np.int64)
    block = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    first = np.zeros(len(counts), dtype=np.int64)
    np.cumsum(counts[:-1], out=first[1:])
    step = np.arange(int(counts.sum()), dtype=np.int64) - first[block]
    return a_start[block], b_start[block] + step, block, step


EXACT_SCHEMA = {
    "a_row": pl.Int64,
    "b_row": pl.Int64,
    "a_split": pl.Int64,
    "b_split": pl.Int64,
    "a": pl.String,
    "b": pl.String,
    "text_index": pl.Int64,
}


def exact_listing(keyed: pl.DataFrame, limit: int = LIMIT) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The listed pairs of items with equal text inside each split, and each split's total.

    ``keyed`` has ``row, split, text_index, id`` (rows with a text). Returns the
    pairs (``a_row, b_row, a_split, b_split, a, b, text_index``; ``a`` the item
    first by id, then row) and ``split, pairs`` (every pair, listed or not).
    """
    shared = keyed.filter(pl.len().over("split", "text_index") > 1).sort(
        "split", "text_index", "id", "row"
    )
    texts = shared.group_by("split", "text_index", maintain_order=True).agg(pl.len().alias("k"))
    k = texts["k"].to_numpy().astype(np.int64)
    pairs = k * (k - 1) // 2
    split = texts["split"].to_numpy().astype(np.int64)
    totals = pl.DataFrame({"split": split, "pairs": pairs}).group_by("split").agg(pl.sum("pairs"))
    # Pairs before each text in its split, and how many of its own are listed.
    before = _before_in_group(split, pairs)
    listed = np.clip(limit - before, 0, pairs)
    # Per item (position p of k in its text): the pairs it starts, and how many are listed.
    starts = np.zeros(len(k) + 1, dtype=np.int64)
    np.cumsum(k, out=starts[1:])
    text_of = np.repeat(np.arange(len(k), dtype=np.int64), k)
    position = np.arange(int(starts[-1]), dtype=np.int64) - starts[text_of]
    own = k[text_of] - 1 - position
    earlier = position * (k[text_of] - 1) - position * (position - 1) // 2
    count = np.clip(listed[text_of] - earlier, 0, own)
    index = np.arange(len(position), dtype=np.int64)
    a, b, _, _ = _expand(index, index + 1, count)
    rows, ids = shared["row"].to_numpy(), shared["id"]
    frame = pl.DataFrame(
        {
            "a_row": rows[a],
            "b_row": rows[b],
            "a_split": shared["split"].to_numpy()[a],
            "b_split": shared["split"].to_numpy()[a],
            "a": ids.gather(a),
            "b": ids.gather(b),
            "text_index": shared["text_index"].to_numpy()[a],
        },
        schema=EXACT_SCHEMA,
    )
    return frame, totals


def _before_in_group(group: np.ndarray, values: np.ndarray) -> np.ndarray:
    """The sum of ``values`` before each element within its run of equal ``group``."""
    total = np.cumsum(values) - values
    new = np.ones(len(group), dtype=bool)
    new[1:] = group[1:] != group[:-1]
    base = np.maximum.accumulate(np.where(new, np.arange(len(group)), 0)) if len(group) else group
    return total - total[base]


EXACT_ORDER = ["a_split", "text_index", "a", "a_row", "b", "b_row"]


def over_limit(totals: pl.DataFrame, limit: int = LIMIT) -> list[int]:
    """The splits whose ``pairs`` (``split, pairs`` totals) are more than ``limit``."""
    return sorted(int(split) for split, pairs in totals.iter_rows() if pairs > limit)


def first_per_split(frame: pl.DataFrame, order: list[str], limit: int) -> pl.DataFrame:
    """The first ``limit`` rows of each split (``a_split``) in ``order``, duplicates dropped."""
    return (
        frame.unique(maintain_order=False)
        .sort(order)
        .group_by("a_split", maintain_order=True)
        .head(limit)
    )


def first_text_pairs(
    buckets: Buckets,
    similarity_of: Callable[[np.ndarray, np.ndarray], np.ndarray],
    threshold: float,
    n: int,
    keep: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The first ``keep`` pairs of texts (by smaller, then larger text) that share a bucket
    and pass ``threshold``: ``left, right, similarity``.

    Bucket rows (a text and the later texts of its bucket) are taken in the
    order of their text and checked a chunk at a time; once ``keep`` pairs
    pass, candidates after the last of them are skipped, and the search stops
    at the first row that starts after it.
    """
    sizes = buckets.sizes
    empty = np.zeros(0, dtype=np.int64)
    if len(sizes) == 0:
        return empty, empty, np.zeros(0, dtype=np.float64)
    bucket_of = np.repeat(np.arange(len(sizes), dtype=np.int64), sizes)
    members = buckets.members[np.lexsort((buckets.members, bucket_of))].astype(np.int64)
    later = buckets.starts[1:][bucket_of] - 1 - np.arange(len(members), dtype=np.int64)
    rows = np.flatnonzero(later > 0)
    rows = rows[np.argsort(members[rows], kind="stable")]
    kept = empty
    kept_similarity = np.zeros(0, dtype=np.float64)
    start = 0
    while start < len(rows):
        reach = np.cumsum(later[rows[start : start + CHUNK]])
        stop = start + max(1, int(np.searchsorted(reach, CHUNK, side="right")))
        chunk, start = rows[start:stop], stop
        full = len(kept) >= keep
        if full and int(members[chunk[0]]) * n > int(kept[keep - 1]):
            break  # every later pair's code is larger than the last kept one
        left_at, right_at, _, _ = _expand(chunk, chunk + 1, later[chunk])
        codes = np.unique(members[left_at] * n + members[right_at])
        codes = codes[~np.isin(codes, kept)]
        if full:
            codes = codes[codes < kept[keep - 1]]
        if len(codes) == 0:
            continue
        similarity = similarity_of(codes // n, codes % n)
        passed = similarity >= threshold - TOLERANCE
        merged = np.concatenate([kept, codes[passed]])
        order = np.argsort(merged, kind="stable")[:keep]
        kept = merged[order]
        kept_similarity = np.concatenate([kept_similarity, similarity[passed]])[order]
    return kept // n, kept % n, kept_similarity


TEXT_PAIR_SCHEMA = {
    "split": pl.Int64,
    "left": pl.Int64,
    "right": pl.Int64,
    "similarity": pl.Float64,
    "estimate": pl.Float64,
}


def text_pair_frame(
    split: int | np.ndarray,
    left: np.ndarray,
    right: np.ndarray,
    similarity: np.ndarray,
    estimate: np.ndarray,
) -> pl.DataFrame:
    """Pairs of texts of a split (or of the splits given per pair), as ``near_row_pairs`` takes."""
    scope = np.broadcast_to(np.asarray(split, dtype=np.int64), left.shape)
    columns = [scope, left, right, similarity, estimate]
    return pl.DataFrame(dict(zip(TEXT_PAIR_SCHEMA, columns, strict=True)), schema=TEXT_PAIR_SCHEMA)


def near_row_pairs(
    pairs: pl.DataFrame, rows: pl.DataFrame, limit: int = LIMIT
) -> tuple[pl.DataFrame, list[int]]:
    """The listed near pairs of items, and the splits that had more than ``limit``.

    ``pairs`` has ``split, left, right, similarity, estimate``: at least the
    first ``limit + 1`` pairs of texts of each split that has them (more are
    dropped). ``rows`` has ``row, split, text_index, id`` for (at least) the
    rows of those texts. Returns ``a_row, b_row, a_split, b_split,
    similarity, estimate``.
    """
    ordered = rows.sort("split", "text_index", "id", "row").with_row_index("position")
    texts = ordered.group_by("split", "text_index", maintain_order=True).agg(
        pl.col("position").first().alias("start"), pl.len().alias("m")
    )
    chosen = (
        pairs.unique(["split", "left", "right"], keep="first")
        .sort("split", "left", "right")
        .group_by("split", maintain_order=True)
        .head(limit + 1)
    )
    joined = chosen.join(
        texts.rename({"text_index": "left", "start": "l_start", "m": "l_m"}),
        on=["split", "left"],
    ).join(
        texts.rename({"text_index": "right", "start": "r_start", "m": "r_m"}),
        on=["split", "right"],
    )
    joined = joined.sort("split", "left", "right")
    split = joined["split"].to_numpy().astype(np.int64)
    l_m, r_m = joined["l_m"].to_numpy().astype(np.int64), joined["r_m"].to_numpy().astype(np.int64)
    counts = l_m * r_m
    listed = np.clip(limit - _before_in_group(split, counts), 0, counts)
    by_split = joined.group_by("split").agg(
        pl.len().alias("texts"), (pl.col("l_m") * pl.col("r_m")).sum().alias("items")
    )
    truncated = sorted(
        int(s) for s, texts, items in by_split.iter_rows() if texts > limit or items > limit
    )
    # The first `listed` cells of each pair's rectangle, row by row: whole rows, then cut.
    row_count = -(-listed // np.maximum(r_m, 1))
    l_start = joined["l_start"].to_numpy().astype(np.int64)
    r_start = joined["r_start"].to_numpy().astype(np.int64)
    pair_of_row = np.repeat(np.arange(len(joined), dtype=np.int64), row_count)
    row_in_pair = np.arange(len(pair_of_row), dtype=np.int64) - np.repeat(
        np.cumsum(row_count) - row_count, row_count
    )
    cells = np.minimum(r_m[pair_of_row], listed[pair_of_row] - row_in_pair * r_m[pair_of_row])
    a_at, b_at, block, _ = _expand(l_start[pair_of_row] + row_in_pair, r_start[pair_of_row], cells)
    pair = pair_of_row[block]
    positions = ordered["row"].to_numpy()
    frame = pl.DataFrame(
        {
            "a_row": positions[a_at].astype(np.int64),
            "b_row": positions[b_at].astype(np.int64),
            "a_split": split[pair],
            "b_split": split[pair],
            "similarity": joined["similarity"].to_numpy()[pair].astype(np.float64),
            "estimate": joined["estimate"].to_numpy()[pair].astype(np.float64),
        }
    )
    return frame, truncated
