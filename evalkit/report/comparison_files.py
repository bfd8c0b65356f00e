"""The files ``evalkit compare`` and ``evalkit gate`` write, as renderers of their reports.

Passed to :func:`evalkit.compare` / :func:`evalkit.gate` as ``render``: the
library decides what may be written and writes atomically; the text of each
file is rendered here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evalkit.records._compare_files import (
    JUNIT_FILE,
    REPORT_FILE,
    REPORT_HTML_FILE,
    REPORT_MARKDOWN_FILE,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from evalkit.records._compare import CandidateReport, ComparisonReport


def _json(report: CandidateReport | ComparisonReport) -> str:
    from evalkit.report.json_report import render_json

    return render_json(report)


def _gate_junit(report: CandidateReport) -> str:
    from evalkit.report.junit import render_junit

    return render_junit([report])


def _gate_markdown(report: CandidateReport) -> str:
    from evalkit.report.markdown import render_candidate_markdown

    return render_candidate_markdown(report)


def _gate_html(report: CandidateReport) -> str:
    """The candidate's page, with the outputs of its flipped examples from both predictions."""
    from evalkit.comparison.outputs import flip_outputs
    from evalkit.report.html.candidate import render_candidate_html

    found = flip_outputs([report])[report.candidate.name]
    return render_candidate_html(report, found)


def _compare_markdown(report: ComparisonReport) -> str:
    from evalkit.report.markdown import render_comparison_markdown

    return render_comparison_markdown(report)


def _compare_html(report: ComparisonReport) -> str:
    from evalkit.comparison.outputs import flip_outputs
    from evalkit.report.html.compare import render_comparison_html

    return render_comparison_html(report, flip_outputs(report.candidates))


def _compare_junit(report: ComparisonReport) -> str:
    from evalkit.report.junit import render_junit

    return render_junit(report.candidates)


#: ``gate``'s outputs by parameter: ``junit``, ``markdown`` (also the CI step summary),
#: ``html`` and ``json``.
GATE_FILES: dict[str, Callable[[Any], str]] = {
    "junit": _gate_junit,
    "markdown": _gate_markdown,
    "html": _gate_html,
    "json": _json,
}

#: The files of ``compare --out DIR``, by name; ``report.json`` is also ``--json``'s.
COMPARE_FILES: dict[str, Callable[[Any], str]] = {
    REPORT_FILE: _json,
    REPORT_MARKDOWN_FILE: _compare_markdown,
    REPORT_HTML_FILE: _compare_html,
    JUNIT_FILE: _compare_junit,
}
