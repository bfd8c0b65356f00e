"""Small-sample statistics for paired binary outcomes, vectorised over scopes.

Every function takes numpy arrays of counts (one entry per scope: overall,
each class, each slice) so that a report with hundreds of classes costs a
handful of array operations. Each is tested against scipy or statsmodels on
the same data (``tests/test_compare_statistics.py``).
"""

from __future__ import annotations

import hashlib

import numpy as np
import numpy.typing as npt
from scipy import stats

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

CONFIDENCE = 0.95


def wilson_interval(
    successes: IntArray, n: IntArray, confidence: float = CONFIDENCE
) -> tuple[FloatArray, FloatArray]:
    """Wilson score interval of a proportion, NaN where ``n`` is 0.

    Wilson rather than the normal (Wald) interval because a rare class has a
    handful of items and an accuracy near 0 or 1, where Wald collapses to a
    zero-width interval; Wilson keeps honest coverage there.
    """
    successes = np.asarray(successes, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    z = stats.norm.ppf(1 - (1 - confidence) / 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = successes / n
        denominator = 1 + z**2 / n
        centre = (p + z**2 / (2 * n)) / denominator
        half = z / denominator * np.sqrt(p * (1 - p) / n + z**2 / (4 * n**2))
    low = np.where(n > 0, np.clip(centre - half, 0.0, 1.0), np.nan)
    high = np.where(n > 0, np.clip(centre + half, 0.0, 1.0), np.nan)
    return low, high


def mcnemar_exact_p(negative_flips: IntArray, positive_flips: IntArray) -> FloatArray:
    """Two-sided exact McNemar p-value: a binomial test on the discordant pairs.

    Only the pairs where the two results disagree carry information about a
    difference; under "no difference" each is equally likely to go either
    way, so the smaller count is Binomial(b + c, 1/2). The p-value is 1 when
    nothing flips (no evidence at all, rather than a division by zero). The
    formula is the one statsmodels uses, so the values agree bit for bit.
    """
    negative_flips = np.asarray(negative_flips, dtype=np.int64)
    positive_flips = np.asarray(positive_flips, dtype=np.int64)
    discordant = negative_flips + positive_flips
    smaller = np.minimum(negative_flips, positive_flips)
    p = np.minimum(stats.binom.cdf(smaller, discordant, 0.5) * 2, 1.0)
    return np.where(discordant > 0, p, 1.0).astype(np.float64)


def holm_adjust(p_values: FloatArray) -> FloatArray:
    """Holm step-down adjusted p-values (family-wise error control).

    Holm rather than Bonferroni: it controls the same family-wise error rate
    under any dependence between classes and is uniformly more powerful.
    """
    p_values = np.asarray(p_values, dtype=np.float64)
    m = p_values.size
    if m == 0:
        return p_values.copy()
    order = np.argsort(p_values, kind="stable")
    scaled = p_values[order] * (m - np.arange(m))
    adjusted_sorted = np.minimum(np.maximum.accumulate(scaled), 1.0)
    adjusted = np.empty(m, dtype=np.float64)
    adjusted[order] = adjusted_sorted
    return adjusted


def scope_seed(seed: int, scope: str) -> np.random.Generator:
    """A generator for one scope, derived from the run's seed and the scope's name.

    Deriving per scope (not drawing scopes in sequence from one generator)
    keeps a class's interval unchanged when another class is added or removed.
    """
    digest = hashlib.sha256(scope.encode("utf-8")).digest()
    return np.random.default_rng([seed, int.from_bytes(digest[:8], "little")])


def paired_bootstrap_delta_ci(
    positive_flips: int,
    negative_flips: int,
    n: int,
    rng: np.random.Generator,
    resamples: int,
    confidence: float = CONFIDENCE,
) -> tuple[float, float] | None:
    """Percentile interval of the paired bootstrap of ``mean(candidate - baseline)``.

    The classic paired bootstrap draws ``n`` item indices with replacement and
    averages the per-item differences, which are +1 (positive flip), -1
    (negative flip) or 0. The resampled mean depends only on how many of each
    kind were drawn, and those counts are exactly Multinomial(n, observed
    shares); drawing the counts directly gives the same distribution in O(1)
    per resample instead of O(n), which is what makes a million-item
    comparison with 10,000 resamples take milliseconds. ``None`` when n is 0.
    """
    if n == 0:
        return None
    shares = np.array([positive_flips, negative_flips, n - positive_flips - negative_flips]) / n
    counts = rng.multinomial(n, shares, size=resamples)
    deltas = (counts[:, 0] - counts[:, 1]) / n
    alpha = (1 - confidence) / 2
    low, high = np.percentile(deltas, [100 * alpha, 100 * (1 - alpha)])
    return float(low), float(high)
