"""What a parsed output looks like as columns, and the output syntax both parsers share.

:class:`~evalkit.contract.parse.OutputParser` (one output at a time, the
semantics) and :mod:`evalkit.contract.batch` (many at once, the same verdicts
in bulk) both build these columns and look for JSON the same way. What they
share lives here, so that neither imports the other for it: ``parse`` uses
``batch`` for :func:`~evalkit.contract.parse.parse_frame`, and ``batch``
imports only this module.
"""

from __future__ import annotations

import re
from typing import Any

# Kinds of a predicted field value (column k<i> of parsed outputs).
ABSENT, NULL, STRING, NUMBER, BOOLEAN, ARRAY, OBJECT = range(7)
KINDS = ("absent", "null", "string", "number", "boolean", "array", "object")
_KIND_OF: dict[type, int] = {
    type(None): NULL,
    int: NUMBER,
    float: NUMBER,
    bool: BOOLEAN,
    list: ARRAY,
    dict: OBJECT,
}
# The value of a key that an object does not have (distinct from JSON null).
NOTHING = object()
# Characters that may begin a JSON text: only then is the whole output tried.
JSON_START = frozenset('{["-0123456789tfn')
# A fenced block: its body runs from the end of the opening to the next ``` (or the end).
FENCE = re.compile(r"```[ \t]*[A-Za-z0-9_+.-]*[ \t]*\r?\n?(.*?)(?:```|\Z)", re.DOTALL)


def value_cell(item: Any) -> tuple[int, str | None]:
    """``(kind, text)`` of one field value: a string as is, anything else as JSON text."""
    if type(item) is str:
        return STRING, item
    if item is NOTHING:
        return ABSENT, None
    if item is None:
        return NULL, "null"
    import orjson

    return _KIND_OF.get(type(item), OBJECT), orjson.dumps(
        item, option=orjson.OPT_SORT_KEYS
    ).decode()


def parsed_schema(n_fields: int) -> dict[str, Any]:
    """The polars schema of parsed outputs: error, error_detail, then k<i>, v<i> per field."""
    import polars as pl

    schema: dict[str, Any] = {"error": pl.String, "error_detail": pl.String}
    for index in range(n_fields):
        schema |= {f"k{index}": pl.UInt8, f"v{index}": pl.String}
    return schema
