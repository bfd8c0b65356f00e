"""Each kind of leak, computed column-wise from the stacked rows of all splits.

Functions here return polars frames keyed by row numbers and split indices;
:mod:`evalkit.leakage.api` turns them into the typed report.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np
import polars as pl

from evalkit.leakage.search import SimilarPairs

PAIR_COLUMNS = ["a_row", "b_row", "a_split", "b_split"]


def group_leaks(table: pl.DataFrame, group_columns: Sequence[str]) -> pl.DataFrame:
    """Groups (rows with a non-null key) in several splits: ``key, label, split, items``.

    One row per (leaked group, split), sorted by label then split. A row with a
    null in any group column belongs to no group, so it cannot leak.
    """
    keyed = table.drop_nulls(list(group_columns))
    key = pl.struct(list(group_columns)) if len(group_columns) > 1 else pl.col(group_columns[0])
    counts = keyed.group_by(key.alias("key"), "split").agg(pl.len().alias("items"))
    leaked = counts.filter(pl.col("key").count().over("key") > 1)
    if leaked.height == 0:
        return pl.DataFrame(schema={"label": pl.String, "split": pl.Int64, "items": pl.UInt32})
    if len(group_columns) > 1:
        labels = [json.dumps(list(value.values())) for value in leaked["key"].to_list()]
        leaked = leaked.with_columns(pl.Series("label", labels, dtype=pl.String))
    else:
        leaked = leaked.with_columns(pl.col("key").alias("label"))
    return leaked.select("label", "split", "items").sort("label", "split")


def id_overlaps(table: pl.DataFrame) -> pl.DataFrame:
    """Ids found in several splits: ``id, splits`` (sorted split indices), sorted by id."""
    per_id = table.group_by("id").agg(pl.col("split").unique().sort().alias("splits"))
    return per_id.filter(pl.col("splits").list.len() > 1).sort("id")


def duplicate_ids_per_split(table: pl.DataFrame, n_splits: int) -> np.ndarray:
    """Rows whose id occurs more than once in their own split, per split."""
    repeated = table.filter(pl.len().over("split", "id") > 1)
    return np.bincount(repeated["split"].to_numpy(), minlength=n_splits)


def split_masks(row_split: np.ndarray, text_index: np.ndarray, n_texts: int) -> np.ndarray:
    """Per distinct text, the bit mask of the splits it occurs in."""
    masks = np.zeros(n_texts, dtype=np.int64)
    np.bitwise_or.at(masks, text_index, np.left_shift(np.int64(1), row_split.astype(np.int64)))
    return masks


def exact_pairs(rows: pl.DataFrame) -> pl.DataFrame:
    """Cross-split row pairs with the same text: ``a_row, b_row, a_split, b_split``.

    ``rows`` has ``row, split, text_index`` for the rows with a text. Each pair
    appears once, oriented from the earlier split to the later one.
    """
    shared = rows.filter(pl.col("split").n_unique().over("text_index") > 1)
    joined = shared.join(shared, on="text_index", suffix="_b").filter(
        pl.col("split") < pl.col("split_b")
    )
    return joined.select(
        pl.col("row").alias("a_row"),
        pl.col("row_b").alias("b_row"),
        pl.col("split").alias("a_split"),
        pl.col("split_b").alias("b_split"),
    )


def near_pairs(rows: pl.DataFrame, similar: SimilarPairs) -> pl.DataFrame:
    """Cross-split row pairs whose (distinct) texts are similar, with both similarities.

    Every row of the one text is paired with every row of the other that lies
    in a different split; pairs run from the earlier split to the later one.
    """
    texts = pl.DataFrame(
        {
            "left": similar.left,
            "right": similar.right,
            "similarity": similar.similarity,
            "estimate": similar.estimate,
        }
    )
    side = rows.select("row", "split", "text_index")
    joined = texts.join(side, left_on="left", right_on="text_index").join(
        side, left_on="right", right_on="text_index", suffix="_r"
    )
    joined = joined.filter(pl.col("split") != pl.col("split_r"))
    forward = pl.col("split") < pl.col("split_r")
    return joined.select(
        pl.when(forward).then(pl.col("row")).otherwise(pl.col("row_r")).alias("a_row"),
        pl.when(forward).then(pl.col("row_r")).otherwise(pl.col("row")).alias("b_row"),
        pl.min_horizontal("split", "split_r").alias("a_split"),
        pl.max_horizontal("split", "split_r").alias("b_split"),
        "similarity",
        "estimate",
    )


def with_ids(pairs: pl.DataFrame, table: pl.DataFrame) -> pl.DataFrame:
    """Add the ids ``a``, ``b`` of a pair frame's rows and sort by split, then id."""
    ids = table.select("row", "id")
    named = pairs.join(ids.rename({"row": "a_row", "id": "a"}), on="a_row").join(
        ids.rename({"row": "b_row", "id": "b"}), on="b_row"
    )
    extra = [column for column in ("similarity",) if column in named.columns]
    return named.sort(["a_split", "b_split", "a", "b", *extra], descending=False)


def class_counts(table: pl.DataFrame, n_splits: int) -> tuple[list[str], list[dict[str, int]]]:
    """Every class (sorted) and, per split, the rows of each class (zero included)."""
    labelled = table.drop_nulls("class")
    classes = sorted(labelled["class"].unique().to_list())
    counts: list[dict[str, int]] = [dict.fromkeys(classes, 0) for _ in range(n_splits)]
    grouped = labelled.group_by("split", "class").agg(pl.len().alias("n"))
    for split, label, n in grouped.iter_rows():
        counts[split][label] = int(n)
    return classes, counts
