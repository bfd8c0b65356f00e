"""From an input table to the groups the assignment works on.

The unit of assignment is a *group*: all rows sharing the values of the
``--group`` columns, further merged with any duplicate-text clusters. Groups
are numbered in the sorted order of their keys, never in input order, which
is what makes a split independent of how the input rows happen to be ordered.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from evalkit.errors import NO_VALUE, InvalidTable, UsageError
from evalkit.splitting.options import NullGroupPolicy
from evalkit.splitting.state import FREE, GroupTable, IntArray

NULL_LABEL = "(null)"
# Group x class tables up to this many cells are counted densely with bincount.
DENSE_CELLS = 64_000_000


@dataclass(frozen=True)
class Grouping:
    """The groups of a table: which group each row is in, and the group table."""

    row_group: IntArray  # group index of every input row
    table: GroupTable
    labels: list[str]  # class labels, by class index
    n_merged_groups: int  # key groups merged into another by duplicate clusters
    largest_merged_group: int  # items in the largest group that a merge produced
    n_null_groups: int  # rows that became singleton groups (null key)
    n_frozen_groups: int  # groups placed by --freeze
    freeze_conflicts: int  # merged groups whose frozen parts were in different splits


def group_key(columns: Sequence[str]) -> pl.Expr:
    """The key expression of one or several group columns (a struct when several)."""
    if len(columns) == 1:
        return pl.col(columns[0])
    return pl.struct(list(columns))


def null_key_rows(frame: pl.DataFrame, columns: Sequence[str]) -> pl.Series:
    """Boolean mask of rows with a null in any group column."""
    return frame.select(pl.any_horizontal(pl.col(list(columns)).is_null())).to_series()


def key_groups(
    frame: pl.DataFrame,
    columns: Sequence[str],
    id_column: str | None,
    null_policy: NullGroupPolicy,
    source: str,
) -> tuple[IntArray, int]:
    """Group index per row, numbered by sorted key; null keys per ``null_policy``."""
    nulls = null_key_rows(frame, columns)
    n_null = int(nulls.sum())
    if n_null and null_policy == "error":
        first = int(nulls.arg_true()[0]) + 1
        names = ", ".join(repr(column) for column in columns)
        raise InvalidTable(
            f"{source}: {n_null} row(s) have no value in group column {names} (first at "
            f"row {first}); fill or drop them, or pass {{null_group}} to make each "
            "its own group",
            refs={"null_group": "singleton"},
        )
    if not n_null:
        return _dense_rank(frame, columns), 0
    if id_column is None:
        raise UsageError(
            f"{source}: {n_null} row(s) have no group; {{null_group}} needs {{id_column}} "
            "to order them, so that the split does not depend on row order",
            refs={"null_group": "singleton", "id_column": NO_VALUE},
        )
    null_mask = nulls.to_numpy()
    keyed_index = _dense_rank(frame.filter(~nulls), columns)
    n_keyed = int(keyed_index.max()) + 1 if keyed_index.size else 0
    # Rows without a key become groups of their own, after the keyed groups,
    # ordered by id.
    order = frame[id_column].filter(nulls).rank("ordinal").to_numpy().astype(np.int64) - 1
    out = np.empty(frame.height, dtype=np.int64)
    out[~null_mask] = keyed_index
    out[null_mask] = n_keyed + order
    return out, n_null


def _dense_rank(frame: pl.DataFrame, columns: Sequence[str]) -> IntArray:
    """0-based index of each row's key among the sorted distinct keys."""
    ranks = frame.select(group_key(columns).rank("dense").cast(pl.Int64)).to_series()
    return ranks.to_numpy().astype(np.int64) - 1


def merge_clusters(row_group: IntArray, row_cluster: IntArray) -> tuple[IntArray, int, int]:
    """Merge groups that share a duplicate cluster (union-find via graph components).

    Returns the new group per row (numbered by the smallest original group it
    contains, so the order stays canonical), how many original groups were
    merged away, and the item count of the largest group that a merge made.
    """
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    n_groups = int(row_group.max()) + 1 if row_group.size else 0
    _, cluster = np.unique(row_cluster, return_inverse=True)
    n_clusters = int(cluster.max()) + 1 if cluster.size else 0
    size = n_groups + n_clusters
    graph = coo_matrix(
        (np.ones(row_group.size, dtype=np.int8), (row_group, n_groups + cluster)),
        shape=(size, size),
    )
    _, component = connected_components(graph, directed=False)
    group_component = component[:n_groups]
    # Renumber components by their smallest original group.
    first_group = np.full(int(component.max()) + 1, n_groups, dtype=np.int64)
    np.minimum.at(first_group, group_component, np.arange(n_groups))
    order = np.argsort(first_group[np.unique(group_component)], kind="stable")
    renumber = np.empty(first_group.size, dtype=np.int64)
    renumber[np.unique(group_component)[order]] = np.arange(order.size)
    merged_group = renumber[group_component]
    new_row_group = merged_group[row_group]
    n_merged = n_groups - int(np.unique(merged_group).size)
    members = np.bincount(merged_group, minlength=order.size)
    items = np.bincount(new_row_group, minlength=order.size)
    largest = int(items[members > 1].max(initial=0))
    return new_row_group, n_merged, largest


def class_index(frame: pl.DataFrame, column: str | None) -> tuple[IntArray, list[str]]:
    """Class index per row and the sorted class labels (one class when not stratifying)."""
    if column is None:
        return np.zeros(frame.height, dtype=np.int64), ["(all)"]
    labels = frame[column].cast(pl.String).fill_null(NULL_LABEL)
    names = labels.unique().sort().to_list()
    # An Enum over the sorted labels maps each row to its label's rank by hashing,
    # much faster than sorting millions of strings.
    codes = labels.cast(pl.Enum(names)).to_physical().to_numpy().astype(np.int64)
    return codes, names


def build_table(
    row_group: IntArray, row_class: IntArray, n_classes: int, pinned: IntArray | None = None
) -> GroupTable:
    """Aggregate rows into the sparse group table the assignment works on."""
    n_groups = int(row_group.max()) + 1 if row_group.size else 0
    if n_groups * n_classes <= DENSE_CELLS:
        cells = np.bincount(row_group * n_classes + row_class, minlength=n_groups * n_classes)
        nonzero = np.flatnonzero(cells)
        group, entry_class, entry_count = nonzero // n_classes, nonzero % n_classes, cells[nonzero]
    else:
        pairs = (
            pl.DataFrame({"group": row_group, "cls": row_class})
            .group_by("group", "cls")
            .len()
            .sort("group", "cls")
        )
        group = pairs["group"].to_numpy()
        entry_class, entry_count = pairs["cls"].to_numpy(), pairs["len"].to_numpy()
    indptr = np.r_[0, np.cumsum(np.bincount(group, minlength=n_groups))].astype(np.int64)
    return GroupTable(
        sizes=np.bincount(row_group, minlength=n_groups).astype(np.int64),
        indptr=indptr,
        entry_class=entry_class.astype(np.int64),
        entry_count=entry_count.astype(np.int64),
        n_classes=n_classes,
        pinned=pinned if pinned is not None else np.full(n_groups, FREE, dtype=np.int64),
    )


def pin_frozen(
    row_group: IntArray, row_frozen: IntArray, n_groups: int
) -> tuple[IntArray, int, int]:
    """Split index per group from rows' frozen splits (-1 = new); majority on conflict."""
    known = row_frozen >= 0
    pinned = np.full(n_groups, FREE, dtype=np.int64)
    if not known.any():
        return pinned, 0, 0
    n_splits = int(row_frozen.max()) + 1
    votes = np.zeros((n_groups, n_splits), dtype=np.int64)
    np.add.at(votes, (row_group[known], row_frozen[known]), 1)
    has_vote = votes.sum(axis=1) > 0
    pinned[has_vote] = votes[has_vote].argmax(axis=1)
    conflicts = int(((votes > 0).sum(axis=1) > 1).sum())
    return pinned, int(has_vote.sum()), conflicts
