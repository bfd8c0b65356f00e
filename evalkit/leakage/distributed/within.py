"""Repetition within each split (``report.within``) from partitions of the rows.

:func:`evalkit.leakage.within.summarize` counts, per split, the items in
exact clusters (equal text) and in near clusters (components of the split's
own links), lists the largest clusters with their smallest id, and the most
repeated openings. Here the same figures come from partial counts:

- a text's rows all lie in one text partition, so exact clusters, and near
  clusters of a single text, are counted there, each partition keeping its
  ten largest clusters per split;
- a near cluster of linked texts may span partitions: the driver numbers the
  components of each split's links (memory grows with the links), each
  partition counts its rows per component, and the driver adds them up;
- openings are counted per block and summed in partitions hashed by opening,
  each keeping its five most repeated per split.

The merged result is :func:`summarize`'s, field for field.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

from evalkit.leakage.distributed.checks import CheckedPairs
from evalkit.leakage.distributed.partitions import hash_part, split_by_part
from evalkit.leakage.within import TOP_CLUSTERS, TOP_OPENINGS, components, openings, split_entry

OPENING_SCHEMA = {"split": pl.Int64, "opening": pl.String, "n": pl.UInt32}
CLUSTER_SCHEMA = {"split": pl.Int64, "size": pl.UInt32, "example_id": pl.String}


def opening_parts(frame: pl.DataFrame, words: int, parts: int) -> list[pl.DataFrame]:
    """A block's (split, opening, n) counts, cut by a hash of the opening."""
    counts = (
        frame.select("split", openings(frame["text"], words))
        .drop_nulls("opening")
        .group_by("split", "opening")
        .agg(pl.len().alias("n"))
    )
    return split_by_part(counts, hash_part(counts["opening"], parts), parts)


def top_openings(*parts: pl.DataFrame) -> pl.DataFrame:
    """The openings of two or more items with their counts, the top five per split."""
    frames = [part for part in parts if part.width]
    counts = pl.concat(frames) if frames else pl.DataFrame(schema=OPENING_SCHEMA)
    return _top_openings(counts.group_by("split", "opening").agg(pl.col("n").sum()))


def _top_openings(counts: pl.DataFrame) -> pl.DataFrame:
    return (
        counts.filter(pl.col("n") > 1)
        .sort(["split", "n", "opening"], descending=[False, True, False])
        .group_by("split", maintain_order=True)
        .head(TOP_OPENINGS)
    )


def split_components(pairs: CheckedPairs, n_splits: int) -> pl.DataFrame:
    """``split, text_index, component``: each linked text's component inside each split."""
    frames = [
        pl.DataFrame(schema={"split": pl.Int64, "text_index": pl.Int64, "component": pl.Int64})
    ]
    offset = 0
    for split in range(n_splits):
        mine = pairs.of_scope(split)
        nodes = np.unique(np.concatenate([mine.left, mine.right]))
        if len(nodes) == 0:
            continue
        local = components(
            len(nodes), np.searchsorted(nodes, mine.left), np.searchsorted(nodes, mine.right)
        )
        frames.append(
            pl.DataFrame(
                {
                    "split": np.full(len(nodes), split, dtype=np.int64),
                    "text_index": nodes.astype(np.int64),
                    "component": local + offset,
                }
            )
        )
        offset += len(nodes)
    return pl.concat(frames)


def cluster_partials(
    keyed: pl.DataFrame, first_rank: int, linked: pl.DataFrame, n_splits: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, pl.DataFrame, pl.DataFrame]:
    """One text partition's share of the clusters inside each split.

    Returns per split the items in exact clusters, the items and the number
    of clusters made of one text (repeated), their ten largest
    (``split, size, example_id``), and the rows per linked component
    (``split, component, size, example_id``) for the driver to add up.
    """
    rows = keyed.with_columns(pl.col("text_index") + first_rank).join(
        linked, on=["split", "text_index"], how="left"
    )
    per_text = rows.group_by("split", "text_index").agg(
        pl.len().alias("size"), pl.col("id").min().alias("example_id"), pl.col("component").first()
    )
    repeated = per_text.filter(pl.col("size") > 1)
    in_exact = np.bincount(
        repeated["split"].to_numpy(), weights=repeated["size"].to_numpy(), minlength=n_splits
    )
    alone = repeated.filter(pl.col("component").is_null())
    in_alone = np.bincount(
        alone["split"].to_numpy(), weights=alone["size"].to_numpy(), minlength=n_splits
    )
    n_alone = np.bincount(alone["split"].to_numpy(), minlength=n_splits)
    top = _top_clusters(alone.select("split", "size", "example_id"))
    parts = (
        per_text.filter(pl.col("component").is_not_null())
        .group_by("split", "component")
        .agg(pl.col("size").sum(), pl.col("example_id").min())
    )
    return in_exact.astype(np.int64), in_alone.astype(np.int64), n_alone, top, parts


def _top_clusters(clusters: pl.DataFrame) -> pl.DataFrame:
    return (
        clusters.sort(["split", "size", "example_id"], descending=[False, True, False])
        .group_by("split", maintain_order=True)
        .head(TOP_CLUSTERS)
    )


def summaries(
    names: Sequence[str],
    n_items: np.ndarray,
    partials: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray, pl.DataFrame, pl.DataFrame]],
    opening_tops: Sequence[pl.DataFrame],
    near: bool,
) -> dict[str, dict[str, object]]:
    """:func:`evalkit.leakage.within.summarize`'s result from the partitions' partial counts."""
    n_splits = len(names)
    in_exact = sum((p[0] for p in partials), np.zeros(n_splits, dtype=np.int64))
    in_near = sum((p[1] for p in partials), np.zeros(n_splits, dtype=np.int64))
    n_clusters = sum((p[2] for p in partials), np.zeros(n_splits, dtype=np.int64))
    linked = pl.concat([p[4] for p in partials], how="vertical_relaxed")
    linked = linked.group_by("split", "component").agg(
        pl.col("size").sum(), pl.col("example_id").min()
    )
    in_near += np.bincount(linked["split"].to_numpy(), weights=linked["size"].to_numpy(),
                           minlength=n_splits).astype(np.int64)  # fmt: skip
    n_clusters += np.bincount(linked["split"].to_numpy(), minlength=n_splits)
    clusters = _top_clusters(
        pl.concat(
            [*(p[3] for p in partials), linked.select("split", "size", "example_id")],
            how="vertical_relaxed",
        )
    )
    starts = _top_openings(pl.concat(list(opening_tops), how="vertical_relaxed"))
    result: dict[str, dict[str, object]] = {}
    for index, name in enumerate(names):
        n = int(n_items[index])
        exact, near_items = int(in_exact[index]), int(in_near[index])
        if not near:  # the clusters are the exact ones
            near_items = exact
        mine = clusters.filter(pl.col("split") == index)
        top = starts.filter(pl.col("split") == index)
        result[name] = split_entry(n, exact, near_items, int(n_clusters[index]), mine, top, near)
    return result
