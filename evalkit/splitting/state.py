"""The state of an assignment: groups, targets, and counts kept in step with every move."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

FREE = -1
# Small tables keep every group's dense class vector (searches read them often).
DENSE_CACHE_CELLS = 4_000_000


@dataclass(frozen=True)
class GroupTable:
    """Groups as the assignment sees them, in canonical (key-sorted) order.

    Class membership is stored sparsely (CSR: the entries of group ``g`` are
    ``indptr[g]:indptr[g + 1]``) because a group usually holds one or two of
    possibly many classes.
    """

    sizes: IntArray
    indptr: IntArray
    entry_class: IntArray
    entry_count: IntArray
    n_classes: int
    pinned: IntArray  # split index of a frozen group, FREE otherwise

    @property
    def n_groups(self) -> int:
        return int(self.sizes.shape[0])

    def dominant_class(self) -> IntArray:
        """The most frequent class of each group (lowest index on ties)."""
        order = np.lexsort((self.entry_class, -self.entry_count, self.entry_row()))
        firsts = order[self.indptr[:-1]]
        return self.entry_class[firsts]

    def entry_row(self) -> IntArray:
        """The group index of every CSR entry."""
        return self._entry_row

    @cached_property
    def _entry_row(self) -> IntArray:
        return np.repeat(np.arange(self.n_groups, dtype=np.int64), np.diff(self.indptr))

    def dense(self, groups: IntArray) -> IntArray:
        """Class-count vectors (len(groups) x n_classes) of the given groups."""
        if self.n_groups * self.n_classes <= DENSE_CACHE_CELLS:
            return self._dense_all[groups]
        return self._dense_rows(groups)

    @cached_property
    def _dense_all(self) -> IntArray:
        return self._dense_rows(np.arange(self.n_groups, dtype=np.int64))

    def _dense_rows(self, groups: IntArray) -> IntArray:
        starts, stops = self.indptr[groups], self.indptr[groups + 1]
        lengths = stops - starts
        rows = np.repeat(np.arange(groups.shape[0]), lengths)
        offsets = np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        entries = np.repeat(starts, lengths) + offsets
        out = np.zeros((groups.shape[0], self.n_classes), dtype=np.int64)
        np.add.at(out, (rows, self.entry_class[entries]), self.entry_count[entries])
        return out


@dataclass(frozen=True)
class Problem:
    """What to achieve: item targets per split and which splits need class coverage."""

    targets: IntArray
    covered_splits: BoolArray  # splits in which every required class must appear
    seed: int


@dataclass
class Assignment:
    """A split index per group, with the counts kept in step with every move."""

    table: GroupTable
    problem: Problem
    split_of: IntArray
    items: IntArray = field(init=False)
    class_counts: IntArray = field(init=False)
    carriers: IntArray = field(init=False)

    def __post_init__(self) -> None:
        n_splits = self.problem.targets.shape[0]
        self.items = np.bincount(self.split_of, weights=self.table.sizes, minlength=n_splits)
        self.items = self.items.astype(np.int64)
        rows = self.table.entry_row()
        flat = self.split_of[rows] * self.table.n_classes + self.table.entry_class
        size = n_splits * self.table.n_classes
        counts = np.bincount(flat, weights=self.table.entry_count, minlength=size)
        self.class_counts = counts.astype(np.int64).reshape(n_splits, self.table.n_classes)
        self.carriers = np.bincount(flat, minlength=size).reshape(n_splits, -1).astype(np.int64)

    def move(self, group: int, to_split: int) -> None:
        """Move one group, updating item, class and carrier counts."""
        source = int(self.split_of[group])
        if source == to_split:
            return
        start, stop = self.table.indptr[group], self.table.indptr[group + 1]
        classes, counts = self.table.entry_class[start:stop], self.table.entry_count[start:stop]
        size = self.table.sizes[group]
        self.items[source] -= size
        self.items[to_split] += size
        self.class_counts[source, classes] -= counts
        self.class_counts[to_split, classes] += counts
        self.carriers[source, classes] -= 1
        self.carriers[to_split, classes] += 1
        self.split_of[group] = to_split

    def deviations(self) -> IntArray:
        """Items above (+) or below (-) each split's target."""
        return self.items - self.problem.targets


def required_classes(table: GroupTable, problem: Problem) -> BoolArray:
    """Classes present in at least as many groups as there are covered splits."""
    groups_per_class = np.bincount(table.entry_class, minlength=table.n_classes)
    return groups_per_class >= int(problem.covered_splits.sum())


class Balance:
    """The balance objective: squared class-share deviation summed over splits."""

    def __init__(self, table: GroupTable, problem: Problem) -> None:
        totals = np.bincount(
            table.entry_class, weights=table.entry_count, minlength=table.n_classes
        )
        shares = totals / max(totals.sum(), 1)
        targets = problem.targets.astype(np.float64)
        self.expected = np.outer(targets, shares)
        with np.errstate(divide="ignore"):
            self.weight = np.where(targets > 0, 1.0 / np.maximum(targets, 1.0) ** 2, 0.0)

    def value(self, state: Assignment) -> float:
        deviation = state.class_counts - self.expected
        return float((self.weight[:, None] * deviation**2).sum())

    def swap_delta(self, state: Assignment, a: int, b: int, transfer: IntArray) -> FloatArray:
        """Objective change when class vectors ``transfer`` (rows) move from a to b."""
        dev_a = state.class_counts[a] - self.expected[a]
        dev_b = state.class_counts[b] - self.expected[b]
        square = (transfer * transfer).sum(axis=1)
        change_a = -2.0 * transfer @ dev_a + square
        change_b = 2.0 * transfer @ dev_b + square
        return np.asarray(self.weight[a] * change_a + self.weight[b] * change_b)


def keeps_coverage(
    state: Assignment, required: BoolArray, group: int, source: int, incoming: int | None = None
) -> bool:
    """True when moving ``group`` out of ``source`` leaves every required class there."""
    if not state.problem.covered_splits[source]:
        return True
    start, stop = state.table.indptr[group], state.table.indptr[group + 1]
    classes = state.table.entry_class[start:stop]
    critical = classes[required[classes] & (state.carriers[source, classes] <= 1)]
    if critical.size == 0:
        return True
    if incoming is None:
        return False
    start, stop = state.table.indptr[incoming], state.table.indptr[incoming + 1]
    return bool(np.isin(critical, state.table.entry_class[start:stop]).all())


def movable(state: Assignment, split: int, required: BoolArray) -> IntArray:
    """Free groups of ``split`` whose departure keeps its class coverage."""
    table = state.table
    in_split = (state.split_of == split) & (table.pinned < 0)
    if state.problem.covered_splits[split]:
        rows, classes = table.entry_row(), table.entry_class
        sole = required[classes] & (state.carriers[split, classes] <= 1) & in_split[rows]
        in_split[rows[sole]] = False
    return np.flatnonzero(in_split)


def sample(groups: IntArray, limit: int, rng: np.random.Generator) -> IntArray:
    """At most ``limit`` of ``groups``, drawn without replacement (all of them if fewer)."""
    if groups.size <= limit:
        return groups
    return np.sort(rng.choice(groups, limit, replace=False))
