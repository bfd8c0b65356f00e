"""GitHub Actions workflow commands: the gate's annotations, and lines that must not be commands.

Under GitHub Actions each failure becomes an ``::error`` line, which the
Actions UI shows as an annotation on the run and the pull request; the step
summary gets the Markdown report (the command line appends it).

The runner reads every line a step prints, on stdout and stderr, as a
possible command: a line that starts with ``::`` once leading whitespace is
trimmed (``::stop-commands::TOKEN`` silences every later command, the gate's
own ``::error`` lines included), and, in the older syntax, ``##[`` anywhere
in a line. Names, ids and outputs come from files a candidate's author
controls, so values inside a command are escaped by GitHub's rules
(``%``, CR and LF in data; also ``:`` and ``,`` in properties), and any
other printed line is made inert by :func:`inert_line`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from evalkit.records._compare import CandidateReport

COMMAND_START = "::"
LEGACY_COMMAND = "##["


def escape_data(text: str) -> str:
    """A command's data (after the second ``::``), escaped as the runner unescapes it."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A command's property value (``title=…``), escaped as the runner unescapes it."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def inert_line(line: str) -> str:
    """``line`` (one line, no line break) as the runner will never read it as a command.

    A line that would start a command gets its first ``:`` written ``%3A``
    and a legacy ``##[`` becomes ``#%23[``: GitHub's own escapes, visible in
    the log, and only on lines that would otherwise act.
    """
    stripped = line.lstrip()
    if stripped.startswith(COMMAND_START):
        start = len(line) - len(stripped)
        line = f"{line[:start]}%3A{line[start + 1 :]}"
    return line.replace(LEGACY_COMMAND, "#%23[")


def error_annotations(report: CandidateReport) -> list[str]:
    """One ``::error`` workflow command per failed check."""
    lines = []
    for failure in report.failures:
        title = f"evalkit gate: {failure.rule} @ {failure.scope}"
        message = f"{report.candidate.name} vs {report.baseline.name}: {failure.reason}"
        if failure.negative_flip_ids:
            message += "; negative flips: " + ", ".join(failure.negative_flip_ids)
        lines.append(f"::error title={escape_property(title)}::{escape_data(message)}")
    return lines
