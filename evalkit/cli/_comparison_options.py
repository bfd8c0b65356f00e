"""What ``evalkit compare`` and ``evalkit gate`` share on the command line beyond their options.

Their options are :mod:`evalkit.comparison.options`' fields (one definition,
both commands); here are the result-folder argument and the terminal lines.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from evalkit.records._compare import CandidateReport, ComparisonReport

RESULT_FOLDER = click.Path(file_okay=False, path_type=str)


def warn_unpaired(report: CandidateReport) -> None:
    """Say on stderr what deserves a look: ids in only one result (they are left out), and
    the report's warnings (a slice that holds no paired example)."""
    for warning in report.warnings:
        click.echo(f"evalkit: warning: {report.candidate.name}: {warning}", err=True)
    pairing = report.pairing
    if pairing.only_in_baseline or pairing.only_in_candidate:
        examples = pairing.only_in_baseline_ids or pairing.only_in_candidate_ids
        click.echo(
            f"evalkit: warning: {report.candidate.name}: {pairing.only_in_baseline} ids only in "
            f"the baseline and {pairing.only_in_candidate} only in the candidate "
            f"(e.g. {examples[0]}); they are left out of the comparison",
            err=True,
        )


def verdict_lines(report: CandidateReport) -> list[str]:
    """A few plain lines for the terminal: verdict, the overall change, each failure."""
    from evalkit.report.provenance_markdown import provenance_lines

    overall = report.overall
    verdict = "PASS" if report.verdict == "pass" else "FAIL"
    lines = [
        f"{verdict}: {report.candidate.name} vs {report.baseline.name} "
        f"({report.contract.name} v{report.contract.version}, "
        f"{report.pairing.paired} paired examples, {len(report.checks)} checks)"
    ]
    if overall.baseline_accuracy is not None and overall.candidate_accuracy is not None:
        interval = ""
        if overall.delta_ci is not None:
            interval = f", 95% CI {overall.delta_ci[0]:+.3f} to {overall.delta_ci[1]:+.3f}"
        lines.append(
            f"  content accuracy {overall.baseline_accuracy:.3f} → "
            f"{overall.candidate_accuracy:.3f} ({overall.delta:+.3f}{interval}); "
            f"{overall.negative_flips} negative / {overall.positive_flips} positive flips"
        )
    lines += provenance_lines(report)
    for failure in report.failures:
        line = f"  ✗ {failure.rule} @ {failure.scope}: {failure.reason}"
        if failure.negative_flip_ids:
            line += "; negative flips: " + ", ".join(failure.negative_flip_ids)
        lines.append(line)
    return lines


def suspect_line(report: ComparisonReport) -> str | None:
    """One terminal line about the suspect gold labels (None when the check did not run)."""
    from evalkit.report.suspects_markdown import suspect_summary

    return suspect_summary(report)
