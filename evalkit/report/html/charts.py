"""The charts of evalkit's reports, one row per class (or candidate), drawn as SVG.

Every chart takes values already computed (estimates, intervals, counts)
and only places them: nothing here computes a statistic. Meaning never
rests on colour alone: a drop is vermillion *and* left of the zero line, a
rare class has a diamond mark *and* the word ``rare``, a failing row has a
shaded band, a bold label *and* the ``✗ rule`` text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from evalkit.report.html.page import PALETTE, Html, escape
from evalkit.report.html.svg import (
    Canvas,
    Scale,
    fit,
    nice_ticks,
    num,
    shorten,
    text_width,
    tick_label,
)

ROW = 22.0
MAX_LABEL_CHARS = 40
MAX_LABEL_MARGIN = 300.0  # px left of the plot for the row labels, at most
RARE_TAG_WIDTH = text_width(" rare", 10.0, bold=True)  # the 10 px tag after a rare class
MAX_TOOLTIP_CELLS = 400
GAIN, DROP, BASE = PALETTE["blue"], PALETTE["vermillion"], PALETTE["grey"]


@dataclass(frozen=True)
class Row:
    """A row of a chart: its label, and whether it is a rare class."""

    label: str
    rare: bool = False


@dataclass(frozen=True)
class Estimate:
    """One value with its interval; ``failed`` names the rules it fails (highlighted)."""

    value: float | None
    interval: tuple[float, float] | None = None
    failed: str | None = None
    note: str = ""


@dataclass(frozen=True)
class IntervalPanel:
    """A column of estimates, one per row, against a shared signed axis."""

    title: str
    estimates: Sequence[Estimate]


@dataclass(frozen=True)
class ValuePanel:
    """A column of rates in [0, 1]; with ``reference``, drawn from the reference to the value."""

    title: str
    values: Sequence[float | None]
    reference: Sequence[float | None] | None = None


@dataclass(frozen=True)
class MatrixCell:
    """One filled cell: where, its text, and its shade (``tone`` and ``level`` 1–5)."""

    row: int
    column: int
    text: str
    tone: Literal["count", "good", "bad"]
    level: int
    tooltip: str


@dataclass
class _Layout:
    rows: Sequence[Row]
    label_width: float = field(init=False)
    top: float = 44.0

    def __post_init__(self) -> None:
        widest = max(
            (text_width(row_label(r), bold=True) + RARE_TAG_WIDTH * r.rare for r in self.rows),
            default=4 * 6.8,
        )
        self.label_width = float(round(min(widest + 14, MAX_LABEL_MARGIN)))

    def y(self, index: int) -> float:
        return self.top + index * ROW + ROW / 2

    @property
    def height(self) -> float:
        return self.top + len(self.rows) * ROW + 8


def row_label(row: Row) -> str:
    """A row's label as drawn: cut to what fits the margin (as bold text, the widest case)."""
    room = MAX_LABEL_MARGIN - 14 - RARE_TAG_WIDTH * row.rare
    return fit(shorten(row.label, MAX_LABEL_CHARS), room, bold=True)


def _labels(canvas: Canvas, layout: _Layout, bold: Sequence[bool]) -> None:
    for index, row in enumerate(layout.rows):
        shown = row_label(row)
        style = {"class_": "bold"} if bold[index] else {}
        canvas.text(
            layout.label_width - 8,
            layout.y(index) + 4,
            shown,
            anchor="end",
            tooltip=row.label,
            suffix="rare" if row.rare else None,
            **style,
        )


def _axis(
    canvas: Canvas, scale: Scale, ticks: Sequence[float], layout: _Layout, signed: bool
) -> None:
    bottom = layout.height - 8
    for tick in ticks:
        x = scale(tick)
        canvas.line(x, layout.top - 4, x, bottom, class_="zero" if tick == 0 and signed else "grid")
        canvas.text(
            x, layout.top - 8, tick_label(tick, signed), anchor="middle", class_="small muted"
        )


def _domain(panels: Sequence[IntervalPanel], limits: tuple[float, float]) -> list[float]:
    values = [0.0]
    for panel in panels:
        for estimate in panel.estimates:
            if estimate.value is not None:
                values.append(estimate.value)
            if estimate.interval is not None:
                values.extend(estimate.interval)
    low, high = min(values), max(values)
    pad = max(high - low, 0.1) * 0.04
    low = max(low - pad, limits[0]) if low < 0 else low
    high = min(high + pad, limits[1]) if high > 0 else high
    return nice_ticks(low, high)


def interval_chart(
    rows: Sequence[Row],
    panels: Sequence[IntervalPanel],
    label: str,
    limits: tuple[float, float] = (-1.0, 1.0),
) -> Html:
    """Point estimates with their intervals on a signed axis (zero marked), one row per class.

    With one panel, each row's ``note`` is written to the right (the numbers
    and the failed rule); several panels share the axis, side by side (one
    per candidate). The axis covers the data and zero, never past ``limits``
    (a change of accuracy lies in [-1, 1]).
    """
    layout = _Layout(rows)
    single = len(panels) == 1
    panel_width = 440.0 if single else max(170.0, min(300.0, 880.0 / len(panels)))
    notes = [e.note + (f"  ✗ {e.failed}" if e.failed else "") for e in panels[0].estimates]
    note_width = max((text_width(n) for n in notes), default=0) + 16 if single else 0
    gap = 18.0
    width = layout.label_width + len(panels) * (panel_width + gap) + note_width
    canvas = Canvas(width, layout.height, label)
    ticks = _domain(panels, limits)
    failed_rows = [any(p.estimates[i].failed for p in panels) for i in range(len(rows))]
    for index, failed in enumerate(failed_rows):
        if failed:
            canvas.rect(0, layout.y(index) - ROW / 2, width, ROW, class_="band-fail")
    _labels(canvas, layout, failed_rows)
    for number, panel in enumerate(panels):
        start = layout.label_width + number * (panel_width + gap)
        scale = Scale(ticks[0], ticks[-1], start + 6, start + panel_width - 6)
        if not single:
            canvas.text(
                start + panel_width / 2,
                14,
                shorten(panel.title, 40),
                anchor="middle",
                tooltip=panel.title,
                class_="bold",
            )
        _axis(canvas, scale, ticks, layout, signed=True)
        for index, estimate in enumerate(panel.estimates):
            if estimate.value is None:
                continue
            y, colour = layout.y(index), DROP if estimate.value < 0 else GAIN
            if estimate.interval is not None:
                low, high = scale(estimate.interval[0]), scale(estimate.interval[1])
                canvas.line(low, y, high, y, stroke=colour, stroke_width="2.5")
                for x in (low, high):
                    canvas.line(x, y - 4, x, y + 4, stroke=colour, stroke_width="1.5")
            tooltip = f"{rows[index].label}: {estimate.note or tick_label(estimate.value, True)}"
            canvas.mark(
                scale(estimate.value),
                y,
                4.5,
                rare=rows[index].rare,
                tooltip=tooltip,
                fill=colour,
                stroke="#fff",
                stroke_width="1",
            )
        if single:
            for index, note in enumerate(notes):
                style = {"class_": "bold"} if panel.estimates[index].failed else {}
                canvas.text(start + panel_width + 8, layout.y(index) + 4, note, **style)
    return canvas.html()


def value_chart(rows: Sequence[Row], panels: Sequence[ValuePanel], label: str) -> Html:
    """Rates on [0, 1], one row per class: bars, or reference → value (baseline → candidate).

    A reference is a hollow grey circle, the value a filled mark joined to it
    by a line: blue when the value is not lower, vermillion when it is.
    """
    layout = _Layout(rows)
    panel_width, gap = 300.0, 26.0
    width = layout.label_width + len(panels) * (panel_width + gap)
    canvas = Canvas(width, layout.height, label)
    _labels(canvas, layout, [False] * len(rows))
    ticks = [0.0, 0.25, 0.5, 0.75, 1.0]
    for number, panel in enumerate(panels):
        start = layout.label_width + number * (panel_width + gap)
        scale = Scale(0.0, 1.0, start + 6, start + panel_width - 6)
        canvas.text(start + panel_width / 2, 14, panel.title, anchor="middle", class_="bold")
        _axis(canvas, scale, ticks, layout, signed=False)
        for index, value in enumerate(panel.values):
            y, rare = layout.y(index), rows[index].rare
            reference = panel.reference[index] if panel.reference is not None else None
            if value is None:
                continue
            if panel.reference is None:
                canvas.rect(scale(0), y - 6, scale(value) - scale(0), 12, fill=PALETTE["sky"])
                canvas.text(scale(value) + 4, y + 4, f"{value:.3f}", class_="small")
                continue
            colour = DROP if reference is not None and value < reference - 1e-12 else GAIN
            text = f"{rows[index].label}: {_rate(reference)} → {value:.3f}"
            if reference is not None:
                canvas.line(scale(reference), y, scale(value), y, stroke=colour, stroke_width="2")
                canvas.add(
                    f'<circle cx="{num(scale(reference))}" cy="{num(y)}" r="4" '
                    f'fill="#fff" stroke="{BASE}" stroke-width="1.5"/>'
                )
            canvas.mark(scale(value), y, 4.5, rare=rare, tooltip=text, fill=colour)
    return canvas.html()


def _rate(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def count_chart(
    rows: Sequence[Row], series: Sequence[tuple[str, Sequence[int], str]], label: str
) -> Html:
    """Grouped horizontal bars of counts (e.g. errors per category, baseline and candidate)."""
    layout = _Layout(rows)
    layout.top = 24.0 + 16 * len(series)
    bar = (ROW - 6) / max(len(series), 1)
    panel_width = 420.0
    top_count = float(max((max(values, default=0) for _, values, _ in series), default=0) or 1)
    scale = Scale(0, top_count, layout.label_width + 4, layout.label_width + panel_width)
    canvas = Canvas(layout.label_width + panel_width + 60, layout.height, label)
    _labels(canvas, layout, [False] * len(rows))
    for number, (name, _, colour) in enumerate(series):  # the legend
        legend_y = 12.0 + 16 * number
        canvas.rect(layout.label_width + 4, legend_y - 9, 12, 10, fill=colour)
        canvas.text(layout.label_width + 22, legend_y, name, class_="small")
    for index in range(len(rows)):
        for number, (_, values, colour) in enumerate(series):
            y = layout.y(index) - (ROW - 6) / 2 + number * bar
            canvas.rect(scale(0), y, max(scale(values[index]) - scale(0), 1), bar - 1, fill=colour)
            canvas.text(scale(values[index]) + 4, y + bar - 2, str(values[index]), class_="small")
    return canvas.html()


_SHADES = {
    "count": ["#eaf3fa", "#c6dff0", "#92c2e3", "#4f9bd0", "#0d6aa8"],
    "good": ["#eaf3fa", "#c6dff0", "#92c2e3", "#4f9bd0", "#0d6aa8"],
    "bad": ["#fdf0e0", "#f9d9b0", "#f3b46b", "#e08a2c", "#b35806"],
}


def matrix_chart(
    rows: Sequence[Row],
    columns: Sequence[str],
    cells: Sequence[MatrixCell],
    label: str,
    corner: str = "gold ↓ / predicted →",
) -> Html:
    """A grid of counts (a confusion matrix); only filled cells are drawn, so it stays small."""
    size = 28.0 if len(columns) <= 15 else 22.0 if len(columns) <= 30 else 18.0
    font = {28.0: "11", 22.0: "10", 18.0: "9"}[size]
    longest = max((text_width(shorten(c, 24)) for c in columns), default=4 * 6.8)
    layout = _Layout(rows)
    layout.top = float(round(min(longest * 0.72 + 22, 190)))
    left = layout.label_width
    width = left + len(columns) * size + layout.top
    height = layout.top + len(rows) * size + 8
    canvas = Canvas(width, height, label)
    canvas.text(4, 14, corner, class_="small muted")
    for index, row in enumerate(rows):
        y = layout.top + index * size + size / 2 + 4
        canvas.text(
            left - 8,
            y,
            row_label(row),
            anchor="end",
            tooltip=row.label,
            suffix="rare" if row.rare else None,
        )
    for index, column in enumerate(columns):
        x, y = left + index * size + size / 2 + 3, layout.top - 6
        canvas.add(
            f'<text x="{num(x)}" y="{num(y)}" transform="rotate(-45 {num(x)} {num(y)})" '
            f'class="small">{escape(shorten(column, 24))}</text>'
        )
    canvas.rect(
        left, layout.top, len(columns) * size, len(rows) * size, fill="none", stroke="#d1d9e0"
    )
    # One path per shade and one group of labels: a 50-class matrix has
    # thousands of cells, and per-cell elements with attributes would be
    # most of the page. Tooltips only where there are few cells.
    shapes: dict[str, list[str]] = {}
    labels: dict[bool, list[str]] = {False: [], True: []}
    with_tooltips = len(cells) <= MAX_TOOLTIP_CELLS
    for cell in cells:
        x, y = left + cell.column * size, layout.top + cell.row * size
        fill = _SHADES[cell.tone][min(max(cell.level, 1), 5) - 1]
        shapes.setdefault(fill, []).append(
            f"M{num(x)} {num(y)}h{num(size)}v{num(size)}h-{num(size)}z"
        )
        tip = f"<title>{escape(cell.tooltip)}</title>" if with_tooltips else ""
        labels[cell.level >= 4].append(
            f'<text x="{num(x + size / 2)}" y="{num(y + size / 2 + 4)}">{tip}'
            f"{escape(cell.text)}</text>"
        )
    for fill in sorted(shapes):
        canvas.add(f'<path fill="{fill}" d="{"".join(shapes[fill])}"/>')
    for dark, texts in labels.items():
        if texts:
            style = ' class="on-dark"' if dark else ""
            canvas.add(f'<g text-anchor="middle" font-size="{font}"{style}>{"".join(texts)}</g>')
    return canvas.html()
