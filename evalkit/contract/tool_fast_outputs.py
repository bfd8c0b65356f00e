"""Outputs whose calls are found in bulk: text answers, blanks and strict ``<tool_call>`` blocks.

:func:`decided_outputs` gives the parsed columns
(:func:`~evalkit.contract.tool_parse.tool_parsed_schema`) of the outputs it can
decide exactly as :func:`~evalkit.contract.tool_syntax.find_calls` would, for
outputs without structured calls; the caller parses the rest in Python. It
decides:

* no output: ``missing``; an output of whitespace only (Python's, as
  ``str.strip`` removes it): ``empty``;
* a **text answer** under every syntax: an output without ``{``,
  ``[TOOL_CALLS]`` and ``<tool_call>`` (no text syntax finds a call there:
  ``mistral`` needs its marker or ``name{…}``, ``qwen`` its tag, ``llama3`` a
  ``{`` first, ``json`` a call object), or any output under ``syntax:
  structured``;
* **Qwen/Hermes blocks** (``qwen``, ``hermes``, and ``auto`` when the output
  has no ``[TOOL_CALLS]`` and starts, after JSON whitespace, with ``<``, so
  that ``mistral``'s ``name{…}`` form cannot match first): every
  ``<tool_call>`` is followed by a ``</tool_call>`` before the next
  ``<tool_call>``, so the blocks are the pieces between the tags (split at
  ``<tool_call>``, each cut at its first ``</tool_call>``), exactly the
  bodies :class:`~evalkit.contract.tool_syntax.Hermes` reads; and every body
  is a strict call object (:mod:`evalkit.contract.tool_fast`).

Everything else (a truncated block, a body that is not strict, JSON text,
another syntax's marker) is left to the exact parser.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evalkit.contract.batch import PYTHON_WHITESPACE
from evalkit.contract.tool_fast import call_objects, listed_calls
from evalkit.contract.tool_names import (
    AUTO,
    EMPTY,
    EMPTY_DETAIL,
    MISSING,
    MISSING_DETAIL,
    NO_CALL,
    STRUCTURED,
)
from evalkit.contract.tool_syntax import Hermes

if TYPE_CHECKING:
    import polars as pl

_OPEN, _CLOSE = Hermes._open, Hermes._close
_MISTRAL_MARKER = "[TOOL_CALLS]"
_HERMES_SYNTAXES = (AUTO, "qwen", "hermes")


def _hermes(frame: pl.DataFrame, syntax: str, ordered: bool) -> pl.DataFrame:
    """Parsed columns of the ``<tool_call>`` outputs decided in bulk (``at`` kept)."""
    import polars as pl

    text = pl.col("text")
    candidate = text.str.contains(_OPEN, literal=True)
    if syntax == AUTO:
        candidate &= ~text.str.contains(_MISTRAL_MARKER, literal=True)
        candidate &= text.str.contains(r"^[ \t\n\r]*<")
    blocks = (
        frame.filter(candidate.fill_null(False))
        .select("at", text.str.split(_OPEN).list.slice(1).alias("block"))
        .explode("block")
        .select("at", pl.col("block").str.splitn(_CLOSE, 2).alias("parts"))
        .unnest("parts")
    )
    if not blocks.height:
        return pl.DataFrame()
    calls = call_objects(blocks["field_0"])
    blocks = blocks.select("at", "field_1").hstack(calls)
    unclosed_or_loose = pl.col("field_1").is_null() | pl.col("name").is_null()
    undecided = blocks.filter(unclosed_or_loose)["at"].unique()
    kept = blocks.filter(~pl.col("at").is_in(undecided.implode())).select("at", "name", "arguments")
    return listed_calls(kept, ordered).with_columns(
        pl.lit(None, pl.String).alias("error"),
        pl.lit(None, pl.String).alias("error_detail"),
        pl.lit(Hermes.name).alias("syntax"),
    )


def decided_outputs(
    texts: pl.Series, syntax: str, ordered: bool, schema: dict[str, Any]
) -> pl.DataFrame:
    """Parsed columns (``schema``) of the outputs decided in bulk, with ``at`` (their
    position in ``texts``); the outputs have no structured calls (see the module docstring)."""
    import polars as pl

    frame = pl.DataFrame({"text": texts.cast(pl.String)}).with_row_index("at")
    text = pl.col("text")
    blank = text.str.strip_chars(PYTHON_WHITESPACE) == ""
    plain = ~(
        text.str.contains("{", literal=True)
        | text.str.contains(_MISTRAL_MARKER, literal=True)
        | text.str.contains(_OPEN, literal=True)
    )
    if syntax == STRUCTURED:
        plain = pl.lit(True)
    kind = (
        pl.when(text.is_null())
        .then(pl.lit(MISSING))
        .when(blank)
        .then(pl.lit(EMPTY))
        .when(plain)
        .then(pl.lit("text"))
    )
    simple = frame.select("at", kind.alias("kind")).filter(pl.col("kind").is_not_null())
    answered = pl.col("kind") == "text"
    no_names = pl.when(answered).then(pl.lit([], dtype=pl.List(pl.String)))
    parts = [
        simple.select(
            "at",
            pl.when(~answered).then(pl.col("kind")).alias("error"),
            pl.when(pl.col("kind") == MISSING)
            .then(pl.lit(MISSING_DETAIL))
            .when(pl.col("kind") == EMPTY)
            .then(pl.lit(EMPTY_DETAIL))
            .alias("error_detail"),
            pl.lit(None, pl.String).alias("syntax"),
            pl.lit(0, pl.UInt32).alias("n_calls"),
            no_names.alias("names"),
            no_names.alias("arguments"),
            pl.when(answered).then(pl.lit("[]")).alias("calls"),
            pl.when(answered).then(pl.lit(NO_CALL)).alias("function"),
        )
    ]
    if syntax in _HERMES_SYNTAXES:
        rest = frame.join(simple.select("at"), on="at", how="anti", maintain_order="left")
        found = _hermes(rest, syntax, ordered)
        if found.height:
            parts.append(found)
    columns = ["at", *schema]
    types: dict[Any, Any] = {"at": pl.UInt32, **schema}
    return pl.concat([part.select(columns).cast(types) for part in parts]).sort("at")


__all__ = ["decided_outputs"]
