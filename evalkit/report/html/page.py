"""The page shell every evalkit HTML report shares: CSS, header, sections, tables.

One self-contained file: the CSS is inline, charts are inline SVG, there is
no script, and a Content-Security-Policy forbids loading anything at all, so
the page reads the same offline, as a CI artifact or attached to a ticket,
and cannot call home. The same input gives the same bytes (no dates, no
random ids).

Text from data (class names, ids, model outputs) is escaped: a model output
holding ``<script>`` shows as text. Markup that is already safe is an
:class:`Html` value; every helper escapes anything else.

A report is built as::

    from evalkit.report.html.page import Section, page, table

    html = page(
        "evalkit tokens: train.jsonl",
        [Section("Checks", table(["check", "status"], [["double_bos", "pass"]]))],
        lead=verdict_box("pass", "No check fails"),
    )
"""

from __future__ import annotations

import html as _html
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

Tone = Literal["pass", "fail", "rare", "note", "warn"]

# Okabe & Ito's palette, distinguishable with every common colour-vision
# deficiency; a meaning is never carried by colour alone (a symbol or a word
# goes with it).
PALETTE = {
    "blue": "#0072B2",
    "sky": "#56B4E9",
    "orange": "#E69F00",
    "vermillion": "#D55E00",
    "green": "#009E73",
    "purple": "#CC79A7",
    "yellow": "#F0E442",
    "grey": "#6B7280",
    "ink": "#1F2328",
}

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"

CSS = """
:root{--ink:#1f2328;--muted:#59636e;--line:#d1d9e0;--soft:#f6f8fa;--blue:#0072B2;
--sky:#56B4E9;--orange:#E69F00;--vermillion:#D55E00;--fail-bg:#fbe9df;--pass-bg:#e3f0f8;
--rare-bg:#f3e6ee}
*{box-sizing:border-box}
body{margin:0;color:var(--ink);background:#fff;font:14px/1.45 system-ui,-apple-system,
"Segoe UI",Roboto,"Helvetica Neue","DejaVu Sans",Arial,sans-serif}
header,main,footer,nav{max-width:1180px;margin:0 auto;padding:0 24px}
header{padding-top:20px}
h1{font-size:22px;margin:0 0 4px}
h2{font-size:18px;margin:28px 0 8px;padding-top:8px;border-top:1px solid var(--line)}
h3{font-size:15px;margin:18px 0 6px}
p{margin:6px 0}
.subtitle,.muted,figcaption{color:var(--muted)}
code,pre,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,"DejaVu Sans Mono",
monospace;font-size:12.5px}
pre{white-space:pre-wrap;word-break:break-word;margin:0;max-height:14em;overflow:auto;
background:var(--soft);border:1px solid var(--line);border-radius:4px;padding:4px 6px}
nav{margin:10px auto 0;font-size:13px}
nav a{margin-right:14px;color:var(--blue);text-decoration:none}
.verdict{margin:14px 0 6px;padding:12px 16px;border-radius:6px;border-left:6px solid}
.verdict.pass{background:var(--pass-bg);border-color:var(--blue)}
.verdict.fail{background:var(--fail-bg);border-color:var(--vermillion)}
.verdict.note{background:var(--soft);border-color:var(--muted)}
.verdict strong.word{font-size:18px;margin-right:8px}
.verdict ul{margin:6px 0 0;padding-left:20px}
.badge{display:inline-block;padding:0 6px;border-radius:9px;font-size:12px;
font-weight:600;white-space:nowrap;border:1px solid}
.badge.pass{color:#00507d;background:var(--pass-bg);border-color:var(--blue)}
.badge.fail{color:#8a3500;background:var(--fail-bg);border-color:var(--vermillion)}
.badge.rare{color:#7a2f5c;background:var(--rare-bg);border-color:#CC79A7}
.badge.note,.badge.warn{color:var(--muted);background:var(--soft);border-color:var(--line)}
.figures{display:flex;flex-wrap:wrap;gap:10px;margin:10px 0}
.figure{border:1px solid var(--line);border-radius:6px;padding:6px 12px;min-width:110px}
.figure .value{font-size:19px;font-weight:600;white-space:nowrap}
.figure .label{font-size:12px;color:var(--muted)}
table{border-collapse:collapse;margin:8px 0;font-size:13px}
th,td{border-bottom:1px solid var(--line);padding:4px 8px;text-align:left;vertical-align:top}
th{background:var(--soft);font-weight:600}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tr.fail td{background:var(--fail-bg)}
td:first-child{white-space:nowrap}
.scroll{overflow-x:auto;max-width:100%}
figure{margin:10px 0}
svg{max-width:100%;height:auto;font-family:inherit}
svg text{fill:var(--ink);font-size:12px}
svg .muted{fill:var(--muted)}
svg .small{font-size:10px}
svg .bold{font-weight:700}
svg .grid{stroke:var(--line);stroke-width:1}
svg .zero{stroke:#8c959f;stroke-width:1.2}
svg .band-fail{fill:var(--fail-bg)}
svg .tag{fill:#9b3f77;font-size:10px;font-weight:600}
svg .on-dark text{fill:#fff}
details{margin:4px 0}
summary{cursor:pointer;color:var(--blue)}
footer{margin-top:28px;padding-bottom:28px;font-size:12px;color:var(--muted)}
"""


class Html(str):
    """Markup that is already safe to insert: helpers pass it through unescaped."""

    __slots__ = ()


# Control characters (other than tab, newline, carriage return) shown as their
# Unicode "control pictures" (NUL -> U+2400 ␀, ESC -> U+241B ␛, DEL -> U+2421):
# a raw NUL or ESC from a model's output is an HTML parse error, is not allowed
# in the inline SVG's XML at all, and makes tools take the page for binary.
_CONTROL_PICTURES = {code: 0x2400 + code for code in range(0x20) if code not in (9, 10, 13)}
_CONTROL_PICTURES[0x7F] = 0x2421


def escape(value: object) -> Html:
    """``value`` as text: ``<``, ``>``, ``&`` and quotes escaped, control characters shown."""
    return Html(_html.escape(str(value).translate(_CONTROL_PICTURES), quote=True))


def render(value: object) -> Html:
    """Markup for ``value``: an :class:`Html` value as it is, anything else escaped."""
    return value if isinstance(value, Html) else escape(value)


def join(parts: Iterable[object], separator: str = "") -> Html:
    """Several values (markup or text) one after another."""
    return Html(separator.join(render(part) for part in parts))


def element(tag: str, *children: object, **attributes: object) -> Html:
    """``<tag attributes>children</tag>``; ``class_`` sets ``class``; None drops an attribute."""
    attrs = "".join(
        f' {name.rstrip("_").replace("_", "-")}="{escape(value)}"'
        for name, value in attributes.items()
        if value is not None
    )
    return Html(f"<{tag}{attrs}>{join(children)}</{tag}>")


def badge(text: str, tone: Tone) -> Html:
    """A small labelled pill: ``pass``, ``fail``, ``rare`` or a neutral ``note``."""
    return element("span", text, class_=f"badge {tone}")


def paragraph(*children: object, muted: bool = False) -> Html:
    """A paragraph (grey when ``muted``)."""
    return element("p", *children, class_="muted" if muted else None)


def figures(items: Sequence[tuple[str, object]]) -> Html:
    """A row of big numbers with their labels: the figures a reader looks for first."""
    cards = [
        element(
            "div",
            element("div", value, class_="value"),
            element("div", label, class_="label"),
            class_="figure",
        )
        for label, value in items
    ]
    return element("div", *cards, class_="figures")


def verdict_box(
    tone: Tone, headline: object, items: Sequence[object] = (), *, word: str | None = None
) -> Html:
    """The coloured box a page leads with: one bold word, a line, and a list (e.g. failures).

    ``word`` defaults to ``✓ PASS`` or ``✗ FAIL`` for those tones (none for others).
    """
    word = word or {"pass": "✓ PASS", "fail": "✗ FAIL"}.get(tone)
    parts: list[object] = [element("strong", word, class_="word")] if word else []
    parts.append(element("span", headline))
    if items:
        parts.append(element("ul", *(element("li", item) for item in items)))
    return element("div", *parts, class_=f"verdict {tone}")


def table(
    header: Sequence[str],
    rows: Sequence[Sequence[object]],
    *,
    numeric: Iterable[int] = (),
    row_tones: Sequence[Tone | None] | None = None,
) -> Html:
    """A table; columns listed in ``numeric`` are right-aligned; ``row_tones`` shades rows."""
    right = set(numeric)

    def cell(tag: str, index: int, value: object) -> Html:
        return element(tag, value, class_="num" if index in right else None)

    head = element("tr", *(cell("th", i, name) for i, name in enumerate(header)))
    body = [
        element(
            "tr",
            *(cell("td", i, value) for i, value in enumerate(row)),
            class_=row_tones[r] if row_tones is not None else None,
        )
        for r, row in enumerate(rows)
    ]
    return element(
        "div", element("table", element("thead", head), element("tbody", *body)), class_="scroll"
    )


def figure(chart: Html, caption: object = None) -> Html:
    """A chart with a caption under it; wide charts scroll sideways instead of shrinking."""
    parts: list[object] = [element("div", chart, class_="scroll")]
    if caption is not None:
        parts.append(element("figcaption", caption))
    return element("figure", *parts)


@dataclass(frozen=True)
class Section:
    """One titled part of a page; ``anchor`` is its id for the table of contents."""

    title: str
    body: Html
    anchor: str | None = None
    level: int = 2


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "section"


def page(
    title: str,
    sections: Sequence[Section],
    *,
    subtitle: object = None,
    lead: Html | None = None,
    footer: object = None,
    css: str = "",
) -> str:
    """The whole HTML document: header, ``lead`` (e.g. the verdict), contents, sections.

    Only sections of level 2 are listed in the contents. Anchors are made
    from the titles (numbered when two are alike), so they are stable.
    ``css`` is appended to the shared style (a page's own elements).
    """
    seen: dict[str, int] = {}
    rendered: list[Html] = []
    contents: list[Html] = []
    for section in sections:
        anchor = section.anchor or _slug(section.title)
        seen[anchor] = seen.get(anchor, 0) + 1
        if seen[anchor] > 1:
            anchor = f"{anchor}-{seen[anchor]}"
        heading = element(f"h{section.level}", section.title, id=anchor)
        rendered.append(element("section", heading, section.body))
        if section.level == 2:
            contents.append(element("a", section.title, href=f"#{anchor}"))
    head = join(
        [
            Html('<meta charset="utf-8">'),
            Html('<meta name="viewport" content="width=device-width, initial-scale=1">'),
            Html(f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'),
            element("title", title),
            Html(f"<style>{CSS.strip()}{css.strip()}</style>"),
        ],
        "\n",
    )
    top = [element("h1", title)]
    if subtitle is not None:
        top.append(element("p", subtitle, class_="subtitle"))
    if lead is not None:
        top.append(lead)
    body = [
        element("header", *top),
        element("nav", *contents) if len(contents) > 1 else Html(""),
        element("main", join(rendered, "\n")),
        element("footer", footer) if footer is not None else Html(""),
    ]
    return (
        '<!doctype html>\n<html lang="en">\n<head>\n'
        + head
        + "\n</head>\n<body>\n"
        + join(body, "\n")
        + "\n</body>\n</html>\n"
    )
