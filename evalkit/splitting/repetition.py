"""Repetition within each split of ``evalkit split --near-dup``, for the manifest.

``--near-dup`` keeps every duplicate cluster inside one split, so a split's
own clusters are the clusters it received; the manifest says how much of
each split they make up (``within``, the same figures ``evalkit audit``
reports), computed by :func:`evalkit.leakage.within.summarize` from the
clusters already found, with no second search.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl


def split_repetition(
    frame: pl.DataFrame,
    compared: pl.Series | None,
    clusters: np.ndarray | None,
    row_split: np.ndarray,
    names: Sequence[str],
    id_column: str | None,
) -> dict[str, dict[str, object]] | None:
    """Per split: shares in exact and near clusters, the largest, the top openings (or None).

    ``compared`` are the texts ``--near-dup`` compared and ``clusters`` each
    row's duplicate cluster; rows left out of every split are skipped.
    """
    if compared is None or clusters is None:
        return None
    from evalkit.leakage.normalize import normalize_texts
    from evalkit.leakage.within import summarize

    normalized = normalize_texts(compared)
    if id_column is not None:
        ids = frame[id_column].cast(pl.String)
    else:
        ids = pl.Series(np.arange(frame.height)).cast(pl.String)
    table = pl.DataFrame(
        {
            "split": row_split,
            "id": ids,
            "text": normalized,
            "exact": normalized,
            "cluster": clusters,
        }
    ).with_columns(pl.when(pl.col("text").is_not_null()).then(pl.col("cluster")).alias("cluster"))
    return summarize(table.filter(pl.col("split") < len(names)), names)
