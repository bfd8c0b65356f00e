"""Tool calls found and canonicalised in bulk, by polars string expressions.

The exact parsers (:mod:`evalkit.contract.tool_syntax`, :mod:`~evalkit.contract.tool_parse`,
:func:`~evalkit.contract.tool_rules.gold_calls_of`) are the one semantics of a
call; they run Python per output (an ``orjson`` parse and dump per call, a few
µs). Most calls a model or a gold file writes have one shape, and this module
decides those in bulk, for whole columns at once:

* a **strict call object**: ``{"name": "…", "arguments": {…}}`` (either key
  first, JSON whitespace anywhere between tokens) whose name is a non-empty
  string without escapes, whose argument keys are strings without escapes,
  each given once, and whose values are strings, integers of at most 18 digits
  (``-0`` aside), ``true``, ``false`` or ``null``; a string may hold any
  character but a control character, ``"`` or ``\\``, and the escapes
  ``\\" \\\\ \\b \\f \\n \\r \\t``.

Such a text is valid JSON that ``orjson`` parses to an object with exactly
``name`` and ``arguments``, no key given twice and no float, list or object
among the arguments; and ``orjson`` writes every such token back as it was
written (it escapes exactly ``"``, ``\\`` and the control characters, the five
above by their short form), so the canonical arguments text
(:func:`~evalkit.contract.tool_rules.canonical_arguments`: keys sorted, no
spaces) is the tokens put together: ``{"key":value,…}``, keys in code-point
order (UTF-8 bytes sort as code points do). Anything else (a float, nested
arguments, ``\\u`` escapes, an extra key, a repeated key, a syntax error) is
left to the exact parsers, which decide it as always. ``tests/test_tool_fast.py``
checks every column against the exact path on a corpus of edge cases.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import polars as pl

JSON_SPACE = " \t\n\r"
"""JSON's whitespace (what ``orjson`` skips between tokens)."""
_WS = "[ \\t\\n\\r]*"
_NAME = r'"[^"\\\x00-\x1f]+"'
_KEY = r'"[^"\\\x00-\x1f]*"'
_STRING = r'"(?:[^"\\\x00-\x1f]|\\["\\bfnrt])*"'
_VALUE = rf"(?:{_STRING}|0|-?[1-9][0-9]{{0,17}}|true|false|null)"
PAIR = rf"{_KEY}{_WS}:{_WS}{_VALUE}"
"""One argument: a key and its value (matched left to right within checked arguments)."""
_ARGUMENTS = rf"\{{{_WS}(?:{PAIR}(?:{_WS},{_WS}{PAIR})*)?{_WS}\}}"
_NAME_MEMBER = rf'"name"{_WS}:{_WS}{_NAME}'
_ARGUMENTS_MEMBER = rf'"arguments"{_WS}:{_WS}{_ARGUMENTS}'
CALL_OBJECT = (
    rf"\{{{_WS}(?:{_NAME_MEMBER}{_WS},{_WS}{_ARGUMENTS_MEMBER}"
    rf"|{_ARGUMENTS_MEMBER}{_WS},{_WS}{_NAME_MEMBER}){_WS}\}}"
)
"""A strict call object (see the module docstring)."""
STRICT_CALL = rf"^{_WS}{CALL_OBJECT}{_WS}$"
"""A strict call object with JSON whitespace around it, and nothing else."""
STRICT_CALL_LIST = rf"^{_WS}\[{_WS}(?:{CALL_OBJECT}(?:{_WS},{_WS}{CALL_OBJECT})*)?{_WS}\]{_WS}$"
"""A JSON list of strict call objects (``[]`` included), with JSON whitespace around it."""
_NAME_FIRST = rf'^\{{{_WS}"name"{_WS}:{_WS}"'
_ARGUMENTS_FIRST = rf'^\{{{_WS}"arguments"{_WS}:{_WS}\{{'
_AFTER_NAME = rf'^{_WS},{_WS}"arguments"{_WS}:{_WS}\{{'
_NAME_LAST = rf"{_WS}\}}{_WS},{_WS}{_NAME_MEMBER}{_WS}\}}$"
_KEY_END = rf"^{_WS}:{_WS}"


def _inner_arguments(objects: pl.Expr, name_first: bool) -> tuple[pl.Expr, pl.Expr]:
    """``(name, text between the arguments' braces)`` of strict call objects (trimmed)
    whose ``name`` comes first (``name_first``) or last.

    The object is known strict, so its parts are found by cutting at fixed
    tokens: a name holds no ``"``, and when the name comes last it is the text
    after the last ``"`` that precedes the object's closing brace. The two
    orders are cut apart (the caller splits the rows), so that no row pays
    for the other order's expressions.
    """
    if name_first:
        after = objects.str.replace(_NAME_FIRST, "").str.splitn('"', 2)
        arguments = (
            after.struct.field("field_1")
            .str.replace(_AFTER_NAME, "")
            .str.strip_chars_end(JSON_SPACE)
            .str.head(-1)  # the object's "}"
            .str.strip_chars_end(JSON_SPACE)
            .str.head(-1)  # the arguments' "}"
        )
        return after.struct.field("field_0"), arguments
    name = objects.str.strip_chars_end(JSON_SPACE + "}").str.head(-1).str.split('"').list.last()
    return name, objects.str.replace(_ARGUMENTS_FIRST, "").str.replace(_NAME_LAST, "")


def _pair_parts(pairs: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    """``(key, value token)`` of ``"key" : value`` texts (the key holds no ``"``)."""
    parts = pairs.str.splitn('"', 3)
    return parts.struct.field("field_1"), parts.struct.field("field_2").str.replace(_KEY_END, "")


def call_objects(bodies: pl.Series) -> pl.DataFrame:
    """``name`` and canonical ``arguments`` text of each strict call object (null: not one).

    ``bodies`` may have JSON whitespace around the object. Null rows are
    texts the exact parsers must decide: not strict, or an argument key given
    twice.
    """
    import polars as pl

    frame = pl.DataFrame({"body": bodies.cast(pl.String)}).with_row_index("at")
    strict = frame.filter(pl.col("body").str.contains(STRICT_CALL).fill_null(False))
    strict = strict.with_columns(pl.col("body").str.strip_chars(JSON_SPACE))
    first = pl.col("body").str.contains(_NAME_FIRST)
    orders = []
    for name_first, rows in ((True, first), (False, ~first)):
        name, inner = _inner_arguments(pl.col("body"), name_first)
        orders.append(
            strict.filter(rows).select(
                "at", name.alias("name"), inner.str.extract_all(PAIR).alias("pairs")
            )
        )
    calls = pl.concat(orders).with_columns(pl.col("pairs").list.len().alias("n_pairs"))
    key, value = _pair_parts(pl.col("pairs").list.first())
    few = calls.filter(pl.col("n_pairs") <= 1).select(
        "at",
        "name",
        pl.when(pl.col("n_pairs") == 0)
        .then(pl.lit("{}"))
        .otherwise(pl.concat_str(pl.lit('{"'), key, pl.lit('":'), value, pl.lit("}")))
        .alias("arguments"),
    )
    parts = [few]
    many = calls.filter(pl.col("n_pairs") > 1)
    if many.height:
        parts.append(_sorted_arguments(many))
    canonical = pl.concat(parts).filter(pl.col("arguments").is_not_null())
    return (
        frame.select("at")
        .join(canonical, on="at", how="left", maintain_order="left")
        .select("name", "arguments")
    )


def _sorted_arguments(calls: pl.DataFrame) -> pl.DataFrame:
    """Canonical arguments of calls with several arguments: keys sorted, none repeated."""
    import polars as pl

    key, value = _pair_parts(pl.col("pairs"))
    pairs = (
        calls.select("at", "pairs")
        .explode("pairs")
        .select("at", key.alias("key"), value.alias("value"))
        .sort("at", "key")
    )
    repeated = (pl.col("at") == pl.col("at").shift(1)) & (pl.col("key") == pl.col("key").shift(1))
    twice = pairs.filter(repeated.fill_null(False))["at"].unique()
    joined = (
        pairs.filter(~pl.col("at").is_in(twice.implode()))
        .select("at", pl.concat_str(pl.lit('"'), "key", pl.lit('":'), "value").alias("pair"))
        .group_by("at", maintain_order=True)
        .agg("pair")
        .select(
            "at",
            pl.concat_str(pl.lit("{"), pl.col("pair").list.join(","), pl.lit("}")).alias(
                "arguments"
            ),
        )
    )
    return calls.select("at", "name").join(joined, on="at", how="inner", maintain_order="left")


def _call_texts(name: pl.Expr, arguments: pl.Expr) -> pl.Expr:
    """:func:`~evalkit.contract.tool_rules.call_text` of names that need no escape."""
    import polars as pl

    return pl.concat_str(
        pl.lit('{"arguments":'), arguments, pl.lit(',"name":"'), name, pl.lit('"}')
    )


def listed_calls(calls: pl.DataFrame, ordered: bool) -> pl.DataFrame:
    """Per ``at`` (ascending): ``n_calls``, ``names``, ``arguments``, ``calls`` (the
    canonical text of the list, sorted unless ``ordered``) and ``function`` (the class:
    the sorted distinct names joined by ``+``).

    ``calls`` holds one row per call (``at``, ``name``, ``arguments``), in the
    order written; every name needs no escape in JSON. Most lists hold one
    call, and those are put together without list operations (sorting and
    joining polars lists costs a few µs a row).
    """
    import polars as pl

    texts = calls.with_columns(_call_texts(pl.col("name"), pl.col("arguments")).alias("text"))
    several = pl.col("at").is_duplicated()
    single = texts.filter(~several).select(
        "at",
        pl.lit(1, pl.UInt32).alias("n_calls"),
        pl.concat_list("name").alias("names"),
        pl.concat_list("arguments").alias("arguments"),
        pl.concat_str(pl.lit("["), "text", pl.lit("]")).alias("calls"),
        pl.col("name").alias("function"),
    )
    grouped = (
        texts.filter(several)
        .group_by("at", maintain_order=True)
        .agg(pl.col("name").alias("names"), "arguments", "text")
    )
    listed = pl.col("text") if ordered else pl.col("text").list.sort()
    parallel = grouped.select(
        "at",
        pl.col("names").list.len().cast(pl.UInt32).alias("n_calls"),
        "names",
        "arguments",
        pl.concat_str(pl.lit("["), listed.list.join(","), pl.lit("]")).alias("calls"),
        pl.col("names").list.unique().list.sort().list.join("+").alias("function"),
    )
    return pl.concat([single, parallel]).sort("at")


__all__ = [
    "CALL_OBJECT",
    "JSON_SPACE",
    "PAIR",
    "STRICT_CALL",
    "STRICT_CALL_LIST",
    "call_objects",
    "listed_calls",
]
