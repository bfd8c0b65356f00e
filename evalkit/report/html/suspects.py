"""The suspect gold labels of ``evalkit compare``'s ``report.html``: one table, with its hint."""

from __future__ import annotations

from evalkit.records._compare import ComparisonReport
from evalkit.report.html.page import Section, element, join, paragraph, table
from evalkit.report.suspects_markdown import (
    MAX_ROWS,
    capitalized,
    count_sentence,
    probability_text,
)


def suspect_labels_section(report: ComparisonReport) -> Section | None:
    """A section listing the suspects (None when the check did not run)."""
    check = report.suspect_label_check
    if check is None:
        return None
    if check.field is None or (check.note and not check.checked):
        return Section("Suspect gold labels", paragraph(f"Not checked: {check.note}."))
    lead = count_sentence(check, define=True).replace("`", "")
    parts: list[object] = [paragraph(lead)]
    if check.suspects:
        parts.append(
            paragraph(
                "A hint, never a verdict: models that share a shortcut agree on its mistakes "
                "too. Read each input; a wrong label is fixed in a new gold file, which is a "
                "new test set.",
                muted=True,
            )
        )
        column = f"input ({check.text_column})" if check.text_column else "input"
        header = ["id", "gold", "agreed", "results agreeing", "p(agreed)", column]
        rows = [
            [
                element("code", s.id),
                s.gold,
                element("strong", s.agreed),
                s.n_agree,
                probability_text(s),
                s.text or "–",
            ]
            for s in report.suspect_labels[:MAX_ROWS]
        ]
        per_class = ", ".join(f"{label} {n}" for label, n in check.by_class.items())
        parts += [
            table(header, rows, numeric=(3, 4)),
            paragraph(
                f"Per gold class: {per_class}. {capitalized(check.probability_note)}.", muted=True
            ),
        ]
    if check.note and check.checked:
        parts.append(paragraph(f"Note: {check.note}.", muted=True))
    return Section("Suspect gold labels", join(parts))
