"""Steps 1-3 of the assignment: allocate groups, cover required classes, fix item counts."""

from __future__ import annotations

import numpy as np

from evalkit.splitting.state import (
    FREE,
    Assignment,
    Balance,
    BoolArray,
    GroupTable,
    IntArray,
    Problem,
    keeps_coverage,
    movable,
    sample,
)

DP_POOL = 1_500
DP_WINDOW = 200_000
DP_CELLS = 40_000_000
# Groups above this share of the smallest target are placed before the rest.
LARGE_GROUP_SHARE = 0.2


def allocate(table: GroupTable, problem: Problem, rng: np.random.Generator) -> IntArray:
    """Step 1: proportional allocation of the free groups within dominant-class strata."""
    n_splits = problem.targets.shape[0]
    split_of = np.where(table.pinned >= 0, table.pinned, FREE).astype(np.int64)
    free = np.flatnonzero(split_of == FREE)
    if free.size == 0:
        return split_of
    free = _place_large_groups(table, problem, split_of, free, rng)
    if free.size == 0:
        return split_of
    placed = split_of >= 0
    frozen_items = np.bincount(split_of[placed], weights=table.sizes[placed], minlength=n_splits)
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


def _place_large_groups(
    table: GroupTable,
    problem: Problem,
    split_of: IntArray,
    free: IntArray,
    rng: np.random.Generator,
) -> IntArray:
    """Place groups too large for proportional allocation; return the groups still free.

    A group bigger than a fifth of the smallest target would make the
    allocation overshoot whichever small split it lands in, so the large ones
    go first, biggest first, each to the split with the most room left.
    """
    positive = problem.targets[problem.targets > 0]
    if positive.size == 0:
        return free
    large = free[table.sizes[free] > LARGE_GROUP_SHARE * positive.min()]
    if large.size == 0:
        return free
    placed = split_of >= 0
    room = problem.targets - np.bincount(
        split_of[placed], weights=table.sizes[placed], minlength=problem.targets.shape[0]
    )
    order = np.lexsort((rng.random(large.size), -table.sizes[large]))
    for group in large[order]:
        split = int(np.argmax(room + rng.random(room.size) * 1e-6))
        split_of[group] = split
        room[split] -= table.sizes[group]
    return free[split_of[free] == FREE]


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
                if keeps_coverage(state, required, int(group), source):
                    state.move(int(group), int(split))
                    break


def _best_by_balance(
    state: Assignment, balance: Balance, a: int, b: int, candidates: IntArray
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
    pool_a = sample(pool_a, DP_POOL, rng)
    pool_b = sample(pool_b, DP_POOL, rng)
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
    balance: Balance,
    required: BoolArray,
    a: int,
    b: int,
    amount: int,
    rng: np.random.Generator,
) -> int:
    """Move about ``amount`` items from split a to split b; return the items moved."""
    sizes = state.table.sizes
    pool_a, pool_b = movable(state, a, required), movable(state, b, required)
    exact = pool_a[sizes[pool_a] == amount]
    if exact.size:
        state.move(_best_by_balance(state, balance, a, b, sample(exact, 512, rng)), b)
        return amount
    sizes_b = set(sizes[pool_b].tolist())
    for size_a in np.unique(sizes[pool_a]):
        size_b = int(size_a) - amount
        if size_b > 0 and size_b in sizes_b:
            options_a = sample(pool_a[sizes[pool_a] == size_a], 512, rng)
            options_b = sample(pool_b[sizes[pool_b] == size_b], 512, rng)
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
    state: Assignment, balance: Balance, required: BoolArray, rng: np.random.Generator
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
