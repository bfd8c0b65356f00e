"""``evalkit split --near-dup T --engine ray``: duplicate clusters computed on Ray.

The split itself stays the exact, group-aware assignment on the driver: it
needs every group's size and classes, about 80 bytes a group. What moves to
the cluster is the search, whose memory grows with the texts: normalising,
shingling, MinHash, the band buckets and the exact checks. The driver
receives the verified links (16 bytes each) and the rows of the linked texts,
and labels clusters as :func:`evalkit.leakage.clusters.duplicate_components`
does: each row with the first row of its cluster.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from evalkit.leakage.candidates import sorted_unique
from evalkit.leakage.distributed import index as text_index
from evalkit.leakage.distributed import tasks
from evalkit.leakage.distributed.session import RayOptions, RaySession, ray_session
from evalkit.leakage.minhash import choose_lsh
from evalkit.leakage.progress import Progress

CHUNK_ROWS = 100_000  # texts sent to the cluster per task


def duplicate_components_on_ray(
    texts: pl.Series, threshold: float, *, seed: int, progress: bool, options: RayOptions
) -> np.ndarray:
    """The labels of :func:`~evalkit.leakage.clusters.duplicate_components`, from a cluster."""
    params = choose_lsh(threshold, seed=seed)
    labels = np.arange(len(texts), dtype=np.int64)
    with ray_session(options, Progress(progress)) as session:
        parts = options.partitions or max(2, session.cpus, -(-len(texts) // 250_000))
        parts = max(2, parts)
        normalize = session.remote(tasks.normalize_chunk, num_returns=2)
        starts = list(range(0, len(texts), CHUNK_ROWS)) or [0]
        chunks = [normalize.remote(texts.slice(start, CHUNK_ROWS)) for start in starts]
        samples = session.run("normalising texts", [chunk[0] for chunk in chunks])
        index = text_index.sort_texts(
            session,
            [(chunk[1], start) for chunk, start in zip(chunks, starts, strict=True)],
            samples,
            params,
            True,
            parts,
        )
        _label_exact(session, index, labels)
        links = text_index.similar_pairs(
            session, index, params, cross=False, per_round=options.bands_per_round
        )
        _label_near(session, index, links.left, links.right, labels)
    return labels


def _label_exact(session: RaySession, index: text_index.TextIndex, labels: np.ndarray) -> None:
    """Rows with the same text get the text's first row (the exact duplicates' clusters)."""
    first = session.remote(tasks.first_rows_of_shared_texts)
    frames = session.run("exact duplicates", [first.remote(p) for p in index.partitions])
    for frame in frames:
        labels[frame["row"].to_numpy()] = frame["first_row"].to_numpy()


def _label_near(
    session: RaySession,
    index: text_index.TextIndex,
    left: np.ndarray,
    right: np.ndarray,
    labels: np.ndarray,
) -> None:
    """Rows of linked texts get the first row of their connected component."""
    nodes = sorted_unique(np.concatenate([left, right]))
    if len(nodes) == 0:
        return
    component = _components(len(nodes), np.searchsorted(nodes, left), np.searchsorted(nodes, right))
    rows = text_index.rows_of(session, index, nodes)
    row_component = component[np.searchsorted(nodes, rows["text_index"].to_numpy())]
    first_row = np.full(int(component.max()) + 1, np.iinfo(np.int64).max, dtype=np.int64)
    row_numbers = rows["row"].to_numpy()
    np.minimum.at(first_row, row_component, row_numbers)
    labels[row_numbers] = first_row[row_component]


def _components(n_nodes: int, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """Connected components of the linked texts only: memory grows with the links."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    graph = coo_matrix((np.ones(len(left), dtype=np.int8), (left, right)), (n_nodes, n_nodes))
    return connected_components(graph, directed=False)[1].astype(np.int64)
