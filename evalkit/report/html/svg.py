"""A small SVG writer: shapes and text with compact, deterministic coordinates.

evalkit's charts are rows of marks against a linear axis and a grid of
cells, a few hundred elements each. Writing them directly keeps the base
install able to write HTML (no plotting library), keeps every label a
``<text>`` element (searchable, selectable, read by screen readers, where
matplotlib turns text into paths unless told otherwise), and makes the bytes
depend on nothing but the numbers: coordinates are rounded to 0.1 px.
"""

from __future__ import annotations

import math
import unicodedata

from evalkit.report.html.page import Html, escape

CHAR_WIDTH = 6.8  # px per character of 12 px text, a little over the common sans fonts' mean
# Widths in em of the characters far from that mean (DejaVu Sans and the common
# system fonts): a CJK ideograph or an emoji takes a full em, a capital about
# three quarters, W and M or Ж and Ш an em; a combining accent none.
WIDE_LETTERS = frozenset("MWmw@%ЖШЩЮМФЫжшщюмфы")
BOLD = 1.1  # bold text is about a tenth wider


def num(value: float) -> str:
    """A coordinate rounded to 0.1 px, without a trailing ``.0``."""
    text = f"{round(value, 1):.1f}"
    text = text.removesuffix(".0")
    return "0" if text == "-0" else text


def _em(char: str) -> float:
    if unicodedata.combining(char) or unicodedata.category(char) in ("Mn", "Me", "Cf"):
        return 0.0
    if unicodedata.east_asian_width(char) in ("W", "F"):
        return 1.0
    if char in WIDE_LETTERS:
        return 1.0
    if unicodedata.category(char) == "Lu":
        return 0.75
    return CHAR_WIDTH / 12.0


def text_width(text: str, size: float = 12.0, *, bold: bool = False) -> float:
    """An estimate of the rendered width of ``text`` (no font metrics in a static page).

    Per character, so that a label of capitals, CJK or emoji gets the room it
    takes rather than being cut off at the picture's edge.
    """
    return sum(_em(char) for char in text) * size * (BOLD if bold else 1.0)


def shorten(text: str, max_chars: int) -> str:
    """``text`` cut to ``max_chars`` with an ellipsis (the full text goes in a tooltip)."""
    return text if len(text) <= max_chars else text[: max_chars - 1] + "…"


def fit(text: str, max_width: float, size: float = 12.0, *, bold: bool = False) -> str:
    """``text`` cut with an ellipsis so that its estimated width is at most ``max_width``."""
    if text_width(text, size, bold=bold) <= max_width:
        return text
    room = max_width - text_width("…", size, bold=bold)
    kept, width = [], 0.0
    for char in text:
        width += text_width(char, size, bold=bold)
        if width > room:
            break
        kept.append(char)
    return "".join(kept) + "…"


class Canvas:
    """An SVG picture being drawn; :meth:`html` closes it."""

    def __init__(self, width: float, height: float, label: str) -> None:
        self.width = width
        self.height = height
        self.label = label
        self.parts: list[str] = []

    def add(self, markup: str) -> None:
        """Append raw SVG markup (already escaped)."""
        self.parts.append(markup)

    def rect(self, x: float, y: float, width: float, height: float, **style: str) -> None:
        """A rectangle; ``style`` becomes attributes (``class_`` for class)."""
        self.add(
            f'<rect x="{num(x)}" y="{num(y)}" width="{num(width)}" height="{num(height)}"'
            f"{_attributes(style)}/>"
        )

    def line(self, x1: float, y1: float, x2: float, y2: float, **style: str) -> None:
        """A straight line."""
        self.add(
            f'<line x1="{num(x1)}" y1="{num(y1)}" x2="{num(x2)}" y2="{num(y2)}"'
            f"{_attributes(style)}/>"
        )

    def mark(
        self, x: float, y: float, radius: float, *, rare: bool, tooltip: str | None, **style: str
    ) -> None:
        """A point estimate: a circle, or a diamond for a rare class (shape, not colour)."""
        if rare:
            r = radius * 1.3
            points = f"{num(x)},{num(y - r)} {num(x + r)},{num(y)} "
            points += f"{num(x)},{num(y + r)} {num(x - r)},{num(y)}"
            tag, geometry = "polygon", f'points="{points}"'
        else:
            tag, geometry = "circle", f'cx="{num(x)}" cy="{num(y)}" r="{num(radius)}"'
        end = "/>" if tooltip is None else f"><title>{escape(tooltip)}</title></{tag}>"
        self.add(f"<{tag} {geometry}{_attributes(style)}{end}")

    def text(
        self,
        x: float,
        y: float,
        content: str,
        *,
        anchor: str = "start",
        tooltip: str | None = None,
        suffix: str | None = None,
        **style: str,
    ) -> None:
        """Text at (x, y) (its baseline); ``anchor`` is start, middle or end.

        ``suffix`` follows in a smaller, coloured ``tspan`` (e.g. the word
        ``rare``); ``tooltip`` shows on hover (e.g. a label that was shortened).
        """
        anchor_attr = "" if anchor == "start" else f' text-anchor="{anchor}"'
        inner = escape(content)
        if tooltip is not None and tooltip != content:
            inner = Html(f"<title>{escape(tooltip)}</title>{inner}")
        if suffix:
            inner = Html(f'{inner}<tspan class="tag"> {escape(suffix)}</tspan>')
        self.add(f'<text x="{num(x)}" y="{num(y)}"{anchor_attr}{_attributes(style)}>{inner}</text>')

    def html(self) -> Html:
        """The finished ``<svg>`` element: sized in px, scaled down on narrow screens."""
        width, height = num(self.width), num(self.height)
        head = (
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(self.label)}">'
        )
        return Html(head + f"<title>{escape(self.label)}</title>" + "".join(self.parts) + "</svg>")


def _attributes(style: dict[str, str]) -> str:
    return "".join(
        f' {key.rstrip("_").replace("_", "-")}="{escape(value)}"' for key, value in style.items()
    )


def nice_ticks(low: float, high: float, max_ticks: int = 9) -> list[float]:
    """Round tick values covering [low, high]: steps of 1, 2, 2.5 or 5 times a power of ten."""
    span = max(high - low, 1e-9)
    for power in range(math.floor(math.log10(span)) - 1, math.floor(math.log10(span)) + 2):
        for factor in (1.0, 2.0, 2.5, 5.0):
            step = factor * 10.0**power
            first, last = math.floor(low / step + 1e-9), math.ceil(high / step - 1e-9)
            if last - first + 1 <= max_ticks:
                return [round(i * step, 10) for i in range(first, last + 1)]
    return [low, high]


class Scale:
    """A linear map from data values onto pixels."""

    def __init__(self, low: float, high: float, start: float, end: float) -> None:
        self.low, self.high, self.start, self.end = low, high, start, end

    def __call__(self, value: float) -> float:
        """The pixel position of ``value`` (clamped to the axis)."""
        if self.high <= self.low:  # one value only (every delta 0): it sits mid-axis
            return (self.start + self.end) / 2
        value = min(max(value, self.low), self.high)
        return self.start + (value - self.low) / (self.high - self.low) * (self.end - self.start)


def tick_label(value: float, signed: bool) -> str:
    """A tick's text: ``+0.2``, ``0``, ``−0.25`` (a real minus sign)."""
    text = f"{value:+.2f}" if signed else f"{value:.2f}"
    text = text.rstrip("0").rstrip(".") if "." in text else text
    if text in ("+0", "-0"):
        return "0"
    return text.replace("-", "−")
