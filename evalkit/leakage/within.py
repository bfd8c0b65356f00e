"""Repetition within each split: how much of a split is the same text again.

Between splits, a duplicate is a leak; inside one split it is a property of
the data that the methodology asks to study when validation stalls: a
training split whose items are one template repeated weighs that template
many times over, and a test split that repeats itself measures fewer
things than its size says. Per split this counts the items in exact
duplicate clusters (equal normalised text) and in near-duplicate clusters
(exact or near links, chained: the connected components over the split's
own items), lists the largest clusters with an example id, and the most
repeated openings (the first words of the normalised text, where templates
show even when the rest differs).

The clusters come from the same machinery as the audit across splits:
normalised texts, MinHash LSH over the distinct texts, every link checked
by exact Jaccard (:mod:`evalkit.leakage.search`), components by union-find.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

from evalkit.leakage.options import DEFAULT_OPENING_WORDS

TOP_CLUSTERS = 10
TOP_OPENINGS = 5


def components(n_nodes: int, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """The connected component of each of ``n_nodes`` nodes linked by (left, right) edges.

    Components are numbered in the order of their smallest node, as scipy's
    ``connected_components`` numbers them (it searches from node 0, 1, …).
    A union-find in numpy: each round hooks the larger of an edge's two roots
    under the smaller, then compresses every path, so a root is always the
    smallest node of its tree. Importing scipy.sparse for this cost ~0.3 s of
    CPU, more than an audit's whole search for a few thousand links.
    """
    if n_nodes == 0:
        return np.zeros(0, dtype=np.int64)
    parent = np.arange(n_nodes, dtype=np.int64)
    left, right = np.asarray(left, dtype=np.int64), np.asarray(right, dtype=np.int64)
    while len(left):
        low, high = np.minimum(parent[left], parent[right]), np.maximum(parent[left], parent[right])
        joined = low != high
        if not joined.any():
            break
        np.minimum.at(parent, high[joined], low[joined])
        while True:
            grand = parent[parent]
            if np.array_equal(grand, parent):
                break
            parent = grand
        left, right = left[joined], right[joined]
    return np.unique(parent, return_inverse=True)[1].reshape(-1).astype(np.int64)


def openings(texts: pl.Series, words: int) -> pl.Series:
    """The first ``words`` words of each normalised text (null for shorter or empty texts).

    Normalised texts hold single spaces, so a regular expression finds the
    opening without splitting every text into a list of all its words.
    """
    pattern = "^(" + "[^ ]+ " * (words - 1) + "[^ ]+)"
    return texts.str.extract(pattern, 1).alias("opening")


def summarize(
    table: pl.DataFrame,
    names: Sequence[str],
    *,
    opening_words: int = DEFAULT_OPENING_WORDS,
    near: bool = True,
) -> dict[str, dict[str, object]]:
    """Per split: shares of items in exact and near clusters, the largest, the top openings.

    Plain JSON data in the field order of :class:`evalkit.records._audit.WithinSplit`, so
    that ``evalkit split`` can write it without building the models.

    ``table`` has one row per item: ``split`` (index into ``names``), ``id``,
    ``text`` (normalised; null when empty), ``exact`` (a key equal for
    equal texts of a split, null without text) and ``cluster`` (a key equal
    for the items of one near-duplicate cluster of the split, null without
    text). ``near`` False (no near-duplicate search) leaves ``near_share``
    null and takes the clusters from the exact keys alone.
    """
    cluster_key = "cluster" if near else "exact"
    sizes = table.with_columns(
        pl.len().over("split", "exact").alias("exact_size"),
        pl.len().over("split", cluster_key).alias("cluster_size"),
    ).with_columns(
        (pl.col("exact").is_not_null() & (pl.col("exact_size") > 1)).alias("in_exact"),
        (pl.col(cluster_key).is_not_null() & (pl.col("cluster_size") > 1)).alias("in_near"),
    )
    per_split = sizes.group_by("split").agg(
        pl.len().alias("n"), pl.col("in_exact").sum(), pl.col("in_near").sum()
    )
    counts = {row[0]: row[1:] for row in per_split.iter_rows()}
    clusters = (
        sizes.filter(pl.col("in_near"))
        .group_by("split", cluster_key)
        .agg(pl.len().alias("size"), pl.col("id").min().alias("example_id"))
        .sort(["split", "size", "example_id"], descending=[False, True, False])
    )
    starts = (
        table.with_columns(openings(table["text"], opening_words))
        .drop_nulls("opening")
        .group_by("split", "opening")
        .agg(pl.len().alias("n"))
        .filter(pl.col("n") > 1)
        .sort(["split", "n", "opening"], descending=[False, True, False])
    )
    result: dict[str, dict[str, object]] = {}
    for index, name in enumerate(names):
        n, in_exact, in_near = counts.get(index, (0, 0, 0))
        mine = clusters.filter(pl.col("split") == index)
        top = starts.filter(pl.col("split") == index)
        result[name] = split_entry(
            int(n), int(in_exact), int(in_near), mine.height, mine, top, near
        )
    return result


def split_entry(
    n: int,
    in_exact: int,
    in_near: int,
    n_clusters: int,
    clusters: pl.DataFrame,
    starts: pl.DataFrame,
    near: bool,
) -> dict[str, object]:
    """One split's ``within`` entry of the audit report, as both engines write it.

    ``clusters`` (size, example_id) and ``starts`` (opening, n) are the split's,
    largest first; only the top ones are kept.
    """
    return {
        "n": n,
        "exact_share": in_exact / n if n else 0.0,
        "near_share": (in_near / n if n else 0.0) if near else None,
        "in_exact_clusters": in_exact,
        "in_near_clusters": in_near if near else None,
        "n_clusters": n_clusters,
        "clusters": [
            {"size": int(size), "example_id": str(example)}
            for size, example in clusters.head(TOP_CLUSTERS).select("size", "example_id").rows()
        ],
        "openings": [
            {"text": text, "n": int(count)}
            for text, count in starts.head(TOP_OPENINGS).select("opening", "n").rows()
        ],
    }


def split_clusters(
    keyed: pl.DataFrame, links: Sequence[tuple[np.ndarray, np.ndarray]]
) -> pl.DataFrame:
    """``row, cluster``: each row's near-duplicate cluster inside its own split.

    ``keyed`` has ``row, split, text_index`` for the rows with a text;
    ``links[s]`` are the (left, right) text pairs linked inside split ``s``.
    The nodes of split ``s`` are its distinct texts, so rows with the same
    text are in one cluster; a cluster number is unique across splits.
    """
    parts, offset = [], 0
    for split, (left, right) in enumerate(links):
        mine = keyed.filter(pl.col("split") == split)
        texts = np.unique(mine["text_index"].to_numpy())
        local = components(len(texts), np.searchsorted(texts, left), np.searchsorted(texts, right))
        cluster = local[np.searchsorted(texts, mine["text_index"].to_numpy())] + offset
        offset += len(texts)
        parts.append(pl.DataFrame({"row": mine["row"], "cluster": cluster}))
    if not parts:
        return pl.DataFrame(schema={"row": pl.Int64, "cluster": pl.Int64})
    return pl.concat(parts)


def smaller_id_first(pairs: pl.DataFrame) -> pl.DataFrame:
    """Pairs inside one split, named with the smaller id as ``a``, sorted by split then ids."""
    swap = pl.col("a") > pl.col("b")
    return pairs.with_columns(
        pl.when(swap).then(pl.col("b")).otherwise(pl.col("a")).alias("a"),
        pl.when(swap).then(pl.col("a")).otherwise(pl.col("b")).alias("b"),
    ).sort(["a_split", "a", "b", *(c for c in ("similarity", "estimate") if c in pairs.columns)])
