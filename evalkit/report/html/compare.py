"""``report.html`` of ``evalkit compare``: the decision, the ranking, then every candidate.

With several candidates, a chart of every candidate's per-class change on one
axis comes before the candidates' own sections (those of
:mod:`evalkit.report.html.candidate`), so the class that one of them broke
is seen at once.
"""

from __future__ import annotations

from collections.abc import Mapping

from evalkit.comparison.outputs import FlipOutputs
from evalkit.records._compare import ComparisonReport
from evalkit.report.html.candidate import (
    candidate_sections,
    failed_rules,
    footer,
    headline,
    headline_figures,
    scope_estimate,
    subtitle,
)
from evalkit.report.html.charts import Estimate, IntervalPanel, Row, interval_chart
from evalkit.report.html.page import Section, Tone, badge, figure, join, page, table, verdict_box
from evalkit.report.html.suspects import suspect_labels_section
from evalkit.report.numbers import p_value, with_ci


def _ranking(report: ComparisonReport) -> Section:
    rows = [Row(f"{e.rank}. {e.candidate}") for e in report.ranking]
    estimates = [
        Estimate(
            e.delta,
            e.delta_ci,
            "fails the gate" if e.verdict == "fail" else None,
            f"{with_ci(e.delta, e.delta_ci)}  {e.negative_flips}−/{e.positive_flips}+",
        )
        for e in report.ranking
    ]
    chart = interval_chart(
        rows,
        [IntervalPanel("overall change", estimates)],
        "Overall content-accuracy change of every candidate",
    )
    header = [
        "rank",
        "candidate",
        "verdict",
        "change (95% CI)",
        "flips − / +",
        "McNemar p",
        "known regressions",
    ]
    table_rows = [
        [
            e.rank,
            e.candidate,
            badge("✓ pass", "pass") if e.verdict == "pass" else badge("✗ fail", "fail"),
            with_ci(e.delta, e.delta_ci),
            f"{e.negative_flips} / {e.positive_flips}",
            p_value(e.mcnemar_p),
            ", ".join(e.regressions) or "none",
        ]
        for e in report.ranking
    ]
    caption = "Passing candidates rank first, then by accuracy gain; ✗ marks a failing one."
    body = join([figure(chart, caption), table(header, table_rows, numeric=(0, 4))])
    return Section("Ranking", body)


def _every_class(report: ComparisonReport) -> Section:
    labels = sorted({label for c in report.candidates for label in c.classes})
    first = report.candidates[0]
    rows = [
        Row(label, rare=first.classes[label].rare if label in first.classes else False)
        for label in labels
    ]
    panels = []
    for candidate in report.candidates:
        failed = failed_rules(candidate)
        estimates = [
            scope_estimate(candidate.classes[label], failed)
            if label in candidate.classes
            else Estimate(None)
            for label in labels
        ]
        panels.append(IntervalPanel(candidate.candidate.name, estimates))
    chart = interval_chart(rows, panels, "Per-class content-accuracy change of every candidate")
    caption = (
        "Each candidate's per-class change with its 95% paired-bootstrap interval, on "
        "one axis; a shaded row with bold label fails a rule for some candidate."
    )
    return Section("Per-class change, every candidate", figure(chart, caption))


def render_comparison_html(
    report: ComparisonReport, outputs: Mapping[str, FlipOutputs] | None = None
) -> str:
    """The HTML report of ``evalkit compare``: decision, ranking, then every candidate.

    ``outputs`` (from :func:`evalkit.comparison.outputs.flip_outputs`), by
    candidate name, adds the raw outputs to the flipped and error examples.
    """
    count = len(report.candidates)
    title = f"evalkit compare: {report.baseline.name} vs {count} candidate" + "s" * (count > 1)
    tones: dict[str, Tone] = {"adopt": "pass", "no_candidate_passes": "fail"}
    tone = tones.get(report.decision.outcome, "note")
    lead = verdict_box(tone, report.decision.reason, word="Decision:")
    sections = [_ranking(report)]
    if count > 1:
        sections.append(_every_class(report))
    suspects = suspect_labels_section(report)
    if suspects is not None:
        sections.append(suspects)
    for candidate in report.candidates:
        rank = next(e.rank for e in report.ranking if e.candidate == candidate.candidate.name)
        verdict = "PASS" if candidate.verdict == "pass" else "FAIL"
        intro = join([headline(candidate), headline_figures(candidate)])
        sections.append(Section(f"{rank}. {candidate.candidate.name}: {verdict}", intro))
        found = outputs.get(candidate.candidate.name) if outputs else None
        sections += candidate_sections(candidate, found, level=3)
    return page(
        title,
        sections,
        subtitle=subtitle(report.candidates[0]),
        lead=lead,
        footer=footer(report.candidates[0]),
    )
