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
the best result kept; tiny ones (a few groups) are solved exactly by
enumeration. Everything is deterministic for a seed because groups
arrive in a canonical order (sorted by key) and all randomness comes from one
``numpy.random.Generator``.
"""

from __future__ import annotations

import numpy as np

from evalkit.splitting.balance import balance_classes
from evalkit.splitting.counts import allocate, cover, fix_counts
from evalkit.splitting.exhaustive import solve_exhaustively
from evalkit.splitting.state import (
    Assignment,
    Balance,
    BoolArray,
    GroupTable,
    IntArray,
    Problem,
    required_classes,
)

# Problems with at most this many groups are solved from several starts.
RESTART_MAX_GROUPS = 2_000
RESTARTS = 16


def _solve_once(table: GroupTable, problem: Problem, rng: np.random.Generator) -> Assignment:
    balance = Balance(table, problem)
    required = required_classes(table, problem)
    state = Assignment(table, problem, allocate(table, problem, rng))
    cover(state, required)
    fix_counts(state, balance, required, rng)
    steps = min(20 * int(np.sqrt(table.n_groups)) + 200, 1000)
    balance_classes(state, balance, required, rng, max_steps=steps)
    return state


def _quality(state: Assignment, balance: Balance, required: BoolArray) -> tuple[int, int, float]:
    covered = state.problem.covered_splits
    missing = int(((state.carriers[covered] == 0) & required[None, :]).sum())
    return missing, int(np.abs(state.deviations()).sum()), balance.value(state)


def items_problem(targets: IntArray, n_items: int, seed: int) -> Problem:
    """The problem of giving each split its target number of the ``n_items`` items.

    Items the targets leave over go to one more split, index ``len(targets)``,
    which needs no class coverage; a split with a target of 0 needs none either.
    """
    unused = n_items - int(targets.sum())
    all_targets = np.r_[targets, unused] if unused else np.asarray(targets, dtype=np.int64)
    covered = np.r_[np.ones(targets.size, bool), np.zeros(1 if unused else 0, bool)]
    return Problem(targets=all_targets, covered_splits=covered & (all_targets > 0), seed=seed)


def assign_groups(table: GroupTable, problem: Problem) -> IntArray:
    """Return the split index of every group (see the module docstring for how)."""
    rng = np.random.default_rng(problem.seed)
    exact = solve_exhaustively(table, problem, rng)
    if exact is not None:
        return exact
    restarts = RESTARTS if table.n_groups <= RESTART_MAX_GROUPS else 1
    balance = Balance(table, problem)
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
