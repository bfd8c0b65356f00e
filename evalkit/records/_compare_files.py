"""The files of a comparison folder (``compare --out``): their names and the report's writer.

``report.json`` is the :class:`~evalkit.records._compare.ComparisonReport`
as modelled; ``report.md``, ``report.html`` and ``junit.xml`` are renderings
of it (``evalkit.report``) written beside it. ``report.html`` is also the
name of the page ``score --out`` writes beside ``summary.json``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from evalkit.records._compare import CandidateReport, ComparisonReport

REPORT_FILE = "report.json"
"""The report's name in a comparison folder (its marker: a folder holding one is a comparison)."""
REPORT_MARKDOWN_FILE = "report.md"
"""The Markdown rendering's name in a comparison folder."""
REPORT_HTML_FILE = "report.html"
"""The HTML page's name, in a comparison folder and in a score result folder."""
JUNIT_FILE = "junit.xml"
"""The JUnit rendering's name in a comparison folder (one test case per candidate)."""


def report_json(report: CandidateReport | ComparisonReport) -> str:
    """The text of ``report.json``: indented, keys in model order, a final newline."""
    return report.model_dump_json(indent=2) + "\n"


def write_report(
    path: str | os.PathLike[str], report: ComparisonReport, *, force: bool = False
) -> None:
    """Write ``report.json`` (:func:`report_json`) atomically at ``path``."""
    from evalkit.records._files import write_file

    write_file(Path(path), report_json(report).encode("utf-8"), force=force)
