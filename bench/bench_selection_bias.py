"""How much a reused test set flatters: the selection-bias figure ``evalkit ledger`` prints.

Every candidate here is truly at chance (each item right with probability
1/2, independently), and so is the baseline. "Keep what beat the baseline"
looks at L candidates on the test, keeps those that scored above the
baseline's score there, and combines them by majority vote (the "fixes that
each helped, put together" of a tuning loop); the combination is then
reported on the same test. "Look once" makes the same choice on a separate
validation set of the same size and looks at the test once.

Theory (the boosting attack of Blum & Hardt, 2015): a kept candidate's items
lean right by about E[s | s > 0] = sqrt(2/(pi n)); the vote of L/2 of them is
right with probability Phi(sqrt(L/2) sqrt(2/(pi n))) ~ 1/2 + sqrt(L)/(pi
sqrt(2n)), which is sqrt(2)/pi · sqrt(L) ~ 0.45·√L standard errors (SE =
0.5/sqrt(n)) whatever n. A false claim is an exact one-sided binomial test
of "better than chance" at 5% that passes.

Run: .venv/bin/python bench/bench_selection_bias.py   (about a minute on 2 cores)
"""

from __future__ import annotations

import math
import sys
import time

import numpy as np
from scipy import stats

SEED = 20_151_205
REPS = 2000
ALPHA = 0.05
FACTOR = math.sqrt(2) / math.pi


def _vote(correct: np.ndarray, keep: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Per item: is the majority of the kept candidates right (ties by a coin)?"""
    votes = correct[keep].sum(axis=0)
    kept = int(keep.sum())
    ties = (2 * votes == kept) & (rng.random(correct.shape[1]) < 0.5)
    return (2 * votes > kept) | ties


def _baseline(n: int, exact: bool, rng: np.random.Generator) -> np.ndarray:
    """The baseline's right/wrong: exactly half right (its score is its true level), or noisy."""
    if exact:
        return rng.permutation(np.arange(n) < n // 2)
    return rng.random(n) < 0.5


def simulate(
    n: int, looks: int, reps: int, rng: np.random.Generator, exact_baseline: bool = True
) -> dict[str, float]:
    """Mean reported accuracy and false-claim rate of both protocols."""
    critical = stats.binom.isf(ALPHA, n, 0.5) + 1  # smallest count whose P(X >= k) <= alpha
    reused, honest = np.empty(reps), np.empty(reps)
    for rep in range(reps):
        baseline = _baseline(n, exact_baseline, rng)
        test = rng.random((looks, n)) < 0.5  # each candidate's right/wrong on the test
        keep = test.mean(axis=1) > baseline.mean()
        reused[rep] = _vote(test, keep, rng).mean() if keep.any() else baseline.mean()
        # look once: the same rule on a validation set, then the test once
        val_baseline = _baseline(n, exact_baseline, rng)
        val = rng.random((looks, n)) < 0.5
        keep_val = val.mean(axis=1) > val_baseline.mean()
        honest[rep] = _vote(test, keep_val, rng).mean() if keep_val.any() else baseline.mean()
    se = 0.5 / math.sqrt(n)
    return {
        "reused": float(reused.mean()),
        "reused_se": float((reused.mean() - 0.5) / se),
        "reused_claims": float((reused * n >= critical).mean()),
        "honest": float(honest.mean()),
        "honest_claims": float((honest * n >= critical).mean()),
    }


def main() -> int:
    rng = np.random.default_rng(SEED)
    started = time.perf_counter()
    print(f"n = 300 items, {REPS} simulations per row, every candidate truly at chance")
    print("baseline scoring exactly its true 0.50 (the worst case the ledger prints) | "
          "baseline's own score noisy too")  # fmt: skip
    print(f"{'L':>4} {'reused':>8} {'bias SE':>8} {'0.45√L':>7} {'claims':>7} "
          f"{'honest':>8} {'claims':>7} | {'reused':>8} {'bias SE':>8}")  # fmt: skip
    for looks in (1, 2, 3, 4, 5, 10, 25, 50, 100):
        r = simulate(300, looks, REPS, rng)
        noisy = simulate(300, looks, REPS // 2, rng, exact_baseline=False)
        print(
            f"{looks:>4} {r['reused']:>8.3f} {r['reused_se']:>8.2f} "
            f"{FACTOR * math.sqrt(looks):>7.2f} {r['reused_claims']:>7.1%} "
            f"{r['honest']:>8.3f} {r['honest_claims']:>7.1%} | "
            f"{noisy['reused']:>8.3f} {noisy['reused_se']:>8.2f}"
        )
    print("\nL = 25 looks at other test sizes: the bias in SE does not depend on n")
    print(f"{'n':>6} {'reused':>8} {'bias SE':>8} {'0.45√L':>7}")
    for n in (100, 1000, 3000):
        r = simulate(n, 25, REPS // 2, rng)
        print(f"{n:>6} {r['reused']:>8.3f} {r['reused_se']:>8.2f} {FACTOR * 5:>7.2f}")
    print(f"\n{time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
