"""Exact assignment of tiny problems by enumerating every possibility.

With a handful of groups the heuristic steps can miss the best assignment (a
count fix may need two groups out and one in while keeping a rare class), and
enumeration is cheap: all ``n_splits ** n_free_groups`` assignments are scored
at once with matrix products and the best one is taken, by the same order of
priorities as the heuristic: class coverage, then total count deviation, then
the class-balance objective, ties broken by the seeded generator.
"""

from __future__ import annotations

import numpy as np

from evalkit.splitting.state import Balance, GroupTable, IntArray, Problem, required_classes

EXHAUSTIVE_ASSIGNMENTS = 100_000
EXHAUSTIVE_CELLS = 30_000_000


def solve_exhaustively(
    table: GroupTable, problem: Problem, rng: np.random.Generator
) -> IntArray | None:
    """The best assignment of the free groups, or None when there are too many to enumerate."""
    n_splits = problem.targets.shape[0]
    free = np.flatnonzero(table.pinned < 0)
    if free.size == 0 or free.size * np.log(n_splits) > np.log(EXHAUSTIVE_ASSIGNMENTS):
        return None
    n_assignments = n_splits**free.size
    if n_assignments * n_splits * table.n_classes > EXHAUSTIVE_CELLS:
        return None
    codes = np.arange(n_assignments)
    choice = (codes[:, None] // n_splits ** np.arange(free.size)) % n_splits
    dense = table.dense(free).astype(np.float64)
    present = (dense > 0).astype(np.float64)
    sizes = table.sizes[free].astype(np.float64)
    fixed = table.pinned >= 0
    pinned_groups = np.flatnonzero(fixed)
    pinned_dense = table.dense(pinned_groups)
    balance = Balance(table, problem)
    required = required_classes(table, problem)
    missing = np.zeros(n_assignments)
    deviation = np.zeros(n_assignments)
    objective = np.zeros(n_assignments)
    for split in range(n_splits):
        chosen = (choice == split).astype(np.float64)
        in_split = table.pinned[pinned_groups] == split
        items = chosen @ sizes + table.sizes[pinned_groups][in_split].sum()
        counts = chosen @ dense + pinned_dense[in_split].sum(axis=0)
        carriers = chosen @ present + (pinned_dense[in_split] > 0).sum(axis=0)
        deviation += np.abs(items - problem.targets[split])
        objective += balance.weight[split] * ((counts - balance.expected[split]) ** 2).sum(axis=1)
        if problem.covered_splits[split]:
            missing += ((carriers == 0) & required[None, :]).sum(axis=1)
    best = np.lexsort((rng.random(n_assignments), np.round(objective, 12), deviation, missing))[0]
    split_of = table.pinned.copy()
    split_of[free] = choice[best]
    return split_of
