"""Gold calls read and checked in bulk, for a ``gold_calls`` column of JSON text.

:mod:`evalkit.scoring.tool_gold` reads gold calls row by row (an ``orjson``
parse and dump per call) and checks each against its row's tools. A gold
file's calls nearly all have one shape, so here a row whose text is a JSON list
of strict call objects (:mod:`evalkit.contract.tool_fast`) is read by polars
string expressions for the whole column at once, and checked in bulk:

* ``calls: one`` allows one call; each call names one of its row's tools (a join);
* a ``number`` field's gold value is a number (no string or boolean token) and a
  ``set`` field's a list (strict calls hold none, so any value but ``null`` fails);
* each distinct (tools, function, arguments) meets the tool's ``parameters``:
  the distinct arguments of one tool are parsed by one ``orjson`` call (a JSON
  list of them) and validated by jsonschema-rs.

Whenever a check fails, the caller reads the whole column the exact way,
which raises the same error, for the same first row, as always. Rows of
another shape are read the exact way too; only the bulk rows skip it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evalkit.contract.tool_fast import CALL_OBJECT, STRICT_CALL_LIST, call_objects, listed_calls
from evalkit.contract.tool_names import NO_CALL

if TYPE_CHECKING:
    import polars as pl

    from evalkit.contract.model import Contract
    from evalkit.contract.tool_rules import ToolCatalog


@dataclass(frozen=True)
class BulkGold:
    """The gold rows read in bulk: their positions, their calls, each row's class and key."""

    rows: pl.Series
    """Positions (UInt32) of the rows read in bulk, ascending."""
    calls: pl.DataFrame
    """One row per call: ``at`` (the row's position), ``name``, ``arguments`` (canonical)."""
    classes: pl.Series
    """Per bulk row: the class (the called function, ``none``, or names joined by ``+``)."""
    keys: pl.Series
    """Per bulk row: the canonical text of its calls (sorted under ``calls: set``)."""


def bulk_gold(texts: pl.Series, ordered: bool) -> BulkGold:
    """The rows of a gold calls column (String) that are lists of strict call objects."""
    import polars as pl

    frame = pl.DataFrame({"text": texts}).with_row_index("at")
    strict = frame.filter(pl.col("text").str.contains(STRICT_CALL_LIST).fill_null(False))
    objects = strict.select("at", pl.col("text").str.extract_all(CALL_OBJECT).alias("object"))
    none = objects.filter(pl.col("object").list.len() == 0).select("at")
    exploded = objects.filter(pl.col("object").list.len() > 0).explode("object")
    calls = exploded.select("at").hstack(call_objects(exploded["object"]))
    repeated = calls.filter(pl.col("name").is_null())["at"].unique()
    calls = calls.filter(~pl.col("at").is_in(repeated.implode()))
    listed = listed_calls(calls, ordered).select("at", "function", "calls")
    empty = none.select("at", pl.lit(NO_CALL).alias("function"), pl.lit("[]").alias("calls"))
    decided = pl.concat([listed, empty]).sort("at")
    return BulkGold(decided["at"], calls, decided["function"], decided["calls"])


def _wanted_problem(calls: pl.DataFrame, contract: Contract) -> bool:
    """Whether a field's gold value may be of a kind its matcher cannot compare.

    A matcher that takes any gold (``gold_kinds`` None) needs no look; one that
    takes numbers (``number``) is looked at for strings and booleans; any other
    (``set``: strict calls hold no list) for any value but null. A hit sends
    the column to the exact reader, which decides and names the row.

    In canonical arguments (no space outside strings, each key once), ``{"key":``
    or ``,"key":`` can only start a member: inside a string every ``"`` is escaped.
    """
    import polars as pl

    from evalkit.contract.matchers import matcher

    arguments = pl.col("arguments")
    problem = pl.lit(False)
    for name, spec in contract.fields.items():
        kinds = matcher(spec.match).gold_kinds
        if name == "name" or kinds is None:
            continue
        key = '"' + name[len("arguments.") :] + '":'

        def starts(tail: str, key: str = key) -> pl.Expr:
            return arguments.str.contains("{" + key + tail, literal=True) | arguments.str.contains(
                "," + key + tail, literal=True
            )

        present, null = starts(""), starts("null")
        if "integer" in kinds:
            problem |= starts('"') | starts("t") | starts("f")
        else:
            problem |= present & ~null
    return bool(calls.select(problem.any()).item())


def bulk_problem(
    bulk: BulkGold, digests: pl.Series, catalog: ToolCatalog, contract: Contract
) -> bool:
    """Whether any bulk row breaks a rule (see the module docstring): the caller then
    reads the whole column the exact way, which names the first such row."""
    import orjson
    import polars as pl

    if contract.output.calls == "one" and bulk.calls["at"].is_duplicated().any():
        return True
    calls = bulk.calls.with_columns(digests.gather(bulk.calls["at"]).alias("digest"))
    known = pl.DataFrame(
        [(digest, name) for digest, tools in catalog.schemas.items() for name in tools],
        schema={"digest": pl.String, "name": pl.String},
        orient="row",
    )
    if calls.join(known, on=["digest", "name"], how="anti").height:
        return True
    if _wanted_problem(calls, contract):
        return True
    distinct = calls.select("digest", "name", "arguments").unique()
    for (digest, name), group in distinct.group_by("digest", "name"):
        is_valid = catalog.validator(str(digest), str(name)).is_valid
        joined = group["arguments"].str.join(",").item()
        values: list[Any] = orjson.loads("[" + joined + "]")
        if not all(map(is_valid, values)):
            return True
    return False


__all__ = ["BulkGold", "bulk_gold", "bulk_problem"]
