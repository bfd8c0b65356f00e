"""Ranking several candidates against one baseline, and the decision it implies.

Passing comes first: a candidate that breaks a rule is never recommended over
one that does not, however large its average gain. Among equals, the larger
overall accuracy gain ranks higher, then the fewer negative flips, then the
name (so ties order the same on every run).
"""

from __future__ import annotations

from evalkit.comparison.verdict import TOLERANCE
from evalkit.records._compare import CandidateReport, Decision, RankedCandidate


def _key(report: CandidateReport) -> tuple[bool, float, int, str]:
    delta = report.overall.delta if report.overall.delta is not None else 0.0
    return (report.verdict != "pass", -delta, report.overall.negative_flips, report.candidate.name)


def rank_candidates(reports: list[CandidateReport]) -> list[CandidateReport]:
    """The candidates' reports, best first."""
    return sorted(reports, key=_key)


def ranking_entries(ranked: list[CandidateReport]) -> list[RankedCandidate]:
    """One summary row per candidate, in ranking order."""
    return [
        RankedCandidate(
            rank=rank,
            candidate=report.candidate.name,
            verdict=report.verdict,
            delta=report.overall.delta,
            delta_ci=report.overall.delta_ci,
            mcnemar_p=report.overall.mcnemar_p,
            negative_flips=report.overall.negative_flips,
            positive_flips=report.overall.positive_flips,
            regressions=[f"{check.rule}@{check.scope}" for check in report.failures],
        )
        for rank, report in enumerate(ranked, start=1)
    ]


def _signed(value: float | None) -> str:
    return "n/a" if value is None else f"{value:+.3f}"


def decide(ranked: list[CandidateReport], min_gain: float) -> Decision:
    """Adopt the best passing candidate if it gains over ``min_gain``; else keep the baseline."""
    passing = [report for report in ranked if report.verdict == "pass"]
    if not passing:
        regressions = "; ".join(
            f"{report.candidate.name}: "
            + ", ".join(f"{check.rule}@{check.scope}" for check in report.failures)
            for report in ranked
        )
        return Decision(
            outcome="no_candidate_passes",
            candidate=None,
            reason=f"No candidate passes the gate; keep the baseline ({regressions}).",
        )
    best = passing[0]
    overall = best.overall
    gain = overall.delta if overall.delta is not None else 0.0
    evidence = f"content accuracy {_signed(overall.delta)}"
    if overall.delta_ci is not None:
        low, high = overall.delta_ci
        evidence += (
            f" (95% CI {_signed(low)} to {_signed(high)}, McNemar p {overall.mcnemar_p:.3g})"
        )
    if gain > min_gain + TOLERANCE:
        return Decision(
            outcome="adopt",
            candidate=best.candidate.name,
            reason=f"Adopt {best.candidate.name}: it passes every rule, {evidence}.",
        )
    return Decision(
        outcome="no_sufficient_gain",
        candidate=None,
        reason=(
            f"No sufficient gain; keep the baseline: the best passing candidate, "
            f"{best.candidate.name}, has {evidence}, not more than the required "
            f"{min_gain:+.3f}."
        ),
    )
