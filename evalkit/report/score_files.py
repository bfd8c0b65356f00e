"""The files ``evalkit score`` and ``evalkit rescore`` write beside ``summary.json``.

Passed to :func:`evalkit.score` / :func:`evalkit.rescore` as ``extra_files``:
the library writes them in the result folder, atomically with the rest, and
renders nothing itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from evalkit.records._summary import ScoreSummary


def score_report_files(summary: ScoreSummary) -> dict[str, bytes]:
    """``report.html``: the result's figures as charts, one self-contained page."""
    from evalkit.records._compare_files import REPORT_HTML_FILE
    from evalkit.report.html.score import render_score_html

    return {REPORT_HTML_FILE: render_score_html(summary).encode("utf-8")}
