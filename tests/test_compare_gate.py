"""Pairing, flips, rules and verdicts of evalkit compare / gate, on planted outcomes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scored_results import contract, result_in_memory
from sklearn.metrics import confusion_matrix
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests

from evalkit import compare, gate
from evalkit.errors import IncompatibleResults, InvalidContract, UsageError

# 100 tickets: three common classes and a rare one (6 items <= max_support 10).
CLASSES = ["billing"] * 40 + ["shipping"] * 30 + ["account"] * 24 + ["legal_threat"] * 6
IDS = [f"T{i:04d}" for i in range(len(CLASSES))]
NO_ORDER = [i % 3 == 0 for i in range(len(CLASSES))]


def outcomes(wrong: set[int]) -> list[bool]:
    return [i not in wrong for i in range(len(CLASSES))]


def result(name: str, wrong: set[int], **extra):
    extra.setdefault("slices", {"no-order-id": NO_ORDER})
    return result_in_memory(name, ids=IDS, classes=CLASSES, correct=outcomes(wrong), **extra)


BASE_WRONG = set(range(0, 8)) | set(range(40, 46)) | set(range(70, 75))  # 19 wrong, rare all right


def test_planted_rare_class_regression_under_a_better_average_fails_naming_the_class() -> None:
    # The candidate fixes 12 common-class errors but breaks 4 of the 6 legal threats.
    candidate_wrong = set(range(0, 2)) | set(range(40, 42)) | {70, 71, 72} | {94, 95, 96, 97}
    report = gate(result("baseline", BASE_WRONG), result("candidate-a", candidate_wrong))
    assert report.overall.delta is not None and report.overall.delta > 0
    assert report.verdict == "fail"
    failed = [(f.rule, f.scope) for f in report.failures]
    assert failed == [("max_rare_class_drop", "class:legal_threat")]
    failure = report.failures[0]
    assert failure.baseline == 1.0 and failure.candidate == pytest.approx(2 / 6)
    assert failure.threshold == 0.20
    assert failure.negative_flip_ids == ["T0094", "T0095", "T0096", "T0097"]
    assert "rare class" in failure.reason
    assert report.classes["legal_threat"].rare
    assert not report.classes["billing"].rare


def test_rare_class_fails_by_threshold_even_with_significance_set() -> None:
    base = result("baseline", BASE_WRONG, normalized=contract(significance=0.05))
    cand = result("candidate", BASE_WRONG | {94, 95}, normalized=contract(significance=0.05))
    report = gate(base, cand)
    # 2 of 6 lost: p = 0.5, nowhere near significant, and yet a failure.
    assert report.classes["legal_threat"].mcnemar_p == 0.5
    assert [(f.rule, f.scope) for f in report.failures] == [
        ("max_rare_class_drop", "class:legal_threat")
    ]
    overall = next(c for c in report.checks if c.rule == "max_accuracy_drop")
    assert overall.passed and "not significant" in overall.reason


def test_only_positive_flips_pass() -> None:
    report = gate(result("baseline", BASE_WRONG), result("candidate-b", set(range(0, 8))))
    assert report.verdict == "pass"
    assert report.failures == []
    assert report.overall.negative_flips == 0
    assert report.overall.positive_flips == 11
    assert all(check.passed for check in report.checks)
    # One check per rule and scope: 3 absolute, 2 overall drops, 4 classes, 1 slice.
    assert len(report.checks) == 10


def test_results_under_contract_version_1_and_2_are_refused_naming_both_fingerprints() -> None:
    v1 = result("baseline", BASE_WRONG, normalized=contract(version=1))
    v2 = result("candidate", BASE_WRONG, normalized=contract(version=2))
    with pytest.raises(IncompatibleResults) as caught:
        gate(v1, v2)
    message = str(caught.value)
    assert v1.summary.contract.fingerprint in message
    assert v2.summary.contract.fingerprint in message
    assert "v1" in message and "v2" in message
    assert "\n" not in message


def test_different_gold_files_are_refused() -> None:
    base = result("baseline", BASE_WRONG)
    cand = result("candidate", BASE_WRONG, gold_sha256="f" * 64)
    with pytest.raises(IncompatibleResults, match=r"different gold files.*a{64} vs f{64}"):
        gate(base, cand)


def test_a_drop_equal_to_its_threshold_passes_and_a_larger_one_fails() -> None:
    # shipping has 30 items: 3 flips = 0.1 exactly (threshold 0.10), 4 flips = 0.1333.
    rules = contract(max_accuracy_drop=1.0, max_slice_drop=1.0)
    base = result("baseline", BASE_WRONG, normalized=rules)
    at = gate(base, result("at", BASE_WRONG | {50, 51, 52}, normalized=rules))
    over = gate(base, result("over", BASE_WRONG | {50, 51, 52, 53}, normalized=rules))
    assert at.verdict == "pass"
    assert [(f.rule, f.scope) for f in over.failures] == [("max_class_drop", "class:shipping")]


def test_significance_spares_a_noisy_common_class_drop_but_not_a_real_one() -> None:
    rules = contract(significance=0.05, max_slice_drop=1.0)
    base = result("baseline", set(), normalized=rules)
    noisy = gate(base, result("noisy", {0, 1, 2, 3, 4}, normalized=rules))  # billing -5/40, p .06
    real = gate(base, result("real", set(range(0, 14)), normalized=rules))  # billing -14/40
    billing = next(c for c in noisy.checks if c.scope == "class:billing")
    assert billing.passed and "not significant" in billing.reason
    assert billing.p_value == noisy.classes["billing"].holm_p
    assert ("max_class_drop", "class:billing") in [(f.rule, f.scope) for f in real.failures]
    assert ("max_accuracy_drop", "overall") in [(f.rule, f.scope) for f in real.failures]


def test_absolute_minimums_and_missing_are_judged_on_the_candidate_alone() -> None:
    rules = contract(min_format_validity=0.97, max_missing=1, max_format_drop=1.0)
    base = result("baseline", BASE_WRONG, normalized=rules)
    valid = [i not in {10, 11, 12, 13} for i in range(100)]
    errors = ["missing" if i in {10, 11} else None if v else "no_json" for i, v in enumerate(valid)]
    cand = result("candidate", BASE_WRONG, valid=valid, errors=errors, normalized=rules)
    report = gate(base, cand)
    failed = {f.rule: f for f in report.failures}
    assert failed["min_format_validity"].candidate == pytest.approx(0.96)
    assert failed["max_missing"].candidate == 2 and failed["max_missing"].threshold == 1
    assert report.overall.format_negative_flips == 4


def test_a_format_drop_failure_lists_the_examples_that_became_invalid() -> None:
    rules = contract(max_format_drop=0.01, min_format_validity=0.0)
    base = result("baseline", BASE_WRONG, normalized=rules)
    valid = [i not in {21, 22, 23} for i in range(100)]
    cand = result("candidate", BASE_WRONG, valid=valid, normalized=rules)
    failure = next(f for f in gate(base, cand).failures if f.rule == "max_format_drop")
    assert failure.drop == pytest.approx(0.03)
    assert failure.negative_flip_ids == ["T0021", "T0022", "T0023"]


def test_an_empty_result_cannot_meet_a_minimum() -> None:
    empty = result_in_memory("empty", ids=[], classes=[], correct=[], slices={})
    report = gate(empty, empty)
    assert report.verdict == "fail"
    assert {f.rule for f in report.failures} == {"min_format_validity", "min_content_accuracy"}
    assert all("no examples" in f.reason and f.candidate is None for f in report.failures)


def test_slice_drop_is_judged_by_threshold() -> None:
    rules = contract(max_accuracy_drop=1.0, max_class_drop=1.0, significance=0.05)
    base = result("baseline", set(), normalized=rules)
    report = gate(base, result("candidate", {3, 6}, normalized=rules))  # both in the slice
    assert [(f.rule, f.scope) for f in report.failures] == [("max_slice_drop", "slice:no-order-id")]


def test_ids_present_in_only_one_result_are_reported_and_left_out() -> None:
    base = result("baseline", BASE_WRONG)
    cand = result_in_memory(
        "candidate",
        ids=[*IDS[:-3], "X1", "X2"],
        classes=[*CLASSES[:-3], "billing", "billing"],
        correct=[*outcomes(BASE_WRONG)[:-3], True, True],
        slices={"no-order-id": [*NO_ORDER[:-3], False, False]},
    )
    report = gate(base, cand)
    assert report.pairing.paired == 97
    assert report.pairing.only_in_baseline == 3
    assert report.pairing.only_in_baseline_ids == ["T0097", "T0098", "T0099"]
    assert report.pairing.only_in_candidate_ids == ["X1", "X2"]
    assert report.overall.n == 97


def test_no_gate_block_means_no_checks_and_a_pass() -> None:
    rules = contract()
    del rules["gate"]
    report = gate(result("b", BASE_WRONG, normalized=rules), result("c", set(), normalized=rules))
    assert report.checks == [] and report.verdict == "pass"


def test_a_misspelt_rule_is_an_error_not_ignored() -> None:
    rules = contract(max_clas_drop=0.1)
    with pytest.raises(InvalidContract, match=r"gate\.vs_baseline\.max_clas_drop: unknown rule"):
        gate(result("b", BASE_WRONG, normalized=rules), result("c", set(), normalized=rules))


def test_new_errors_show_one_example_per_category() -> None:
    valid = [i not in {20, 21, 22} for i in range(100)]
    errors = [None if v else "schema:required" for v in valid]
    cand = result("candidate", BASE_WRONG | {94}, valid=valid, errors=errors)
    report = gate(result("baseline", BASE_WRONG), cand)
    categories = {e.category: e for e in report.new_errors}
    assert categories["schema:required"].count == 3
    assert categories["schema:required"].example_id == "T0020"
    assert categories["schema:required"].baseline_category is None
    assert categories["mismatch:category,priority"].example_id == "T0094"
    assert categories["mismatch:category,priority"].predicted_class == "billing"


def test_same_seed_same_report_other_seed_other_intervals() -> None:
    base, cand = result("b", BASE_WRONG), result("c", {1, 2, 94, 95})
    first = gate(base, cand, seed=1).model_dump_json()
    assert gate(base, cand, seed=1).model_dump_json() == first
    # Few resamples, so that the interval bounds fall between the 1/n grid points.
    other = gate(base, cand, seed=2, resamples=200).model_dump_json()
    assert other != gate(base, cand, seed=1, resamples=200).model_dump_json()


def test_bad_options_are_usage_errors() -> None:
    base = result("b", BASE_WRONG)
    with pytest.raises(UsageError, match="resamples"):
        gate(base, base, resamples=10)
    with pytest.raises(UsageError, match="no candidate"):
        compare(base)


def test_compare_ranks_passing_first_and_adopts_the_best() -> None:
    base = result("baseline", BASE_WRONG)
    broken_rare = result("candidate-a", set(range(0, 2)) | {94, 95, 96, 97})  # +, rare broken
    modest = result("candidate-b", BASE_WRONG - {0, 1})  # +2, passes
    report = compare(base, broken_rare, modest)
    assert [entry.candidate for entry in report.ranking] == ["candidate-b", "candidate-a"]
    assert report.decision.outcome == "adopt" and report.decision.candidate == "candidate-b"
    assert report.ranking[1].regressions == ["max_rare_class_drop@class:legal_threat"]
    assert report.candidate == "candidate-b" and report.verdict == "pass"


def test_compare_says_when_no_candidate_passes_or_none_gains_enough() -> None:
    base = result("baseline", BASE_WRONG)
    broken = result("candidate-a", set(range(0, 2)) | {94, 95, 96, 97})
    none = compare(base, broken)
    assert none.decision.outcome == "no_candidate_passes"
    assert "max_rare_class_drop@class:legal_threat" in none.decision.reason
    small = compare(base, result("candidate-b", BASE_WRONG - {0}), min_gain=0.05)
    assert small.decision.outcome == "no_sufficient_gain" and small.decision.candidate is None


def test_candidates_with_the_same_name_are_told_apart_by_folder() -> None:
    base = result("baseline", BASE_WRONG)
    report = compare(base, result("x", set()), result("x", {1}))
    assert len({entry.candidate for entry in report.ranking}) == 2


@pytest.mark.slow
@settings(max_examples=25, deadline=None)
@given(st.data())
def test_flips_and_p_values_match_an_independent_computation(data: st.DataObject) -> None:
    n = data.draw(st.integers(20, 120))
    labels = data.draw(st.lists(st.sampled_from("abcd"), min_size=n, max_size=n))
    base_ok = data.draw(st.lists(st.booleans(), min_size=n, max_size=n))
    cand_ok = data.draw(st.lists(st.booleans(), min_size=n, max_size=n))
    ids = [f"i{k:03d}" for k in range(n)]
    outcome = {"ids": ids, "classes": labels, "slices": {}}
    report = gate(
        result_in_memory("b", correct=base_ok, **outcome),
        result_in_memory("c", correct=cand_ok, **outcome),
    )
    present = sorted(set(labels))
    p_values = []
    for label in [None, *present]:
        rows = [k for k in range(n) if label is None or labels[k] == label]
        table = confusion_matrix(
            [base_ok[k] for k in rows], [cand_ok[k] for k in rows], labels=[True, False]
        )
        scope = report.overall if label is None else report.classes[label]
        assert scope.negative_flips == table[0, 1]
        assert scope.positive_flips == table[1, 0]
        discordant = table[0, 1] + table[1, 0]
        expected = mcnemar(table, exact=True).pvalue if discordant else 1.0
        assert scope.mcnemar_p == expected
        if label is not None:
            p_values.append(scope.mcnemar_p)
    # Holm over the classes significance may judge (the non-rare ones); a rare
    # class's figure is adjusted across all classes, for reading only.
    common = [k for k, label in enumerate(present) if not report.classes[label].rare]
    rare = [k for k, label in enumerate(present) if report.classes[label].rare]
    holm_common = multipletests([p_values[k] for k in common], method="holm")[1] if common else []
    holm_all = multipletests(p_values, method="holm")[1]
    got = [report.classes[present[k]].holm_p for k in common]
    assert got == pytest.approx(holm_common, rel=1e-12)
    got_rare = [report.classes[present[k]].holm_p for k in rare]
    assert got_rare == pytest.approx([holm_all[k] for k in rare], rel=1e-12)


def _simulated_pair(rng: np.random.Generator, rules: dict, n_per_class: int = 150):
    """Baseline and candidate drawn independently from the same per-item distribution."""
    classes = [label for label in ("a", "b", "c", "d", "e") for _ in range(n_per_class)]
    n = len(classes)
    difficulty = rng.choice([0.97, 0.85, 0.6, 0.3], size=n, p=[0.4, 0.3, 0.2, 0.1])
    ids = [f"s{k:04d}" for k in range(n)]

    def draw(name: str):
        valid = rng.random(n) < 0.97
        correct = (rng.random(n) < difficulty) & valid
        return result_in_memory(
            name,
            ids=ids,
            classes=classes,
            correct=correct.tolist(),
            valid=valid.tolist(),
            slices={},
            normalized=rules,
        )

    return draw("baseline"), draw("candidate")


def false_fail_rate(significance: float | None, runs: int, seed: int = 20240601) -> float:
    """Share of same-distribution candidates that fail the strictest drop thresholds."""
    rules = contract(
        max_accuracy_drop=0.0, max_format_drop=0.0, max_class_drop=0.0, significance=significance
    )
    rules["gate"] = {"vs_baseline": rules["gate"]["vs_baseline"]}
    rng = np.random.default_rng(seed)
    fails = 0
    for _ in range(runs):
        base, cand = _simulated_pair(rng, rules)
        fails += gate(base, cand, resamples=100).verdict == "fail"
    return fails / runs


@pytest.mark.slow
def test_false_fail_rate_of_a_same_distribution_candidate_is_low_with_significance() -> None:
    # 750 items in 5 classes of 150, thresholds all 0.0 (any drop fails without
    # significance), significance 0.05. Measured here: 0.053 (16 of 300 runs);
    # without significance 0.975 (39 of 40). With 2,000 runs (seed 1) the rate
    # is 0.050, which docs/compare.md quotes. The same gate without the Holm
    # adjustment across classes measures 0.117 here, so this test can fail.
    with_significance = false_fail_rate(0.05, runs=300)
    without = false_fail_rate(None, runs=40)
    assert with_significance <= 0.08
    assert without >= 0.9
