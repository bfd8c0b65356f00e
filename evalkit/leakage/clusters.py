"""Duplicate clusters for ``evalkit split --near-dup``: one label per row.

Rows whose normalised texts are equal, or whose word-shingle sets have a
Jaccard similarity at or above the threshold, are linked; the clusters are the
connected components of those links (union-find,
:func:`evalkit.leakage.within.components`), so near duplicates chain: if a ~ b and
b ~ c, all three share a cluster even when a and c are further apart.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

from evalkit.leakage.distributed.session import RayOptions
from evalkit.leakage.minhash import choose_lsh
from evalkit.leakage.normalize import as_text_series, normalize_texts
from evalkit.leakage.progress import Progress
from evalkit.leakage.search import find_similar_pairs
from evalkit.leakage.within import components


def distinct_texts(normalized: pl.Series) -> tuple[pl.Series, np.ndarray, np.ndarray]:
    """The distinct non-null texts in sorted order, and for each non-null row its text index.

    Returns (texts, rows, text_index): ``rows`` are the positions of the rows
    with a text and ``text_index[i]`` the index of row ``rows[i]``'s text.
    Sorting makes the indices a function of the set of texts, not of row order.
    """
    frame = pl.DataFrame({"text": normalized}).with_row_index("row").drop_nulls("text")
    distinct = frame.select("text").unique().sort("text").with_row_index("text_index")
    joined = frame.join(distinct, on="text", how="left")
    return (
        distinct["text"],
        joined["row"].to_numpy().astype(np.int64),
        joined["text_index"].to_numpy().astype(np.int64),
    )


def duplicate_components(
    texts: pl.Series | Sequence[str | None],
    threshold: float,
    *,
    seed: int = 0,
    progress: bool = False,
    engine: str = "local",
    ray: RayOptions | None = None,
) -> np.ndarray:
    """Label every row with its exact-or-near-duplicate cluster (an int64 per row).

    ``texts`` is a polars Series or a sequence of str/None. Rows share a label
    when they are linked by a chain of exact duplicates (equal after
    normalisation: NFKC, lower case, whitespace) or near duplicates (Jaccard
    similarity of word 3-shingles >= ``threshold``, found by MinHash LSH and
    checked exactly). A label is the position of the cluster's first row, so
    a row without duplicates is labelled with its own position; null and
    empty texts are never anyone's duplicate. The same texts and ``seed`` give
    the same clusters whatever the row order. ``progress`` draws bars on
    stderr when it is a terminal. ``engine="ray"`` computes the same labels on
    a Ray cluster (``ray`` says which; see :mod:`evalkit.leakage.distributed`).
    """
    params = choose_lsh(threshold, seed=seed)
    series = as_text_series(texts)
    if engine not in ("local", "ray"):
        raise ValueError(f"engine must be local or ray, got {engine!r}")
    if engine == "ray":
        from evalkit.leakage.distributed.clusters import duplicate_components_on_ray

        return duplicate_components_on_ray(
            series, threshold, seed=seed, progress=progress, options=ray or RayOptions()
        )
    labels = np.arange(len(series), dtype=np.int64)
    distinct, rows, text_index = distinct_texts(normalize_texts(series))
    if len(distinct) == 0:
        return labels
    pairs = find_similar_pairs(distinct, params, progress=Progress(progress))
    component = components(len(distinct), pairs.left, pairs.right)
    row_component = component[text_index]
    # Label each cluster by its first row: the minimum row position per component.
    first_row = np.full(int(component.max()) + 1, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(first_row, row_component, rows)
    labels[rows] = first_row[row_component]
    return labels
