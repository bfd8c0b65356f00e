"""``report.html`` of ``evalkit score``: one result as pictures.

Everything comes from the :class:`~evalkit.records._summary.ScoreSummary`
that ``summary.json`` persists, so the page shows exactly the figures of the
file beside it: overall rates, per-class rates with rare classes marked, the
confusion matrix, the format errors with one example each, fields, slices.
"""

from __future__ import annotations

from evalkit.records._summary import ScoreSummary
from evalkit.report.html.charts import PALETTE, Row, ValuePanel, count_chart, value_chart
from evalkit.report.html.matrix import score_confusion_section
from evalkit.report.html.page import (
    Html,
    Section,
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
from evalkit.report.numbers import rate


def _lead(summary: ScoreSummary) -> Html:
    overall, predictions = summary.overall, summary.predictions
    parts: list[object] = [
        figures(
            [
                ("content accuracy", rate(overall.content_accuracy)),
                ("format validity", rate(overall.format_validity)),
                (
                    "content accuracy given a valid format",
                    rate(overall.content_accuracy_given_valid),
                ),
                ("missing outputs", f"{overall.missing:,}"),
                ("gold items", f"{overall.n:,}"),
            ]
        )
    ]
    notes = []
    if predictions.unknown_ids:
        notes.append(
            f"{predictions.unknown_ids:,} predictions for ids not in the gold file were ignored "
            f"(e.g. {predictions.unknown_id_example})."
        )
    if predictions.duplicate_ids:
        notes.append(
            f"{predictions.duplicate_ids:,} ids had several predictions, resolved by "
            f"--on-duplicate {predictions.on_duplicate}."
        )
    if predictions.request_errors:
        notes.append(f"{predictions.request_errors:,} requests failed and count as missing.")
    if notes:
        parts.append(verdict_box("note", "Read with care:", notes, word="Note"))
    return join(parts)


def _classes(summary: ScoreSummary) -> Section:
    classes = summary.classes
    rows = [Row(label, rare=stats.rare) for label, stats in classes.items()]
    chart = value_chart(
        rows,
        [
            ValuePanel("content accuracy", [s.content_accuracy for s in classes.values()]),
            ValuePanel("format validity", [s.format_validity for s in classes.values()]),
            ValuePanel("F1 of the class field", [s.f1 for s in classes.values()]),
        ],
        f"Per-class rates of {summary.name}",
    )
    header = [
        "class",
        "support",
        "format validity",
        "content accuracy",
        "given valid",
        "predicted",
        "precision",
        "recall",
        "F1",
    ]
    table_rows = [
        [
            join([label, " ", badge("rare", "rare")]) if stats.rare else label,
            stats.support,
            rate(stats.format_validity),
            rate(stats.content_accuracy),
            rate(stats.content_accuracy_given_valid),
            stats.predicted,
            rate(stats.precision),
            rate(stats.recall),
            rate(stats.f1),
        ]
        for label, stats in classes.items()
    ]
    rare = summary.contract.normalized.get("rare") or {}
    caption = (
        "Content accuracy counts a missing or invalid output as wrong; F1 is that of the "
        "class field, from format-valid outputs only."
        + (f" Rare: at most {rare['max_support']} gold items." if "max_support" in rare else "")
    )
    body = join([figure(chart, caption), table(header, table_rows, numeric=range(1, 9))])
    return Section("Per class", body)


def _errors(summary: ScoreSummary) -> Section:
    errors = summary.errors
    if not errors:
        return Section("Format errors", paragraph("Every output is format-valid."))
    chart = count_chart(
        [Row(category) for category in errors],
        [(summary.name, [e.count for e in errors.values()], PALETTE["orange"])],
        "Format errors by category",
    )
    rows = [
        [
            element("code", category),
            stats.count,
            element("code", stats.example_id),
            stats.example_detail or "",
        ]
        for category, stats in errors.items()
    ]
    body = join(
        [figure(chart), table(["category", "count", "example", "reason"], rows, numeric=(1,))]
    )
    return Section("Format errors", body)


def _fields_and_slices(summary: ScoreSummary) -> list[Section]:
    sections = []
    if summary.fields:
        rows = [
            [
                element("code", name),
                stats.matched,
                rate(stats.accuracy),
                rate(stats.accuracy_given_valid),
                rate(stats.mean_f1),
            ]
            for name, stats in summary.fields.items()
        ]
        header = ["field", "matched", "accuracy", "given valid", "mean set F1"]
        sections.append(Section("Fields", table(header, rows, numeric=range(1, 5))))
    if summary.slices:
        rows = [
            [
                name,
                s.n,
                rate(s.format_validity),
                rate(s.content_accuracy),
                rate(s.content_accuracy_given_valid),
                s.missing,
            ]
            for name, s in summary.slices.items()
        ]
        header = ["slice", "n", "format validity", "content accuracy", "given valid", "missing"]
        sections.append(Section("Slices", table(header, rows, numeric=range(1, 6))))
    return sections


def render_score_html(summary: ScoreSummary) -> str:
    """The HTML report of one score result (``evalkit score --out`` writes it)."""
    contract, predictions = summary.contract, summary.predictions
    sections = []
    if summary.classes:
        sections.append(_classes(summary))
    if summary.confusion is not None and summary.confusion.cells:
        rare = {label: stats.rare for label, stats in summary.classes.items()}
        sections.append(score_confusion_section(summary.confusion, rare))
    sections.append(_errors(summary))
    sections += _fields_and_slices(summary)
    subtitle = (
        f"Contract {contract.name} v{contract.version}; {summary.gold.n:,} gold items; "
        f"{predictions.n:,} predictions ({predictions.format}) from {predictions.path}."
    )
    footer = (
        f"Contract fingerprint {contract.fingerprint}; gold sha256 {summary.gold.sha256}; "
        f"predictions sha256 {predictions.sha256}; validator {contract.evaluator.validator}. "
        f"evalkit {summary.evalkit_version}."
    )
    return page(
        f"evalkit score: {summary.name}",
        sections,
        subtitle=subtitle,
        lead=_lead(summary),
        footer=footer,
    )
