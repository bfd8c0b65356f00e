"""GitHub Actions workflow commands for a gate's failures.

Under GitHub Actions each failure becomes an ``::error`` line, which the
Actions UI shows as an annotation on the run and the pull request; the step
summary gets the Markdown report (the command line appends it).
"""

from __future__ import annotations

from evalkit.comparison.models import CandidateReport


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def error_annotations(report: CandidateReport) -> list[str]:
    """One ``::error`` workflow command per failed check."""
    lines = []
    for failure in report.failures:
        title = f"evalkit gate: {failure.rule} @ {failure.scope}"
        message = f"{report.candidate.name} vs {report.baseline.name}: {failure.reason}"
        if failure.negative_flip_ids:
            message += "; negative flips: " + ", ".join(failure.negative_flip_ids)
        lines.append(f"::error title={_escape_property(title)}::{_escape_data(message)}")
    return lines
