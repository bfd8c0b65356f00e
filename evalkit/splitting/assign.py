"""Assign whole groups to splits: exact item counts first, then class balance.

The problem: place every group (a conversation, a document) in one split so
that each split holds exactly its target number of *items*, each split's class
shares track the whole, and every class found in enough groups appears in
every split. Exact counts are a multi-way subset-sum problem and balance is a
quadratic objective, so the assignment is built in four cheap steps:

1. **Allocate** (vectorised): groups are stratified by their dominant class,
   shuffled with the seeded generator, and laid out along each stratum's
   cumulative item count; a group goes to the split whose share of the unit
   interval (rotated by a random offset per stratum) holds its midpoint. This
   is proportional allocation within every stratum, so on large data it is
   already balanced and within a few items of every target.
2. **Cover**: every required class missing from a split gets one of its
   groups moved in from a split that holds several.
3. **Fix counts**: surplus items move from split to split through a single
   group of the exact size, a swap of two groups whose sizes differ by the
   surplus, or, failing those, a minimum-cardinality subset-sum transfer
   found by dynamic programming over the two splits' groups.
4. **Balance**: steepest-descent swaps of equally sized groups between splits
   (counts stay exact) that reduce the squared class-share deviation.

Small problems are cheap, so they are solved from several seeded starts and
the best result kept. Everything is deterministic for a seed because groups
arrive in a canonical order (sorted by key) and all randomness comes from one
``numpy.random.Generator``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

FREE = -1
# Problems with at most this many groups are solved from several starts.
RESTART_MAX_GROUPS = 2_000
RESTARTS = 16
# Pairs evaluated per balance step; beyond it candidates are sampled.
EXHAUSTIVE_PAIRS = 250_000
SAMPLED_PAIRS = 20_000
DP_POOL = 1_500
DP_WINDOW = 200_000
DP_CELLS = 40_000_000
BATCH_SWAPS = 256


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


class _Balance:
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


def _keeps_coverage(
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


def allocate(table: GroupTable, problem: Problem, rng: np.random.Generator) -> IntArray:
    """Step 1: proportional allocation of the free groups within dominant-class strata."""
    n_splits = problem.targets.shape[0]
    split_of = np.where(table.pinned >= 0, table.pinned, FREE).astype(np.int64)
    free = np.flatnonzero(split_of == FREE)
    if free.size == 0:
        return split_of
    frozen_items = np.bincount(
        split_of[split_of >= 0], weights=table.sizes[split_of >= 0], minlength=n_splits
    )
    remaining = np.maximum(problem.targets - frozen_items, 0).astype(np.float64)
    if remaining.sum() == 0:
        remaining = problem.targets.astype(np.float64) + 1e-9
    bounds = np.cumsum(remaining / remaining.sum())
    bounds[-1] = 1.0
    strata = table.dominant_class()[free]
    order = np.lexsort((rng.random(free.size), strata))
    groups, strata = free[order], strata[order]
    sizes = table.sizes[groups].astype(np.float64)
    cumulative = np.cumsum(sizes)
    stratum_start = np.r_[0, np.flatnonzero(np.diff(strata)) + 1]
    stratum_length = np.diff(np.r_[stratum_start, groups.size])
    stratum_id = np.repeat(np.arange(stratum_start.size), stratum_length)
    before = np.r_[0.0, cumulative][stratum_start][stratum_id]
    totals = np.add.reduceat(sizes, stratum_start)[stratum_id]
    offset = rng.random(stratum_start.size)[stratum_id]
    position = ((cumulative - before - sizes / 2) / totals + offset) % 1.0
    split_of[groups] = np.minimum(np.searchsorted(bounds, position, side="right"), n_splits - 1)
    return split_of


def cover(state: Assignment, required: BoolArray) -> None:
    """Step 2: bring a group of every required class into each split that lacks one."""
    covered = np.flatnonzero(state.problem.covered_splits)
    movable = state.table.pinned < 0
    rows = state.table.entry_row()
    for cls in np.flatnonzero(required):
        holders = rows[state.table.entry_class == cls]
        holders = holders[movable[holders]]
        # Prefer small groups in which the class dominates: they disturb the least.
        holders = holders[np.argsort(state.table.sizes[holders], kind="stable")]
        for split in covered:
            if state.carriers[split, cls] > 0:
                continue
            for group in holders:
                source = int(state.split_of[group])
                last_one = state.carriers[source, cls] <= 1
                if source == split or (last_one and state.problem.covered_splits[source]):
                    continue
                if _keeps_coverage(state, required, int(group), source):
                    state.move(int(group), int(split))
                    break


def _movable(state: Assignment, split: int, required: BoolArray) -> IntArray:
    """Free groups of ``split`` whose departure keeps its class coverage."""
    table = state.table
    in_split = (state.split_of == split) & (table.pinned < 0)
    if state.problem.covered_splits[split]:
        rows, classes = table.entry_row(), table.entry_class
        sole = required[classes] & (state.carriers[split, classes] <= 1) & in_split[rows]
        in_split[rows[sole]] = False
    return np.flatnonzero(in_split)


def _sample(groups: IntArray, limit: int, rng: np.random.Generator) -> IntArray:
    """At most ``limit`` of ``groups``, drawn without replacement (all of them if fewer)."""
    if groups.size <= limit:
        return groups
    return np.sort(rng.choice(groups, limit, replace=False))


def _best_by_balance(
    state: Assignment, balance: _Balance, a: int, b: int, candidates: IntArray
) -> int:
    deltas = balance.swap_delta(state, a, b, state.table.dense(candidates))
    return int(candidates[int(np.argmin(deltas))])


def _greedy_transfer(
    state: Assignment, pool_a: IntArray, amount: int, rng: np.random.Generator
) -> tuple[IntArray, IntArray, int]:
    """Groups of a whose sizes add up to exactly ``amount``: a random prefix, then one to fit.

    On data with many small groups this finds an exact transfer at once; the
    dynamic programme below is kept for the hard cases.
    """
    sizes = state.table.sizes
    small = pool_a[sizes[pool_a] <= amount]
    if small.size == 0:
        return pool_a[:0], pool_a[:0], 0
    small = rng.permutation(small)
    cumulative = np.cumsum(sizes[small])
    top = int(np.searchsorted(cumulative, amount, side="right"))
    for keep in range(top, max(top - 8, -1), -1):
        remainder = amount - (int(cumulative[keep - 1]) if keep else 0)
        if remainder == 0:
            return small[:keep], pool_a[:0], amount
        rest = small[keep:]
        fits = rest[sizes[rest] == remainder]
        if fits.size:
            return np.r_[small[:keep], fits[:1]], pool_a[:0], amount
    return pool_a[:0], pool_a[:0], 0


def _subset_transfer(
    state: Assignment, pool_a: IntArray, pool_b: IntArray, amount: int, rng: np.random.Generator
) -> tuple[IntArray, IntArray, int]:
    """Groups to move a->b and b->a whose net size is ``amount``, or the closest below.

    Minimum-cardinality subset sum by dynamic programming over signed sizes
    (+size from a, -size from b), on a window of reachable sums. Returns the
    two lists and the net transfer achieved (0 when nothing helps).
    """
    sizes = state.table.sizes
    pool_a = _sample(pool_a, DP_POOL, rng)
    pool_b = _sample(pool_b, DP_POOL, rng)
    biggest = int(max(sizes[pool_a].max(initial=0), sizes[pool_b].max(initial=0)))
    low = -min(int(sizes[pool_b].sum()), amount + 2 * biggest, DP_WINDOW // 2)
    high = min(int(sizes[pool_a].sum()), amount + 2 * biggest, low + DP_WINDOW - 1)
    width = high - low + 1
    # Bound the reconstruction table (pool x width booleans) to ~DP_CELLS.
    keep = max(DP_CELLS // (2 * width), 1)
    pool_a, pool_b = pool_a[:keep], pool_b[:keep]
    pool = np.r_[pool_a, pool_b]
    values = np.r_[sizes[pool_a], -sizes[pool_b]]
    infinity = np.iinfo(np.int64).max // 2
    best = np.full(width, infinity, dtype=np.int64)
    best[-low] = 0
    taken = np.zeros((pool.size, width), dtype=bool)
    for index, value in enumerate(values):
        shifted = np.full(width, infinity, dtype=np.int64)
        if value > 0:
            shifted[value:] = best[:-value] + 1
        else:
            shifted[:value] = best[-value:] + 1
        better = shifted < best
        taken[index] = better
        best = np.where(better, shifted, best)
    reachable = np.flatnonzero(best[-low + 1 : -low + amount + 1] < infinity)
    if reachable.size == 0:
        return pool_a[:0], pool_b[:0], 0
    achieved = int(reachable[-1]) + 1
    chosen: list[int] = []
    position = achieved - low
    for index in range(pool.size - 1, -1, -1):
        if taken[index, position]:
            chosen.append(index)
            position -= int(values[index])
    chosen_array = np.asarray(chosen, dtype=np.int64)
    from_a = pool[chosen_array[chosen_array < pool_a.size]]
    from_b = pool[chosen_array[chosen_array >= pool_a.size]]
    return from_a, from_b, achieved


def _transfer(
    state: Assignment,
    balance: _Balance,
    required: BoolArray,
    a: int,
    b: int,
    amount: int,
    rng: np.random.Generator,
) -> int:
    """Move about ``amount`` items from split a to split b; return the items moved."""
    sizes = state.table.sizes
    pool_a, pool_b = _movable(state, a, required), _movable(state, b, required)
    exact = pool_a[sizes[pool_a] == amount]
    if exact.size:
        state.move(_best_by_balance(state, balance, a, b, _sample(exact, 512, rng)), b)
        return amount
    sizes_b = set(sizes[pool_b].tolist())
    for size_a in np.unique(sizes[pool_a]):
        size_b = int(size_a) - amount
        if size_b > 0 and size_b in sizes_b:
            options_a = _sample(pool_a[sizes[pool_a] == size_a], 512, rng)
            options_b = _sample(pool_b[sizes[pool_b] == size_b], 512, rng)
            group_a = _best_by_balance(state, balance, a, b, options_a)
            group_b = _best_by_balance(state, balance, b, a, options_b)
            state.move(group_a, b)
            state.move(group_b, a)
            return amount
    from_a, from_b, achieved = _greedy_transfer(state, pool_a, amount, rng)
    if achieved == 0:
        from_a, from_b, achieved = _subset_transfer(state, pool_a, pool_b, amount, rng)
    if achieved == 0:
        return 0
    before = state.carriers.copy()
    for group in from_a:
        state.move(int(group), b)
    for group in from_b:
        state.move(int(group), a)
    covered = state.problem.covered_splits
    lost = (before > 0) & (state.carriers == 0) & required[None, :] & covered[:, None]
    if lost.any():  # several carriers left together: undo
        for group in from_a:
            state.move(int(group), a)
        for group in from_b:
            state.move(int(group), b)
        return 0
    return achieved


def fix_counts(
    state: Assignment, balance: _Balance, required: BoolArray, rng: np.random.Generator
) -> None:
    """Step 3: move items from surplus to deficit splits until every target is met."""
    for _ in range(4 * state.items.shape[0] ** 2 + 64):
        deviation = state.deviations()
        if not deviation.any():
            return
        progressed = False
        surplus = np.flatnonzero(deviation > 0)
        deficit = np.flatnonzero(deviation < 0)
        pairs = sorted(
            ((int(a), int(b)) for a in surplus for b in deficit),
            key=lambda pair: -min(deviation[pair[0]], -deviation[pair[1]]),
        )
        for a, b in pairs:
            amount = int(min(deviation[a], -deviation[b]))
            if _transfer(state, balance, required, a, b, amount, rng) > 0:
                progressed = True
                break
        if not progressed:
            return


def _same_size_pairs(state: Assignment, rng: np.random.Generator) -> tuple[IntArray, IntArray]:
    """Candidate swaps: pairs of free, equally sized groups in different splits."""
    free = np.flatnonzero(state.table.pinned < 0)
    order = np.lexsort((state.split_of[free], state.table.sizes[free]))
    free = free[order]
    sizes = state.table.sizes[free]
    starts = np.r_[0, np.flatnonzero(np.diff(sizes)) + 1]
    counts = np.diff(np.r_[starts, free.size])
    total = int((counts.astype(np.float64) ** 2).sum())
    if total <= EXHAUSTIVE_PAIRS:
        firsts, seconds = [], []
        for start, count in zip(starts, counts, strict=True):
            if count < 2:
                continue
            block = free[start : start + count]
            left, right = np.triu_indices(count, k=1)
            firsts.append(block[left])
            seconds.append(block[right])
        if not firsts:
            return np.empty(0, np.int64), np.empty(0, np.int64)
        first, second = np.concatenate(firsts), np.concatenate(seconds)
    else:
        weights = counts.astype(np.float64) ** 2
        block = rng.choice(starts.size, SAMPLED_PAIRS, p=weights / weights.sum())
        first = free[starts[block] + rng.integers(0, counts[block])]
        second = free[starts[block] + rng.integers(0, counts[block])]
    different = state.split_of[first] != state.split_of[second]
    return first[different], second[different]


def balance_classes(
    state: Assignment,
    balance: _Balance,
    required: BoolArray,
    rng: np.random.Generator,
    max_steps: int,
) -> None:
    """Step 4: swap equally sized groups while that lowers the class-share objective."""
    if state.table.n_classes < 2:
        return
    for _ in range(max_steps):
        first, second = _same_size_pairs(state, rng)
        if first.size == 0:
            return
        split_a, split_b = state.split_of[first], state.split_of[second]
        transfer = state.table.dense(first) - state.table.dense(second)
        deltas = np.empty(first.size)
        n_splits = state.items.shape[0]
        for a in range(n_splits):
            for b in range(n_splits):
                mask = (split_a == a) & (split_b == b)
                if mask.any():
                    deltas[mask] = balance.swap_delta(state, a, b, transfer[mask])
        improving = np.flatnonzero(deltas < -1e-12)
        if improving.size == 0:
            return
        if _apply_swaps(state, balance, required, first, second, transfer, improving, deltas) == 0:
            return


def _apply_swaps(
    state: Assignment,
    balance: _Balance,
    required: BoolArray,
    first: IntArray,
    second: IntArray,
    transfer: IntArray,
    improving: IntArray,
    deltas: FloatArray,
) -> int:
    """Apply the best improving swaps, each re-checked against the current state."""
    touched: set[int] = set()
    applied = 0
    for index in improving[np.argsort(deltas[improving], kind="stable")][:BATCH_SWAPS]:
        g, h = int(first[index]), int(second[index])
        if g in touched or h in touched:
            continue
        a, b = int(state.split_of[g]), int(state.split_of[h])
        if balance.swap_delta(state, a, b, transfer[index : index + 1])[0] >= -1e-12:
            continue
        if _keeps_coverage(state, required, g, a, h) and _keeps_coverage(state, required, h, b, g):
            state.move(g, b)
            state.move(h, a)
            touched.update((g, h))
            applied += 1
    return applied


def _solve_once(table: GroupTable, problem: Problem, rng: np.random.Generator) -> Assignment:
    balance = _Balance(table, problem)
    required = required_classes(table, problem)
    state = Assignment(table, problem, allocate(table, problem, rng))
    cover(state, required)
    fix_counts(state, balance, required, rng)
    steps = min(20 * int(np.sqrt(table.n_groups)) + 200, 1000)
    balance_classes(state, balance, required, rng, max_steps=steps)
    return state


def _quality(state: Assignment, balance: _Balance, required: BoolArray) -> tuple[int, int, float]:
    covered = state.problem.covered_splits
    missing = int(((state.carriers[covered] == 0) & required[None, :]).sum())
    return missing, int(np.abs(state.deviations()).sum()), balance.value(state)


def assign_groups(table: GroupTable, problem: Problem) -> IntArray:
    """Return the split index of every group (see the module docstring for how)."""
    rng = np.random.default_rng(problem.seed)
    restarts = RESTARTS if table.n_groups <= RESTART_MAX_GROUPS else 1
    balance = _Balance(table, problem)
    required = required_classes(table, problem)
    best: Assignment | None = None
    best_key: tuple[int, int, float] | None = None
    for child in rng.spawn(restarts):
        state = _solve_once(table, problem, child)
        key = _quality(state, balance, required)
        if best_key is None or key < best_key:
            best, best_key = state, key
    assert best is not None
    return best.split_of
