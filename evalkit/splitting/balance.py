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
)

# Pairs evaluated per balance step; beyond it candidates are sampled.
EXHAUSTIVE_PAIRS = 250_000
SAMPLED_PAIRS = 20_000
BATCH_SWAPS = 256


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
    """Step 4: swap equally sized groups while that lowers the class-share objective."""
    if state.table.n_classes < 2:
        return
    for _ in range(max_steps):
        # Every split within one item of its ideal count of every class: what
        # is left to gain is less than an item, not worth a swap.
        if np.abs(state.class_counts - balance.expected).max() < 1.0:
            return
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
