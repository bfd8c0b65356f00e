"""Data shown in a Markdown report: text that never becomes HTML, code that stays code.

Names, ids, class labels, error details and model outputs come from files a
candidate's author controls. GitHub renders the report on a pull request and
in the step summary, and Markdown passes raw HTML through: a name such as
``<img src=…>`` would be markup, not a name. In running text what could
start markup is escaped;
a code span gets a backtick fence longer than any backtick run inside it, so
no value can close it early (inside a code span HTML is shown as written).
Both keep a value on one line, so it cannot start a heading or a table row.
"""

from __future__ import annotations

import re

_LINE_BREAKS = re.compile(r"[\r\n\u2028\u2029\x0b\x0c\x85]+")
_BACKTICKS = re.compile(r"`+")
# What starts raw HTML or an autolink in CommonMark (a letter, /, ! or ? after <), or a
# character reference (&name; &#123; &#x1F;).
_MARKUP_START = re.compile(r"<(?=[A-Za-z/!?])|&(?=[A-Za-z0-9#])")
_ENTITIES = {"<": "&lt;", "&": "&amp;"}


def _one_line(value: object) -> str:
    return _LINE_BREAKS.sub(" ", str(value))


def text(value: object) -> str:
    """``value`` as running Markdown text, shown as written and on one line.

    A ``<`` that could open a tag, a comment or an autolink becomes ``&lt;``,
    and a ``&`` that could start a character reference ``&amp;``; any other
    ``<`` or ``&`` (``p 0.03 < 0.05``) is already plain text and stays as it is.
    """
    return _MARKUP_START.sub(lambda found: _ENTITIES[found.group()[0]], _one_line(value))


def code(value: object) -> str:
    """``value`` as one inline code span, shown exactly as written (on one line)."""
    shown = _one_line(value)
    fence = "`" * (max((len(run) for run in _BACKTICKS.findall(shown)), default=0) + 1)
    # A span that starts or ends with a backtick needs a space between it and the fence.
    pad = " " if shown[:1] == "`" or shown[-1:] == "`" else ""
    return f"{fence}{pad}{shown}{pad}{fence}"
