"""Suspect gold labels for people: the terminal line and the Markdown section of ``compare``."""

from __future__ import annotations

from collections.abc import Sequence

from evalkit.records._compare import ComparisonReport
from evalkit.records._suspects import SuspectLabel, SuspectLabelCheck

TERMINAL_EXAMPLES = 5
MAX_ROWS = 100
HINT = "a hint to read those labels again, never a verdict"


def _who(check: SuspectLabelCheck) -> str:
    count = len(check.results)
    if check.min_agree == count:
        return f"all {count} results" if count > 2 else "both results"
    return f"at least {check.min_agree} of the {count} results (any other's output invalid)"


def _expected(check: SuspectLabelCheck) -> str:
    if check.expected_by_chance is None:
        return ""
    return f"; {check.expected_by_chance:.2g} expected by chance"


def probability_text(suspect: SuspectLabel) -> str:
    """The agreed answer's probability, or a dash when no generate run gave one."""
    values = sorted(suspect.probabilities.values())
    if not values:
        return "–"
    if len(values) == 1 or values[0] == values[-1]:
        return f"{values[0]:.2f}"
    return f"{values[0]:.2f}–{values[-1]:.2f}"


def count_sentence(check: SuspectLabelCheck, *, define: bool = False) -> str:
    """How many suspects, of how many items (what a suspect is, with ``define``), and how
    many chance would give."""
    expected = ""
    if check.expected_by_chance is not None:
        expected = (
            f" Independent errors would agree this way on about "
            f"{check.expected_by_chance:.2g} items by chance."
        )
    what = ""
    if define:
        what = (
            f": their gold `{check.field}` {_who(check)} contradict with the same "
            "format-valid answer"
        )
    return f"{check.suspects} of {check.checked:,} items{what}.{expected}"


def capitalized(text: str) -> str:
    """``text`` with its first letter in upper case (for a note written lower case)."""
    return text[:1].upper() + text[1:]


def suspect_summary(report: ComparisonReport) -> str | None:
    """One line: how many suspects, of how many items, the first few (None when not checked)."""
    check = report.suspect_label_check
    if check is None:
        return None
    if check.field is None or (check.note and not check.checked):
        return f"Suspect gold labels: not checked ({check.note})"
    if not check.suspects:
        return (
            f"Suspect gold labels: none of {check.checked:,} items has a gold {check.field} "
            f"that {_who(check)} contradict with the same answer{_expected(check)}"
        )
    shown = ", ".join(
        f"{s.id} {s.gold} -> {s.agreed}" for s in report.suspect_labels[:TERMINAL_EXAMPLES]
    )
    more = " …" if check.suspects > TERMINAL_EXAMPLES else ""
    expected = ""
    if check.expected_by_chance is not None:
        expected = f" ({check.expected_by_chance:.2g} expected by chance)"
    return (
        f"Suspect gold labels: {check.suspects} of {check.checked:,} items, where "
        f"{_who(check)} give the same {check.field} and not the gold one{expected}: "
        f"{shown}{more} ({HINT}; listed in report.md)"
    )


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def suspect_section(report: ComparisonReport, level: str = "##") -> list[str]:
    """The Markdown section of ``report.md`` (empty when the check did not run)."""
    check = report.suspect_label_check
    if check is None:
        return []
    lines = [f"{level} Suspect gold labels", ""]
    if check.field is None or (check.note and not check.checked):
        return [*lines, f"Not checked: {check.note}.", ""]
    lines.append(
        f"Items whose gold `{check.field}` {_who(check)} ({', '.join(check.results)}) "
        f"contradict with the same format-valid answer, most agreeing first: {HINT}. Read "
        "each input; a label that is wrong is fixed in a new gold file, which is a new "
        "test set (docs/compare.md)."
    )
    lines.append("")
    lines.append(count_sentence(check))
    if not check.suspects:
        return [*lines, ""]
    per_class = ", ".join(f"{label} {n}" for label, n in check.by_class.items())
    changes = ", ".join(f"{c.gold} → {c.agreed} {c.count}" for c in check.changes)
    lines += ["", f"Per gold class: {per_class}. Per change: {changes}.", ""]
    lines += _rows(report.suspect_labels[:MAX_ROWS], check)
    if check.suspects > MAX_ROWS:
        lines += ["", f"({check.suspects - MAX_ROWS} more in report.json.)"]
    lines += ["", f"_{capitalized(check.probability_note)}._"]
    if check.note:
        lines += ["", f"_Note: {check.note}._"]
    return [*lines, ""]


def _rows(suspects: Sequence[SuspectLabel], check: SuspectLabelCheck) -> list[str]:
    column = f"input ({check.text_column})" if check.text_column else "input"
    header = ["id", "gold", "agreed", "results agreeing", "p(agreed)", column]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for s in suspects:
        row = [f"`{s.id}`", s.gold, s.agreed, s.n_agree, probability_text(s), s.text or "–"]
        lines.append("| " + " | ".join(_cell(value) for value in row) + " |")
    return lines
