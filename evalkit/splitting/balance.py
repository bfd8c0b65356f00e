"""Step 4 of the assignment: swap equally sized groups to balance class shares."""

from __future__ import annotations

import numpy as np

from evalkit.splitting.state import (
    Assignment,
    Balance,
    BoolArray,
    FloatArray,
    IntArray,
    keeps_coverage,
    sample,
)

# Pairs evaluated per balance step; beyond it candidates are sampled.
EXHAUSTIVE_PAIRS = 250_000
SAMPLED_PAIRS = 20_000
BATCH_SWAPS = 256
# One-for-two swaps: only on small problems, from samples of these sizes.
ONE_FOR_TWO_MAX_GROUPS = 2_000
ONE_FOR_TWO_SINGLES = 400
ONE_FOR_TWO_MEMBERS = 250
ONE_FOR_TWO_TRIPLES = 200_000


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
    balance: Balance,
    required: BoolArray,
    rng: np.random.Generator,
    max_steps: int,
) -> None:
    """Step 4: swap groups of equal total size while that lowers the class-share objective.

    Swaps of two equally sized groups come first; when none helps any more,
    small problems also try one group against two whose sizes add up to it.
    """
    if state.table.n_classes < 2:
        return
    small = state.table.n_groups <= ONE_FOR_TWO_MAX_GROUPS
    for _ in range(max_steps):
        # Every split within one item of its ideal count of every class: what
        # is left to gain is less than an item, not worth a swap.
        if np.abs(state.class_counts - balance.expected).max() < 1.0:
            return
        if _same_size_step(state, balance, required, rng):
            continue
        if not (small and _one_for_two_step(state, balance, required, rng)):
            return


def _same_size_step(
    state: Assignment, balance: Balance, required: BoolArray, rng: np.random.Generator
) -> bool:
    """Apply the best improving swaps of equally sized groups; False when there is none."""
    first, second = _same_size_pairs(state, rng)
    if first.size == 0:
        return False
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
        return False
    return _apply_swaps(state, balance, required, first, second, transfer, improving, deltas) > 0


def _one_for_two_step(
    state: Assignment, balance: Balance, required: BoolArray, rng: np.random.Generator
) -> bool:
    """For each pair of splits (a, b), swap one group of a with two of b of the same
    total size when that helps; True when any swap was made."""
    table = state.table
    free = table.pinned < 0
    n_splits = state.items.shape[0]
    applied = False
    for a in range(n_splits):
        for b in range(n_splits):
            if a == b:
                continue
            singles = sample(np.flatnonzero(free & (state.split_of == a)), ONE_FOR_TWO_SINGLES, rng)
            members = sample(np.flatnonzero(free & (state.split_of == b)), ONE_FOR_TWO_MEMBERS, rng)
            if singles.size == 0 or members.size < 2:
                continue
            triple = _best_one_for_two(state, balance, a, b, singles, members, rng)
            if triple is not None:
                g, h1, h2 = triple
                applied |= _try_moves(state, required, [(g, b), (h1, a), (h2, a)])
    return applied


def _best_one_for_two(
    state: Assignment,
    balance: Balance,
    a: int,
    b: int,
    singles: IntArray,
    members: IntArray,
    rng: np.random.Generator,
) -> tuple[int, int, int] | None:
    """The improving (single of a, two members of b) of equal size that helps most."""
    table = state.table
    left, right = np.triu_indices(members.size, k=1)
    first, second = members[left], members[right]
    pair_size = table.sizes[first] + table.sizes[second]
    order = np.argsort(pair_size, kind="stable")
    first, second, pair_size = first[order], second[order], pair_size[order]
    starts = np.searchsorted(pair_size, table.sizes[singles], side="left")
    counts = np.searchsorted(pair_size, table.sizes[singles], side="right") - starts
    if counts.sum() == 0:
        return None
    single = np.repeat(singles, counts)
    offsets = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    pair = np.repeat(starts, counts) + offsets
    if single.size > ONE_FOR_TWO_TRIPLES:
        keep = np.sort(rng.choice(single.size, ONE_FOR_TWO_TRIPLES, replace=False))
        single, pair = single[keep], pair[keep]
    transfer = table.dense(single) - table.dense(first[pair]) - table.dense(second[pair])
    deltas = balance.swap_delta(state, a, b, transfer)
    index = int(np.argmin(deltas))
    if deltas[index] >= -1e-12:
        return None
    return int(single[index]), int(first[pair[index]]), int(second[pair[index]])


def _try_moves(state: Assignment, required: BoolArray, moves: list[tuple[int, int]]) -> bool:
    """Apply moves; undo them if a covered split loses its last group of a required class."""
    undo = [(group, int(state.split_of[group])) for group, _ in moves]
    before = state.carriers > 0
    for group, split in moves:
        state.move(group, split)
    covered = state.problem.covered_splits[:, None]
    if (before & (state.carriers == 0) & required[None, :] & covered).any():
        for group, split in reversed(undo):
            state.move(group, split)
        return False
    return True


def _apply_swaps(
    state: Assignment,
    balance: Balance,
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
        if keeps_coverage(state, required, g, a, h) and keeps_coverage(state, required, h, b, g):
            state.move(g, b)
            state.move(h, a)
            touched.update((g, h))
            applied += 1
    return applied
