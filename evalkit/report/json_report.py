"""``report.json``: the typed report, serialised as it is modelled."""

from __future__ import annotations

from evalkit.records._compare import CandidateReport, ComparisonReport
from evalkit.records._compare_files import report_json


def render_json(report: CandidateReport | ComparisonReport) -> str:
    """Indented JSON of the report; the same report always gives the same text."""
    return report_json(report)
