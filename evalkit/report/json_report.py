"""``report.json``: the typed report, serialised as it is modelled."""

from __future__ import annotations

from evalkit.records._compare import CandidateReport, ComparisonReport


def render_json(report: CandidateReport | ComparisonReport) -> str:
    """Indented JSON of the report; the same report always gives the same text."""
    return report.model_dump_json(indent=2) + "\n"
