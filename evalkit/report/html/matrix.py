"""Confusion matrices as pictures: counts per gold and predicted class, and their change.

The cells come from the compute layer (``summary.json``'s ``confusion``, a
comparison's ``confusion``); here they are only placed and shaded. A count
is shaded by its share of the gold class (so a rare class's confusions show
as clearly as a large class's); a change is blue where the candidate
improved (more on the diagonal, fewer off it) and orange where it got worse,
with the signed number written in the cell.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from evalkit.report.html.charts import MatrixCell, Row, matrix_chart
from evalkit.report.html.page import Html, Section, figure, join, paragraph

if TYPE_CHECKING:  # types only: the score report need not build the comparison models
    from evalkit.records._compare import ConfusionComparison
    from evalkit.records._summary import ConfusionMatrix

NO_CLASS = "(no valid output)"


def _axes(
    gold: Sequence[str], labels: Sequence[str], rare: Mapping[str, bool]
) -> tuple[list[Row], list[str], dict[str, int], dict[str | None, int]]:
    rows_order = sorted(set(gold))
    rows = [Row(label, rare=rare.get(label, False)) for label in rows_order]
    columns = [*labels, NO_CLASS]
    row_index = {label: i for i, label in enumerate(rows_order)}
    column_index: dict[str | None, int] = {label: i for i, label in enumerate(labels)}
    column_index[None] = len(labels)
    return rows, columns, row_index, column_index


def _share_level(count: int, total: int) -> int:
    return 1 + min(4, int(5 * count / total)) if total else 1


def count_matrix(
    labels: Sequence[str],
    cells: Sequence[tuple[str, str | None, int]],
    rare: Mapping[str, bool],
    label: str,
) -> Html:
    """The matrix of (gold, predicted, count) cells, each shaded by its share of the gold row."""
    rows, columns, row_index, column_index = _axes([g for g, _, _ in cells], labels, rare)
    totals: dict[str, int] = {}
    for gold, _, count in cells:
        totals[gold] = totals.get(gold, 0) + count
    drawn = [
        MatrixCell(
            row_index[gold],
            column_index[predicted],
            str(count),
            "count",
            _share_level(count, totals[gold]),
            f"gold {gold} → predicted {predicted or 'none'}: {count} of {totals[gold]}",
        )
        for gold, predicted, count in cells
    ]
    return matrix_chart(rows, columns, drawn, label)


def change_matrix(confusion: ConfusionComparison, rare: Mapping[str, bool], label: str) -> Html:
    """Candidate minus baseline per cell; only the cells that changed are drawn."""
    changed = [cell for cell in confusion.cells if cell.change]
    gold = [cell.gold for cell in confusion.cells]
    rows, columns, row_index, column_index = _axes(gold, confusion.labels, rare)
    largest = max((abs(cell.change) for cell in changed), default=1)
    drawn = []
    for cell in changed:
        improved = (cell.change > 0) == (cell.gold == cell.predicted)
        level = 1 + min(4, int(4 * abs(cell.change) / largest))
        drawn.append(
            MatrixCell(
                row_index[cell.gold],
                column_index[cell.predicted],
                f"{cell.change:+d}".replace("-", "−"),
                "good" if improved else "bad",
                level,
                f"gold {cell.gold} → predicted {cell.predicted or 'none'}: "
                f"{cell.baseline} → {cell.candidate}",
            )
        )
    return matrix_chart(rows, columns, drawn, label)


def confusion_section(
    confusion: ConfusionComparison, classes: Mapping[str, object], level: int
) -> Section:
    """The candidate's confusion matrix and its change from the baseline's."""
    rare = {label: bool(getattr(scope, "rare", False)) for label, scope in classes.items()}
    candidate = [(c.gold, c.predicted, c.candidate) for c in confusion.cells if c.candidate]
    counts = count_matrix(confusion.labels, candidate, rare, "Confusion matrix of the candidate")
    changes = change_matrix(confusion, rare, "Change of the confusion matrix from the baseline")
    parts = [
        figure(
            counts,
            "The candidate: rows are gold classes, columns the predicted class "
            f"(\u201c{NO_CLASS}\u201d: missing or invalid, so no class). Shade: share of the "
            "gold class.",
        ),
        figure(
            changes,
            "Candidate minus baseline, cells that changed: blue is better (more "
            "right on the diagonal, fewer confusions off it), orange is worse.",
        ),
    ]
    if not any(c.change for c in confusion.cells):
        parts[1] = paragraph("No cell changed from the baseline.", muted=True)
    return Section("Confusion matrix", join(parts), level=level)


def score_confusion_section(
    confusion: ConfusionMatrix, rare: Mapping[str, bool], level: int = 2
) -> Section:
    """The confusion matrix of one scored result."""
    cells = [(c.gold, c.predicted, c.count) for c in confusion.cells]
    chart = count_matrix(confusion.labels, cells, rare, "Confusion matrix")
    caption = (
        "Rows are gold classes, columns the predicted class of format-valid outputs "
        f"(\u201c{NO_CLASS}\u201d: missing or invalid). Shade: share of the gold class."
    )
    return Section("Confusion matrix", figure(chart, caption), level=level)
