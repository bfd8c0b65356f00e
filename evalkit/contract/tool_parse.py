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
sorted under ``calls: set``: equal texts are equal answers) and ``function`` (their
class: the called function, ``none`` for a text answer).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from evalkit.contract.tool_names import (
    EMPTY,
    EMPTY_DETAIL,
    MISSING,
    MISSING_DETAIL,
    STRUCTURED,
    UNPARSABLE_CALL,
)
from evalkit.contract.tool_rules import call_text, canonical_arguments, function_class
from evalkit.contract.tool_syntax import find_calls

if TYPE_CHECKING:
    import polars as pl

    from evalkit.contract.model import Contract


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
        "function": pl.String,
    }


def _parse_one(text: str | None, structured: str | None, syntax: str) -> tuple[Any, ...]:
    """``(error, detail, syntax, calls)`` of one output: calls as (name, canonical call
    text, canonical arguments text), None for an error."""
    if text is None and structured is None:
        return MISSING, MISSING_DETAIL, None, None
    calls: Any = None
    if structured:
        try:
            calls = orjson.loads(structured)
        except orjson.JSONDecodeError:
            return (
                UNPARSABLE_CALL,
                "the prediction's tool_calls are not valid JSON",
                STRUCTURED,
                None,
            )
    found = find_calls(text or "", calls, syntax)
    if found is None:
        if not (text or "").strip():
            return EMPTY, EMPTY_DETAIL, None, None
        return None, None, None, ()
    if found.problem is not None:
        return UNPARSABLE_CALL, found.problem, found.syntax, None
    if found.texts is not None:
        return None, None, found.syntax, found.texts
    texts = []
    for name, values in found.calls:
        canonical = canonical_arguments(values)
        texts.append((name, call_text(name, canonical), canonical))
    return None, None, found.syntax, texts


def _list_column(name: str, flat: list[str], counts: list[int], valid: list[bool]) -> pl.Series:
    """A List(String) column from its flattened values and per-row lengths (null: not valid).

    Grouped by polars from one flat column: a list of Python lists costs
    polars ~10 µs a row to convert (and Arrow's list builder ~0.3 s to start
    in every process).
    """
    import numpy as np
    import polars as pl

    rows = np.repeat(np.arange(len(counts), dtype=np.uint32), counts)
    grouped = (
        pl.DataFrame({"row": rows, name: pl.Series(flat, dtype=pl.String)})
        .group_by("row", maintain_order=True)
        .agg(pl.col(name))
    )
    frame = pl.DataFrame(
        {
            "row": pl.Series(range(len(counts)), dtype=pl.UInt32),
            "valid": pl.Series(valid, dtype=pl.Boolean),
        }
    )
    empty = pl.lit([], dtype=pl.List(pl.String))
    return (
        frame.join(grouped, on="row", how="left", maintain_order="left")
        .select(pl.when(pl.col("valid")).then(pl.col(name).fill_null(empty)).alias(name))
        .to_series()
    )


@dataclass(frozen=True)
class ToolParserSpec:
    """Everything a worker process needs to find calls the way the contract says."""

    syntax: str
    mode: str

    @classmethod
    def from_contract(cls, contract: Contract) -> ToolParserSpec:
        """The rules of a (loaded) ``parse: tool_calls`` contract."""
        output = contract.output
        assert output.syntax is not None and output.calls is not None
        return cls(output.syntax, output.calls)

    def build(self) -> ToolCallParser:
        """The parser (one per process)."""
        return ToolCallParser(self)

    @property
    def parse_in_caller(self) -> bool:
        """No: while workers parse, the calling process reads and checks the gold calls
        (as much work again), and parsing beside it would only take its turns."""
        return False


class ToolCallParser:
    """Finds the calls of outputs, in chunks (in this process or a worker's)."""

    def __init__(self, spec: ToolParserSpec) -> None:
        self.spec = spec

    def parse_distinct(self, outputs: pl.Series) -> tuple[pl.DataFrame, pl.Series]:
        """Parsed columns, one row per distinct output, and each output's row in them.

        ``outputs`` is the raw text (String), or a Struct of it (``output``) and
        the structured calls' JSON text (``structured``).
        """
        import polars as pl

        if outputs.dtype == pl.String:
            frame = pl.DataFrame(
                {
                    "output": outputs,
                    "structured": pl.repeat(None, len(outputs), dtype=pl.String, eager=True),
                }
            )
        else:
            frame = outputs.struct.unnest()
        keyed = frame.unique(maintain_order=True, keep="first").with_row_index("row")
        parsed = _parse_keyed(keyed, self.spec.syntax, self.spec.mode)
        if keyed.height == frame.height:
            return parsed, pl.Series("row", range(frame.height), dtype=pl.UInt32)
        index = frame.join(
            keyed, on=["output", "structured"], how="left", nulls_equal=True, maintain_order="left"
        )["row"]
        return parsed, index


def _parse_keyed(keyed: pl.DataFrame, syntax: str, mode: str) -> pl.DataFrame:
    """Parsed columns of each distinct (``output``, ``structured``) row of ``keyed``, in order.

    Outputs without structured calls are first decided in bulk where they
    can be (:mod:`evalkit.contract.tool_fast_outputs`); the rest, one by one.
    """
    import polars as pl

    from evalkit.contract.tool_fast_outputs import decided_outputs

    plain = keyed["structured"].is_null()
    positions = pl.Series(range(keyed.height), dtype=pl.UInt32)
    decided = decided_outputs(
        keyed["output"].filter(plain), syntax, mode != "set", tool_parsed_schema()
    )
    decided_at = positions.filter(plain).gather(decided["at"])
    rest = positions.filter(~positions.is_in(decided_at.implode()))
    if not len(rest):
        return decided.drop("at")
    exact = _parse_rows(
        keyed["output"].gather(rest).to_list(),
        keyed["structured"].gather(rest).to_list(),
        syntax,
        mode,
    )
    if not decided.height:
        return exact
    placed = decided.drop("at").with_columns(decided_at.alias("at"))
    return pl.concat([placed, exact.with_columns(rest.alias("at"))]).sort("at").drop("at")


def _parse_rows(
    texts: list[str | None], given: list[str | None], syntax: str, mode: str
) -> pl.DataFrame:
    """Parsed columns of each (text, structured calls) pair, in order."""
    import polars as pl

    ordered = mode != "set"
    errors: list[str | None] = []
    details: list[str | None] = []
    syntaxes: list[str | None] = []
    keys: list[str | None] = []
    functions: list[str | None] = []
    classes: dict[tuple[str, ...], str] = {}  # the names of a list of calls -> its class
    counts: list[int] = []
    valid: list[bool] = []
    names: list[str] = []
    arguments: list[str] = []
    for text, structured in zip(texts, given, strict=True):
        error, detail, found, calls = _parse_one(text, structured, syntax)
        errors.append(error)
        details.append(detail)
        syntaxes.append(found)
        if calls is None:
            counts.append(0)
            keys.append(None)
            functions.append(None)
            valid.append(False)
            continue
        call_texts = []
        for name, text_of_call, canonical in calls:
            names.append(name)
            arguments.append(canonical)
            call_texts.append(text_of_call)
        if not ordered:
            call_texts.sort()
        counts.append(len(call_texts))
        keys.append("[" + ",".join(call_texts) + "]")
        called = tuple(call[0] for call in calls)
        function = classes.get(called)
        if function is None:
            function = classes[called] = function_class(called)
        functions.append(function)
        valid.append(True)
    return pl.DataFrame(
        [
            pl.Series("error", errors, dtype=pl.String),
            pl.Series("error_detail", details, dtype=pl.String),
            pl.Series("syntax", syntaxes, dtype=pl.String),
            pl.Series("n_calls", counts, dtype=pl.UInt32),
            _list_column("names", names, counts, valid),
            _list_column("arguments", arguments, counts, valid),
            pl.Series("calls", keys, dtype=pl.String),
            pl.Series("function", functions, dtype=pl.String),
        ]
    )


def tool_outputs(outputs: pl.Series, structured: pl.Series | None) -> pl.Series:
    """What the parser takes: the raw texts, or a Struct of them and the structured calls."""
    import polars as pl

    if structured is None:
        return outputs.cast(pl.String).alias("output")
    frame = pl.DataFrame(
        {"output": outputs.cast(pl.String), "structured": structured.cast(pl.String)}
    )
    return frame.select(pl.struct("output", "structured").alias("output")).to_series()


def parse_tool_outputs(
    outputs: pl.Series, structured: pl.Series | None, syntax: str, mode: str
) -> pl.DataFrame:
    """Parsed columns (:func:`tool_parsed_schema`) of ``outputs``, one row per output.

    ``structured`` holds each output's structured calls as JSON text (null:
    none). Repeated outputs are parsed once.
    """
    parser = ToolParserSpec(syntax, mode).build()
    parsed, rows = parser.parse_distinct(tool_outputs(outputs, structured))
    return parsed[rows]
