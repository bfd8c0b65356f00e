"""The short report ``evalkit score`` prints: overall, errors, classes, slices."""

from __future__ import annotations

from typing import Any

from evalkit.records._summary import Rates, ScoreSummary


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _rates_line(label: str, rates: Rates) -> str:
    return (
        f"{label:<18} n={rates.n:<6} format {_rate(rates.format_validity)}  "
        f"accuracy {_rate(rates.content_accuracy)}  "
        f"given valid {_rate(rates.content_accuracy_given_valid)}"
    )


def render_score_summary(summary: ScoreSummary, out: str | None = None) -> str:
    """A plain-text summary of a score result, for a terminal or a CI log."""
    predictions = summary.predictions
    where = f" -> {out}" if out else ""
    lines = [
        f"scored {summary.name}: {summary.overall.n:,} gold items, {predictions.n:,} "
        f"predictions ({predictions.format}){where}",
        f"contract {summary.contract.name} v{summary.contract.version} "
        f"{summary.contract.fingerprint[:19]}…",
        "",
        _rates_line("overall", summary.overall),
    ]
    notes = []
    if predictions.unknown_ids:
        notes.append(
            f"{predictions.unknown_ids} predictions for unknown ids ignored "
            f"(e.g. {predictions.unknown_id_example})"
        )
    if predictions.duplicate_ids:
        notes.append(
            f"{predictions.duplicate_ids} repeated ids resolved by --on-duplicate "
            f"{predictions.on_duplicate}"
        )
    lines += [f"note: {note}" for note in notes]
    if summary.errors:
        lines += ["", "errors:"]
        lines += [
            f"  {category:<24} {stats.count:>6}  e.g. {stats.example_id}"
            for category, stats in summary.errors.items()
        ]
    if summary.classes:
        width = max(len(label) for label in summary.classes) + 7
        lines += [
            "",
            f"{'class':<{width}} {'n':>6} {'format':>7} {'acc':>6} {'prec':>6} {'recall':>6} "
            f"{'f1':>6}",
        ]
        for label, stats in summary.classes.items():
            shown = f"{label} (rare)" if stats.rare else label
            lines.append(
                f"{shown:<{width}} {stats.support:>6} {_rate(stats.format_validity):>7} "
                f"{_rate(stats.content_accuracy):>6} {stats.precision:>6.3f} "
                f"{stats.recall:>6.3f} {stats.f1:>6.3f}"
            )
    if summary.slices:
        lines += ["", *(_rates_line(f"slice {n}", r) for n, r in summary.slices.items())]
    return "\n".join(lines)


def render_rescore_lines(summary: ScoreSummary, replaced: Any, out: str) -> list[str]:
    """What ``evalkit rescore`` prints per result: the contracts, and the overall rates before
    and after (``replaced`` is the result folder re-scored, as ``load_result`` reads it)."""
    old = replaced.summary.contract
    new = summary.contract
    examples = replaced.examples
    n = examples.height
    before_format = int(examples["format_valid"].sum()) / n if n else None
    before_accuracy = int(examples["content_correct"].sum()) / n if n else None
    overall = summary.overall
    same = " (the same fingerprint: nothing changed)" if old.fingerprint == new.fingerprint else ""
    return [
        f"re-scored {summary.name} under {new.name} v{new.version} (was v{old.version}){same}: "
        f"{replaced.path} -> {out}",
        f"  n={overall.n:<6} format {_rate(before_format)} -> {_rate(overall.format_validity)}  "
        f"accuracy {_rate(before_accuracy)} -> {_rate(overall.content_accuracy)}",
    ]
