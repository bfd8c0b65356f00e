"""The Markdown report: what a reviewer reads on a pull request.

It leads with the verdict and the failures (rule, scope, values, threshold
and the ids of the examples that regressed), then the numbers: overall, per
class, per slice, then one example of each new error category. Numbers are
rounded for reading; ``report.json`` keeps them exact.
"""

from __future__ import annotations

from collections.abc import Sequence

from evalkit.records._compare import (
    CandidateReport,
    ComparisonReport,
    RuleCheck,
    ScopeComparison,
)
from evalkit.report.markdown_text import code, text
from evalkit.report.numbers import p_value as _p
from evalkit.report.numbers import rate as _rate
from evalkit.report.numbers import rate_ci as _rate_ci
from evalkit.report.numbers import signed as _signed
from evalkit.report.numbers import with_ci as _with_ci
from evalkit.report.provenance_markdown import decision_record, provenance_section, test_set_line
from evalkit.report.suspects_markdown import suspect_section

MAX_TABLE_CLASSES = 200


def _cell(text: object) -> str:
    """A table cell: pipes escaped, newlines flattened."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def _table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(value) for value in row) + " |" for row in rows]
    return lines


def _ids(ids: Sequence[str]) -> str:
    return ", ".join(code(i) for i in ids)


def _failure_line(failure: RuleCheck) -> str:
    line = f"- **{failure.rule}** on {code(failure.scope)}: {text(failure.reason)}."
    if failure.negative_flip_ids:
        line += f" Negative flips: {_ids(failure.negative_flip_ids)}."
    return line


def _summary_line(overall: ScopeComparison) -> str:
    change = f"{_rate(overall.baseline_accuracy)} → {_rate(overall.candidate_accuracy)}"
    delta = _signed(overall.delta)
    if overall.delta_ci is not None:
        low, high = overall.delta_ci
        delta += f", 95% CI {_signed(low)} to {_signed(high)}"
    return (
        f"Content accuracy {change} ({delta}); "
        f"{overall.negative_flips} negative and {overall.positive_flips} positive flips."
    )


def _headline(report: CandidateReport, level: str) -> list[str]:
    verdict = "✅ PASS" if report.verdict == "pass" else "❌ FAIL"
    contract = report.contract
    lines = [
        f"{level} {verdict}: {text(report.candidate.name)} vs {text(report.baseline.name)}",
        "",
        f"Contract **{text(contract.name)}** v{contract.version} "
        f"({code(contract.fingerprint[:19])}), "
        f"{report.pairing.paired} paired examples, gold sha256 `{report.gold_sha256[:12]}`.",
        "",
        _summary_line(report.overall),
        "",
    ]
    state = test_set_line(report.test_set)
    if state:
        lines += [state, ""]
    for warning in report.warnings:
        lines += [f"> ⚠ {text(warning)}", ""]
    if not report.failures:
        lines += [f"No rule fails ({len(report.checks)} checks).", ""]
        return lines
    lines += [f"**{len(report.failures)} of {len(report.checks)} checks fail:**", ""]
    lines += [_failure_line(failure) for failure in report.failures]
    regressed = sorted(
        {f.scope.removeprefix("class:") for f in report.failures if f.scope.startswith("class:")}
    )
    if regressed:
        lines += [
            "",
            "Regressed classes: " + ", ".join(f"**{text(label)}**" for label in regressed) + ".",
        ]
    return [*lines, ""]


def _pairing(report: CandidateReport) -> list[str]:
    pairing = report.pairing
    if not (pairing.only_in_baseline or pairing.only_in_candidate):
        return []
    lines = ["> **Unpaired ids**, left out of every statistic:"]
    for side, count, ids in (
        ("baseline", pairing.only_in_baseline, pairing.only_in_baseline_ids),
        ("candidate", pairing.only_in_candidate, pairing.only_in_candidate_ids),
    ):
        if count:
            lines.append(f"> {count} only in the {side} (e.g. {_ids(ids)}).")
    return [*lines, ""]


def _overall(scope: ScopeComparison, level: str) -> list[str]:
    header = ["metric", "baseline [95% CI]", "candidate [95% CI]", "delta (95% CI)"]
    header += ["flips − / +", "McNemar p"]
    rows = [
        [
            "content accuracy",
            _rate_ci(scope.baseline_accuracy, scope.baseline_accuracy_ci),
            _rate_ci(scope.candidate_accuracy, scope.candidate_accuracy_ci),
            _with_ci(scope.delta, scope.delta_ci),
            f"{scope.negative_flips} / {scope.positive_flips}",
            _p(scope.mcnemar_p),
        ],
        [
            "format validity",
            _rate(scope.baseline_format_validity),
            _rate(scope.candidate_format_validity),
            _with_ci(scope.format_delta, scope.format_delta_ci),
            f"{scope.format_negative_flips} / {scope.format_positive_flips}",
            _p(scope.format_mcnemar_p),
        ],
    ]
    return [f"{level} Overall", "", *_table(header, rows), ""]


def _scope_rows(
    scopes: Sequence[ScopeComparison], failed: set[str], with_rare: bool
) -> list[list[object]]:
    rows: list[list[object]] = []
    for scope in scopes:
        name = text(scope.scope.split(":", 1)[1])
        row: list[object] = [f"**{name}** ❌" if scope.scope in failed else name, scope.n]
        if with_rare:
            row.append("rare" if scope.rare else "")
        row += [
            f"{_rate(scope.baseline_accuracy)} → {_rate(scope.candidate_accuracy)}",
            _with_ci(scope.delta, scope.delta_ci),
            f"{scope.negative_flips} / {scope.positive_flips}",
            f"{_p(scope.mcnemar_p)} ({_p(scope.holm_p)})",
        ]
        rows.append(row)
    return rows


def _scopes(report: CandidateReport, level: str) -> list[str]:
    failed = {failure.scope for failure in report.failures}
    lines: list[str] = []
    tail = ["baseline → candidate", "delta (95% CI)", "flips − / +", "p (Holm)"]
    classes = list(report.classes.values())
    if classes:
        shown = classes[:MAX_TABLE_CLASSES]
        lines += [f"{level} Per class", ""]
        lines += _table(["class", "support", "rare", *tail], _scope_rows(shown, failed, True))
        if len(classes) > len(shown):
            lines += ["", f"({len(classes) - len(shown)} more classes in report.json.)"]
        lines.append("")
    if report.slices:
        lines += [f"{level} Slices", ""]
        rows = _scope_rows(list(report.slices.values()), failed, False)
        lines += [*_table(["slice", "n", *tail], rows), ""]
    return lines


def _new_errors(report: CandidateReport, level: str) -> list[str]:
    lines = [f"{level} New errors", ""]
    if not report.new_errors:
        return [*lines, "The candidate makes no error the baseline did not make.", ""]
    header = ["category", "count", "example", "baseline there", "gold → predicted", "detail"]
    rows = [
        [
            code(error.category),
            error.count,
            code(error.example_id),
            text(error.baseline_category or "correct"),
            f"{text(error.gold_class or '–')} → {text(error.predicted_class or '–')}",
            text(error.detail or ""),
        ]
        for error in report.new_errors
    ]
    return [*lines, *_table(header, rows), ""]


def _footer(report: CandidateReport) -> list[str]:
    options = report.options
    return [
        f"<sub>Accuracy intervals: Wilson {options.confidence:.0%}; delta intervals: paired "
        f"bootstrap, {options.resamples:,} resamples, seed {options.seed}; p: two-sided exact "
        "McNemar, Holm-adjusted across classes and across slices. "
        f"evalkit {report.evalkit_version}.</sub>",
        "",
    ]


def render_candidate_markdown(report: CandidateReport, heading_level: int = 1) -> str:
    """The Markdown report of one candidate against the baseline (``evalkit gate``)."""
    top, sub = "#" * heading_level, "#" * (heading_level + 1)
    lines = _headline(report, top) + _pairing(report) + provenance_section(report, sub)
    lines += _overall(report.overall, sub) + _scopes(report, sub) + _new_errors(report, sub)
    if report.decision is not None and heading_level == 1:
        lines += decision_record(report.decision, sub)
    return "\n".join(lines + _footer(report))


def render_comparison_markdown(report: ComparisonReport) -> str:
    """The Markdown report of several candidates: decision, ranking, then each candidate."""
    count = len(report.candidates)
    noun = "candidate" if count == 1 else "candidates"
    lines = [
        f"# evalkit compare: {text(report.baseline.name)} vs {count} {noun}",
        "",
        f"**Decision:** {text(report.decision.reason)}",
        "",
        "## Ranking",
        "",
    ]
    header = ["rank", "candidate", "verdict", "accuracy delta (95% CI)", "flips − / +"]
    header += ["McNemar p", "known regressions"]
    rows = [
        [
            entry.rank,
            text(entry.candidate),
            "✅ pass" if entry.verdict == "pass" else "❌ fail",
            _with_ci(entry.delta, entry.delta_ci),
            f"{entry.negative_flips} / {entry.positive_flips}",
            _p(entry.mcnemar_p),
            text(", ".join(entry.regressions) or "none"),
        ]
        for entry in report.ranking
    ]
    lines += [*_table(header, rows), ""]
    lines += decision_record(report.decision, "##", with_reason=False)
    lines += suspect_section(report, "##")
    sections = [render_candidate_markdown(candidate, 2) for candidate in report.candidates]
    return "\n".join(lines) + "\n" + "\n".join(sections)
