"""Every statistic of evalkit compare against scipy / statsmodels on the same data."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

from evalkit.comparison.statistics import (
    holm_adjust,
    mcnemar_exact_p,
    paired_bootstrap_delta_ci,
    scope_seed,
    wilson_interval,
)


@given(st.lists(st.tuples(st.integers(0, 500), st.integers(1, 500)), min_size=1, max_size=20))
def test_wilson_matches_statsmodels(pairs: list[tuple[int, int]]) -> None:
    successes = np.array([min(k, n) for k, n in pairs])
    n = np.array([n for _, n in pairs])
    low, high = wilson_interval(successes, n)
    ref_low, ref_high = proportion_confint(successes, n, alpha=0.05, method="wilson")
    np.testing.assert_allclose(low, ref_low, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(high, ref_high, rtol=1e-12, atol=1e-14)


def test_wilson_of_an_empty_scope_is_undefined_not_an_error() -> None:
    low, high = wilson_interval(np.array([0, 3]), np.array([0, 6]))
    assert np.isnan(low[0]) and np.isnan(high[0])
    assert 0 < low[1] < 0.5 < high[1] < 1


def test_wilson_is_not_degenerate_at_zero_and_all() -> None:
    # The reason Wilson is used: Wald gives [0, 0] and [1, 1] here.
    low, high = wilson_interval(np.array([0, 6]), np.array([6, 6]))
    assert low[0] == 0 and high[0] > 0.3
    assert high[1] == 1 and low[1] < 0.7


@given(st.lists(st.tuples(st.integers(0, 300), st.integers(0, 300)), min_size=1, max_size=20))
def test_mcnemar_matches_statsmodels_exactly(pairs: list[tuple[int, int]]) -> None:
    negative = np.array([b for b, _ in pairs])
    positive = np.array([c for _, c in pairs])
    ours = mcnemar_exact_p(negative, positive)
    for i, (b, c) in enumerate(pairs):
        reference = mcnemar([[5, b], [c, 7]], exact=True).pvalue
        expected = 1.0 if b + c == 0 else reference
        assert ours[i] == expected  # bit for bit: same formula
        if b + c:
            scipy_p = stats.binomtest(b, b + c, 0.5).pvalue
            assert ours[i] == pytest.approx(scipy_p, rel=1e-9, abs=1e-15)


def test_mcnemar_is_one_when_nothing_flips() -> None:
    # HF evaluate divides by zero here; a comparison of two equal runs must say p = 1.
    assert mcnemar_exact_p(np.array([0]), np.array([0]))[0] == 1.0


def test_mcnemar_known_values() -> None:
    # 6 negative flips and no positive ones: p = 2 * 0.5**6 = 0.03125.
    assert mcnemar_exact_p(np.array([6]), np.array([0]))[0] == pytest.approx(0.03125)
    assert mcnemar_exact_p(np.array([3]), np.array([3]))[0] == 1.0


# multipletests runs gc.collect() on every call (a tenth of a second in a full
# test process), so few generated cases, plus the edge cases written out.
@pytest.mark.slow
@settings(max_examples=15, deadline=None)
@given(st.lists(st.floats(0, 1, allow_nan=False), min_size=1, max_size=30))
def test_holm_matches_statsmodels(p_values: list[float]) -> None:
    ours = holm_adjust(np.array(p_values))
    reference = multipletests(p_values, method="holm")[1]
    np.testing.assert_allclose(ours, reference, rtol=1e-12, atol=0)


@pytest.mark.parametrize(
    "p_values",
    [[1.0], [0.0, 1.0], [0.01, 0.01, 0.01], [0.5, 0.01, 0.04, 1.0, 0.03], [0.2] * 8 + [0.001]],
)
def test_holm_edge_cases_match_statsmodels(p_values: list[float]) -> None:
    reference = multipletests(p_values, method="holm")[1]
    np.testing.assert_allclose(holm_adjust(np.array(p_values)), reference, rtol=1e-12, atol=0)


def test_holm_of_nothing_is_nothing() -> None:
    assert holm_adjust(np.array([])).size == 0


def test_bootstrap_is_reproducible_for_a_seed_and_changes_with_it() -> None:
    first = paired_bootstrap_delta_ci(12, 30, 200, scope_seed(3, "class:a"), 2000)
    again = paired_bootstrap_delta_ci(12, 30, 200, scope_seed(3, "class:a"), 2000)
    other = paired_bootstrap_delta_ci(12, 30, 200, scope_seed(4, "class:a"), 2000)
    assert first == again
    assert first != other


def test_bootstrap_of_an_empty_scope_is_none() -> None:
    assert paired_bootstrap_delta_ci(0, 0, 0, scope_seed(0, "x"), 1000) is None


def test_bootstrap_without_flips_is_a_point() -> None:
    assert paired_bootstrap_delta_ci(0, 0, 50, scope_seed(0, "x"), 1000) == (0.0, 0.0)


@pytest.mark.parametrize(
    ("n", "positive", "negative"), [(200, 30, 12), (60, 2, 9), (1000, 80, 95), (25, 0, 4)]
)
def test_bootstrap_agrees_with_scipy_paired_bootstrap(n: int, positive: int, negative: int) -> None:
    # Per-item outcomes with exactly these flips; the rest agree (half both right).
    both_right = (n - positive - negative) // 2
    baseline = np.array([0] * positive + [1] * negative + [1] * both_right)
    candidate = np.array([1] * positive + [0] * negative + [1] * both_right)
    baseline = np.concatenate([baseline, np.zeros(n - baseline.size, dtype=int)])
    candidate = np.concatenate([candidate, np.zeros(n - candidate.size, dtype=int)])
    reference = stats.bootstrap(
        (baseline, candidate),
        lambda b, c, axis: c.mean(axis=axis) - b.mean(axis=axis),
        paired=True,
        vectorized=True,
        n_resamples=20_000,
        method="percentile",
        random_state=np.random.default_rng(11),
    ).confidence_interval
    ours = paired_bootstrap_delta_ci(positive, negative, n, scope_seed(0, "overall"), 20_000)
    assert ours is not None
    # Monte Carlo error of a 2.5% percentile with 20,000 resamples is a small
    # fraction of the bootstrap's spread; the delta also lives on a 1/n grid.
    spread = np.sqrt((positive + negative) / n) / np.sqrt(n)
    tolerance = 1 / n + 0.05 * spread
    assert ours[0] == pytest.approx(reference.low, abs=tolerance)
    assert ours[1] == pytest.approx(reference.high, abs=tolerance)


def test_multinomial_shortcut_has_the_resampling_distribution() -> None:
    # The shortcut's premise, checked directly: the mean of n items resampled
    # with replacement has the same distribution as the multinomial count form.
    rng = np.random.default_rng(5)
    differences = np.array([1] * 7 + [-1] * 13 + [0] * 30)
    n = differences.size
    explicit = differences[rng.integers(0, n, size=(20_000, n))].mean(axis=1)
    counts = rng.multinomial(n, [7 / n, 13 / n, 30 / n], size=20_000)
    shortcut = (counts[:, 0] - counts[:, 1]) / n
    result = stats.ks_2samp(explicit, shortcut)
    assert result.pvalue > 0.001
    assert explicit.std() == pytest.approx(shortcut.std(), rel=0.03)


def test_scope_seed_depends_on_the_scope_not_the_order() -> None:
    a = scope_seed(0, "class:a").random()
    b = scope_seed(0, "class:b").random()
    assert a != b
    assert scope_seed(0, "class:a").random() == a


@settings(max_examples=50)
@given(st.integers(1, 400), st.data())
def test_bootstrap_interval_contains_the_observed_delta(n: int, data: st.DataObject) -> None:
    positive = data.draw(st.integers(0, n))
    negative = data.draw(st.integers(0, n - positive))
    low, high = paired_bootstrap_delta_ci(positive, negative, n, scope_seed(1, "s"), 500) or (0, 0)
    observed = (positive - negative) / n
    assert -1 <= low <= high <= 1
    # The percentile interval of a mean brackets the observed mean except in
    # extremely skewed, tiny samples; allow one grid step.
    assert low - 1 / n <= observed <= high + 1 / n
