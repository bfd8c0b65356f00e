"""Finding the calls of many outputs at once: each distinct output once, as columns.

What does not depend on gold is decided here, per distinct prediction (the
raw text and its structured calls, if any): which syntax found calls
(:func:`~evalkit.contract.tool_syntax.find_calls`), whether they parse, and
their canonical form. The rest of the verdict needs the row's gold (is a call
expected? which tools may it call?) and is decided after ids are aligned
(:mod:`evalkit.contract.tool_verdicts`).

Columns, one row per output (:data:`TOOL_PARSED_SCHEMA`): ``error`` (``missing``,
``empty``, ``unparsable_call`` or null), ``error_detail``, ``syntax`` (the
syntax that found calls, null for a text answer), ``n_calls``, ``names`` and
``arguments`` (per call, in the order written: the function and the canonical
JSON text of its arguments), ``calls`` (the canonical text of the list of calls,
sorted under ``calls: set``: equal texts are equal answers).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson

from evalkit.contract.tool_rules import same_numbers
from evalkit.contract.tool_syntax import find_calls

if TYPE_CHECKING:
    import polars as pl

MISSING = "missing"
EMPTY = "empty"
UNPARSABLE_CALL = "unparsable_call"


def tool_parsed_schema() -> dict[str, Any]:
    """The polars schema of parsed tool-call outputs."""
    import polars as pl

    return {
        "error": pl.String,
        "error_detail": pl.String,
        "syntax": pl.String,
        "n_calls": pl.UInt32,
        "names": pl.List(pl.String),
        "arguments": pl.List(pl.String),
        "calls": pl.String,
    }


_SORT = orjson.OPT_SORT_KEYS


def _parse_one(
    text: str | None, structured: str | None, syntax: str, ordered: bool
) -> tuple[Any, ...]:
    """``(error, detail, syntax, n, names, arguments, calls)`` of one output."""
    if text is None and structured is None:
        return MISSING, "no output for this id", None, 0, None, None, None
    calls: Any = None
    if structured:
        try:
            calls = orjson.loads(structured)
        except orjson.JSONDecodeError:
            problem = "the prediction's tool_calls are not valid JSON"
            return UNPARSABLE_CALL, problem, "structured", 0, None, None, None
    found = find_calls(text or "", calls, syntax)
    if found is None:
        if not (text or "").strip():
            return EMPTY, "the output is blank (no text and no call)", None, 0, None, None, None
        return None, None, None, 0, [], [], "[]"
    if found.problem is not None:
        return UNPARSABLE_CALL, found.problem, found.syntax, 0, None, None, None
    names = [name for name, _ in found.calls]
    arguments = [
        orjson.dumps(same_numbers(value), option=_SORT).decode() for _, value in found.calls
    ]
    texts = [
        '{"arguments":' + value + ',"name":' + orjson.dumps(name).decode() + "}"
        for name, value in zip(names, arguments, strict=True)
    ]
    if not ordered:
        texts.sort()
    key = "[" + ",".join(texts) + "]"
    return None, None, found.syntax, len(names), names, arguments, key


def parse_tool_outputs(
    outputs: pl.Series, structured: pl.Series | None, syntax: str, mode: str
) -> pl.DataFrame:
    """Parsed columns (:func:`tool_parsed_schema`) of ``outputs``, one row per output.

    ``structured`` holds each output's structured calls as JSON text (null:
    none). Repeated outputs are parsed once.
    """
    import polars as pl

    if structured is None:
        structured = pl.repeat(None, len(outputs), dtype=pl.String, eager=True)
    frame = pl.DataFrame(
        {"output": outputs.cast(pl.String), "structured": structured.cast(pl.String)}
    )
    keyed = frame.unique(maintain_order=True, keep="first").with_row_index("row")
    ordered = mode != "set"
    rows = [
        _parse_one(text, calls, syntax, ordered)
        for text, calls in zip(
            keyed["output"].to_list(), keyed["structured"].to_list(), strict=True
        )
    ]
    schema = tool_parsed_schema()
    columns: list[Any] = list(zip(*rows, strict=True)) if rows else [[] for _ in schema]
    parsed = pl.DataFrame(
        {
            name: pl.Series(name, list(values), dtype=dtype)
            for (name, dtype), values in zip(schema.items(), columns, strict=True)
        }
    )
    if keyed.height == frame.height:
        return parsed
    index = frame.join(
        keyed, on=["output", "structured"], how="left", nulls_equal=True, maintain_order="left"
    )["row"]
    return parsed[index]
