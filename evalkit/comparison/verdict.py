"""The contract's gate rules applied to a comparison: one check per rule and scope.

A drop fails when it is greater than its threshold (DESIGN.md). With
``vs_baseline.significance`` set, an overall drop or a non-rare class drop must
also be significant to fail: its exact McNemar p-value (Holm-adjusted across
classes for a class) must be below the level. That keeps a candidate that is
merely the baseline's own noise from failing, while a rare class, which can
never reach significance with a handful of items, is judged by its threshold
alone, and so is every slice (a behaviour the contract says to preserve).
"""

from __future__ import annotations

from dataclasses import dataclass

from evalkit.comparison.rules import GateRules
from evalkit.records._compare import RuleCheck, ScopeComparison

# Values within this of a threshold count as equal to it, so that a drop of
# exactly 1/10 against a threshold of 0.10 is "not greater" whatever the
# floating-point rounding of the two.
TOLERANCE = 1e-9


@dataclass(frozen=True)
class CandidateTotals:
    """The candidate's own overall counts, which the absolute minimums judge."""

    n: int
    format_valid: int
    content_correct: int
    missing: int


@dataclass(frozen=True)
class _Measure:
    """One quantity of a scope: what the rule compares."""

    name: str
    baseline: float | None
    candidate: float | None
    p_value: float
    negative_flip_ids: list[str]


def _fmt(value: float) -> str:
    return f"{value:.4g}"


def _judge_drop(
    scope: ScopeComparison,
    measure: _Measure,
    threshold: float,
    significance: float | None,
    judged_alone: str | None,
) -> tuple[bool, float | None, str]:
    """(passed, drop, reason) of one drop against its threshold and significance."""
    if measure.baseline is None or measure.candidate is None:
        return True, None, "no paired examples"
    drop = measure.baseline - measure.candidate
    change = f"{measure.name} {_fmt(measure.baseline)} → {_fmt(measure.candidate)}"
    if drop <= threshold + TOLERANCE:
        verb = f"dropped {_fmt(drop)}" if drop > 0 else "did not drop"
        return True, drop, f"{change}: {verb}, within the allowed {_fmt(threshold)}"
    too_much = f"{change}: dropped {_fmt(drop)}, more than the allowed {_fmt(threshold)}"
    if significance is None:
        suffix = f" ({judged_alone}, judged by threshold alone)" if judged_alone else ""
        return False, drop, too_much + suffix
    p_name = "Holm-adjusted McNemar p" if scope.scope.startswith("class:") else "McNemar p"
    p_text = f"{p_name} {_fmt(measure.p_value)}"
    if measure.p_value < significance:
        return False, drop, f"{too_much}, and significant ({p_text} < {significance})"
    return True, drop, f"{too_much}, but not significant ({p_text} ≥ {significance})"


def _drop_check(
    rule: str,
    scope: ScopeComparison,
    measure: _Measure,
    threshold: float,
    significance: float | None,
    judged_alone: str | None = None,
) -> RuleCheck:
    """Judge one drop; ``judged_alone`` says why significance does not apply."""
    passed, drop, reason = _judge_drop(scope, measure, threshold, significance, judged_alone)
    return RuleCheck(
        rule=rule,
        scope=scope.scope,
        passed=passed,
        baseline=measure.baseline,
        candidate=measure.candidate,
        threshold=threshold,
        drop=drop,
        p_value=measure.p_value if significance is not None else None,
        significance=significance,
        reason=reason,
        negative_flip_ids=measure.negative_flip_ids,
    )


def _absolute(
    rule: str, passed: bool, value: float | None, threshold: float, reason: str
) -> RuleCheck:
    return RuleCheck(
        rule=rule,
        scope="overall",
        passed=passed,
        baseline=None,
        candidate=value,
        threshold=threshold,
        drop=None,
        p_value=None,
        significance=None,
        reason=reason,
        negative_flip_ids=[],
    )


def _absolute_checks(rules: GateRules, totals: CandidateTotals) -> list[RuleCheck]:
    checks = []
    n = max(totals.n, 1)
    for rule, minimum, value, name in (
        (
            "min_format_validity",
            rules.min_format_validity,
            totals.format_valid / n,
            "format validity",
        ),
        (
            "min_content_accuracy",
            rules.min_content_accuracy,
            totals.content_correct / n,
            "content accuracy",
        ),
    ):
        if minimum is None:
            continue
        if totals.n == 0:  # a gate must not pass what it could not look at
            reason = f"no examples, so {name} is undefined; a minimum cannot be met"
            checks.append(_absolute(rule, False, None, minimum, reason))
            continue
        passed = value >= minimum - TOLERANCE
        relation = "at least" if passed else "below"
        reason = f"{name} {_fmt(value)} is {relation} the minimum {_fmt(minimum)}"
        checks.append(_absolute(rule, passed, value, minimum, reason))
    if rules.max_missing is not None:
        passed = totals.missing <= rules.max_missing
        relation = "within" if passed else "more than"
        reason = f"{totals.missing} missing predictions, {relation} the allowed {rules.max_missing}"
        checks.append(
            _absolute(
                "max_missing", passed, float(totals.missing), float(rules.max_missing), reason
            )
        )
    return checks


def _accuracy(scope: ScopeComparison, p_value: float) -> _Measure:
    return _Measure(
        "content accuracy",
        scope.baseline_accuracy,
        scope.candidate_accuracy,
        p_value,
        scope.negative_flip_ids,
    )


def apply_rules(
    rules: GateRules,
    totals: CandidateTotals,
    overall: ScopeComparison,
    classes: list[ScopeComparison],
    slices: list[ScopeComparison],
) -> list[RuleCheck]:
    """Every applicable rule against every scope it covers, in a stable order."""
    vs = rules.vs_baseline
    checks = _absolute_checks(rules, totals)
    if vs.max_accuracy_drop is not None:
        measure = _accuracy(overall, overall.mcnemar_p)
        checks.append(
            _drop_check(
                "max_accuracy_drop", overall, measure, vs.max_accuracy_drop, vs.significance
            )
        )
    if vs.max_format_drop is not None:
        measure = _Measure(
            "format validity",
            overall.baseline_format_validity,
            overall.candidate_format_validity,
            overall.format_mcnemar_p,
            overall.format_negative_flip_ids,
        )
        checks.append(
            _drop_check("max_format_drop", overall, measure, vs.max_format_drop, vs.significance)
        )
    for scope in classes:
        if scope.rare and vs.max_rare_class_drop is not None:
            measure = _accuracy(scope, scope.holm_p)
            checks.append(
                _drop_check(
                    "max_rare_class_drop",
                    scope,
                    measure,
                    vs.max_rare_class_drop,
                    None,
                    "rare class",
                )
            )
        elif not scope.rare and vs.max_class_drop is not None:
            measure = _accuracy(scope, scope.holm_p)
            checks.append(
                _drop_check("max_class_drop", scope, measure, vs.max_class_drop, vs.significance)
            )
    if vs.max_slice_drop is not None:
        for scope in slices:
            measure = _accuracy(scope, scope.holm_p)
            checks.append(
                _drop_check("max_slice_drop", scope, measure, vs.max_slice_drop, None, "slice")
            )
    return checks
