"""One candidate against the baseline as pictures: ``gate --html``, and each candidate of compare's.

The page takes the same typed report as the Markdown (and, optionally, the
raw outputs of the examples it shows) and lays it out: the verdict and the
failures first, then the per-class change with its interval, baseline
against candidate per class, the confusion matrix and its change, the format
errors, and the flipped examples with both outputs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from evalkit.comparison.outputs import FlipOutputs, SideOutputs
from evalkit.records._compare import (
    CandidateReport,
    FlippedExample,
    ScopeComparison,
)
from evalkit.report.html.charts import (
    PALETTE,
    Estimate,
    IntervalPanel,
    Row,
    ValuePanel,
    count_chart,
    interval_chart,
    value_chart,
)
from evalkit.report.html.matrix import confusion_section
from evalkit.report.html.page import (
    Html,
    Section,
    Tone,
    badge,
    element,
    figure,
    figures,
    join,
    page,
    paragraph,
    table,
    verdict_box,
)
from evalkit.report.numbers import p_value, rate, rate_ci, with_ci
from evalkit.report.provenance_markdown import status_text

MAX_OUTPUT_CHARS = 400


def failed_rules(report: CandidateReport) -> dict[str, str]:
    """Scope -> the rules failing there, joined."""
    failed: dict[str, list[str]] = {}
    for failure in report.failures:
        failed.setdefault(failure.scope, []).append(failure.rule)
    return {scope: ", ".join(rules) for scope, rules in failed.items()}


def _scopes(report: CandidateReport) -> list[ScopeComparison]:
    return [report.overall, *report.classes.values(), *report.slices.values()]


def _row(scope: ScopeComparison) -> Row:
    if scope.scope == "overall":
        return Row("overall")
    kind, name = scope.scope.split(":", 1)
    return Row(name if kind == "class" else f"slice {name}", rare=scope.rare)


def scope_estimate(scope: ScopeComparison, failed: Mapping[str, str]) -> Estimate:
    """A scope's change as a chart mark: value, interval, failed rules, numbers beside it."""
    note = f"{with_ci(scope.delta, scope.delta_ci)}  n={scope.n}"
    return Estimate(scope.delta, scope.delta_ci, failed.get(scope.scope), note)


def _ids(ids: Sequence[str]) -> Html:
    return join((element("code", i) for i in ids), ", ")


def headline(report: CandidateReport) -> Html:
    """The verdict box: PASS or FAIL, how many checks fail, each failure with its flipped ids."""
    tone: Tone = "pass" if report.verdict == "pass" else "fail"
    checks = len(report.checks)
    summary = f"{report.candidate.name} vs {report.baseline.name}: " + (
        f"{len(report.failures)} of {checks} checks fail"
        if report.failures
        else f"no rule fails ({checks} checks)"
    )
    items = []
    for failure in report.failures:
        item: list[object] = [
            element("strong", failure.rule),
            " on ",
            element("code", failure.scope),
            f": {failure.reason}.",
        ]
        if failure.negative_flip_ids:
            item += [" Negative flips: ", _ids(failure.negative_flip_ids), "."]
        items.append(join(item))
    pairing = report.pairing
    for side, count, ids in (
        ("baseline", pairing.only_in_baseline, pairing.only_in_baseline_ids),
        ("candidate", pairing.only_in_candidate, pairing.only_in_candidate_ids),
    ):
        if count:
            items.append(
                join(
                    [
                        f"{count:,} ids only in the {side}, left out of every statistic (e.g. ",
                        _ids(ids),
                        ").",
                    ]
                )
            )
    return verdict_box(tone, summary, items)


def test_set_note(report: CandidateReport) -> Html:
    """How often the test set was looked at, with the selection bias beside the figures;
    then the report's warnings (a slice that holds no paired example)."""
    notes = [paragraph(element("strong", "Warning:"), f" {warning}") for warning in report.warnings]
    if report.test_set is None:
        return join(notes)
    state = paragraph(
        element("strong", "Test set:"), f" {status_text(report.test_set)}.", muted=True
    )
    return join([state, *notes])


def headline_figures(report: CandidateReport) -> Html:
    """The overall figures under the verdict: accuracy, its change, validity, flips.

    Then the test set's ledger state: on a reused test, the worst-case
    selection bias belongs beside the figures it may inflate.
    """
    overall = report.overall
    cards = figures(
        [
            (
                "content accuracy",
                f"{rate(overall.baseline_accuracy)} → {rate(overall.candidate_accuracy)}",
            ),
            ("accuracy change (95% CI)", with_ci(overall.delta, overall.delta_ci)),
            (
                "format validity",
                f"{rate(overall.baseline_format_validity)} → "
                f"{rate(overall.candidate_format_validity)}",
            ),
            ("flips − / +", f"{overall.negative_flips} / {overall.positive_flips}"),
            ("paired examples", f"{report.pairing.paired:,}"),
        ]
    )
    return join([cards, test_set_note(report)])


def _delta_section(report: CandidateReport, level: int) -> Section:
    failed = failed_rules(report)
    scopes = _scopes(report)
    chart = interval_chart(
        [_row(s) for s in scopes],
        [IntervalPanel(report.candidate.name, [scope_estimate(s, failed) for s in scopes])],
        f"Content-accuracy change of {report.candidate.name} per class, with 95% intervals",
    )
    caption = (
        "Candidate minus baseline content accuracy, with its 95% paired-bootstrap interval "
        f"({report.options.resamples:,} resamples, seed {report.options.seed}). Left of zero "
        "is a drop (vermillion), right a gain (blue); ◆ marks a rare class, judged by its "
        "threshold alone; a shaded row with ✗ fails a gate rule."
    )
    return Section("Per-class accuracy change", figure(chart, caption), level=level)


def _side_by_side(report: CandidateReport, level: int) -> Section:
    classes = list(report.classes.values())
    rows = [_row(s) for s in classes]
    chart = value_chart(
        rows,
        [
            ValuePanel(
                "content accuracy",
                [s.candidate_accuracy for s in classes],
                [s.baseline_accuracy for s in classes],
            ),
            ValuePanel(
                "format validity",
                [s.candidate_format_validity for s in classes],
                [s.baseline_format_validity for s in classes],
            ),
        ],
        f"Baseline and {report.candidate.name} per class",
    )
    failed = failed_rules(report)
    header = [
        "class",
        "support",
        "baseline accuracy [95% CI]",
        "candidate accuracy [95% CI]",
        "change (95% CI)",
        "flips − / +",
        "McNemar p (Holm)",
        "format validity",
    ]
    table_rows = []
    for scope in classes:
        name = scope.scope.split(":", 1)[1]
        marks: list[object] = [name]
        if scope.rare:
            marks += [" ", badge("rare", "rare")]
        if scope.scope in failed:
            marks += [" ", badge(f"✗ {failed[scope.scope]}", "fail")]
        table_rows.append(
            [
                join(marks),
                scope.n,
                rate_ci(scope.baseline_accuracy, scope.baseline_accuracy_ci),
                rate_ci(scope.candidate_accuracy, scope.candidate_accuracy_ci),
                with_ci(scope.delta, scope.delta_ci),
                f"{scope.negative_flips} / {scope.positive_flips}",
                f"{p_value(scope.mcnemar_p)} ({p_value(scope.holm_p)})",
                f"{rate(scope.baseline_format_validity)} → {rate(scope.candidate_format_validity)}",
            ]
        )
    tones: list[Tone | None] = ["fail" if s.scope in failed else None for s in classes]
    caption = (
        "○ baseline, ● candidate (◆ for a rare class); the line is blue where the candidate "
        "is not lower, vermillion where it is. Accuracy intervals: Wilson 95%."
    )
    body = join(
        [figure(chart, caption), table(header, table_rows, numeric=range(1, 8), row_tones=tones)]
    )
    return Section("Baseline and candidate per class", body, level=level)


def _output(side: SideOutputs | None, example_id: str) -> Html:
    if side is None:
        return element("span", "not read", class_="muted")
    if side.note is not None:
        return element("span", f"not shown: {side.note}", class_="muted")
    text = side.outputs.get(example_id)
    if text is None:
        return element("span", "(no prediction)", class_="muted")
    if len(text) > MAX_OUTPUT_CHARS:
        more = len(text) - MAX_OUTPUT_CHARS
        return join(
            [
                element("pre", text[:MAX_OUTPUT_CHARS] + "…"),
                element("span", f"{more:,} more characters", class_="muted"),
            ]
        )
    return element("pre", text if text else " ")


def _errors_section(report: CandidateReport, outputs: FlipOutputs | None, level: int) -> Section:
    errors = report.format_errors
    if not errors:
        return Section("Format errors", paragraph("Neither side has a format error."), level=level)
    chart = count_chart(
        [Row(e.category) for e in errors],
        [
            ("baseline", [e.baseline for e in errors], PALETTE["grey"]),
            (report.candidate.name, [e.candidate for e in errors], PALETTE["orange"]),
        ],
        "Format errors by category",
    )
    rows = []
    for error in errors:
        side = None if outputs is None else getattr(outputs, error.example_side)
        rows.append(
            [
                element("code", error.category),
                error.baseline,
                error.candidate,
                join([element("code", error.example_id), f" ({error.example_side})"]),
                error.detail or "",
                _output(side, error.example_id),
            ]
        )
    header = ["category", "baseline", "candidate", "example", "reason", "its output"]
    body = join([figure(chart), table(header, rows, numeric=(1, 2))])
    return Section("Format errors", body, level=level)


def _verdict(category: str | None, predicted: str | None) -> Html:
    if category is None:
        return join(["correct", element("span", f" ({predicted})", class_="muted")])
    shown = f" → {predicted}" if predicted else ""
    return join([element("code", category), shown])


def _flip_rows(flips: Sequence[FlippedExample], outputs: FlipOutputs | None) -> list[list[object]]:
    rows: list[list[object]] = []
    for flip in flips:
        label: list[object] = [flip.gold_class or "–"]
        if flip.rare:
            label += [" ", badge("rare", "rare")]
        rows.append(
            [
                element("code", flip.id),
                join(label),
                _verdict(flip.baseline_category, flip.baseline_predicted_class),
                _verdict(flip.candidate_category, flip.candidate_predicted_class),
                _output(outputs.baseline if outputs else None, flip.id),
                _output(outputs.candidate if outputs else None, flip.id),
            ]
        )
    return rows


def _flips_section(report: CandidateReport, outputs: FlipOutputs | None, level: int) -> Section:
    overall = report.overall
    header = ["id", "gold class", "baseline", "candidate", "baseline output", "candidate output"]
    parts: list[object] = []
    for direction, total, what in (
        ("negative", overall.negative_flips, "baseline right, candidate wrong"),
        ("positive", overall.positive_flips, "baseline wrong, candidate right"),
    ):
        shown = [f for f in report.flips if f.direction == direction]
        parts.append(element("h4", f"{direction.capitalize()} flips ({what}): {total:,}"))
        if not shown:
            parts.append(paragraph("None.", muted=True))
            continue
        if len(shown) < total:
            parts.append(
                paragraph(
                    f"The first of each class, {len(shown)} of {total:,}; "
                    "every id is in report.json.",
                    muted=True,
                )
            )
        parts.append(table(header, _flip_rows(shown, outputs)))
    return Section("Flipped examples", join(parts), level=level)


def candidate_sections(
    report: CandidateReport, outputs: FlipOutputs | None = None, level: int = 2
) -> list[Section]:
    """Every section of one candidate's report, headings at ``level``."""
    sections = [_delta_section(report, level), _side_by_side(report, level)]
    if report.confusion is not None:
        sections.append(confusion_section(report.confusion, report.classes, level))
    sections += [_errors_section(report, outputs, level), _flips_section(report, outputs, level)]
    return sections


def footer(report: CandidateReport) -> Html:
    """How the numbers were made: contract, gold, interval methods, seed, evalkit version."""
    contract, options = report.contract, report.options
    return join(
        [
            f"Contract {contract.name} v{contract.version} ({contract.fingerprint}); gold sha256 "
            f"{report.gold_sha256}. Accuracy intervals: Wilson {options.confidence:.0%}; changes: "
            f"paired bootstrap, {options.resamples:,} resamples, seed {options.seed}; p: two-sided "
            "exact McNemar, Holm-adjusted across classes and across slices. ",
            f"evalkit {report.evalkit_version}.",
        ]
    )


def render_candidate_html(report: CandidateReport, outputs: FlipOutputs | None = None) -> str:
    """The HTML report of one candidate against the baseline (``evalkit gate --html``)."""
    title = f"evalkit gate: {report.candidate.name} vs {report.baseline.name}"
    lead = join([headline(report), headline_figures(report)])
    return page(
        title,
        candidate_sections(report, outputs),
        subtitle=subtitle(report),
        lead=lead,
        footer=footer(report),
    )


def subtitle(report: CandidateReport) -> str:
    """The line under the title: the contract and how many examples paired."""
    contract = report.contract
    return (
        f"Contract {contract.name} v{contract.version}, {report.pairing.paired:,} paired examples."
    )
