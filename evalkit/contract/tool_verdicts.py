"""The verdicts of tool-calling outputs against their gold: format, then content.

Each example ends in exactly one of: format-valid, or one error category:

* ``missing`` (no prediction, a failed request), ``empty`` (no text and no call);
* ``unparsable_call``: calls were found (a syntax's marker, structured calls)
  but do not parse: the model's error, never bad input;
* ``no_call``: a text answer where the gold expects a call;
* ``unexpected_call``: a call (parsable or not) where the gold answers in text;
* ``wrong_call_count``: more than one call under ``calls: one``;
* ``unknown_tool``: a call names no tool of the row's tools;
* ``invalid_arguments``: a call's arguments break its tool's ``parameters``
  schema (jsonschema-rs decides, as for ``parse: json``; the detail names the
  failing path).

Where several calls fail, ``unknown_tool`` wins over ``invalid_arguments`` and
the detail names the first such call, so the category never depends on the
order of parallel calls. A format-valid example where no call is expected is
content-correct (the right answer was not to call); otherwise content is
:mod:`evalkit.contract.tool_content`. The predicted class is that of the
format-valid output's calls (``none`` for a text answer), null otherwise.

Per-call checks run on the unique (tools, function, arguments) triples only,
one jsonschema-rs call each; the rest is polars over whole columns.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evalkit.contract.tool_content import CallRules, compare_calls, normalized_strings
from evalkit.contract.tool_parse import EMPTY, MISSING, UNPARSABLE_CALL

if TYPE_CHECKING:
    import polars as pl

    from evalkit.contract.model import Contract
    from evalkit.contract.tool_rules import ToolCatalog

GOLD_CLASS = "gold:function"
GOLD_CALLS = "gold:__calls"
GOLD_TOOLS = "gold:__tools"
NO_CALL_ERROR = "no_call"
UNEXPECTED_CALL = "unexpected_call"
WRONG_CALL_COUNT = "wrong_call_count"
UNKNOWN_TOOL = "unknown_tool"
INVALID_ARGUMENTS = "invalid_arguments"
ERRORS = (
    MISSING,
    EMPTY,
    NO_CALL_ERROR,
    UNEXPECTED_CALL,
    UNPARSABLE_CALL,
    UNKNOWN_TOOL,
    INVALID_ARGUMENTS,
    WRONG_CALL_COUNT,
)
"""Every error category of ``parse: tool_calls``."""
_DETAIL_LIMIT = 200


def _short(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _DETAIL_LIMIT else flat[: _DETAIL_LIMIT - 1] + "…"


def _first_errors(rows: pl.DataFrame, one: bool) -> pl.DataFrame:
    """``error``/``error_detail`` decided without the tools: parse errors, counts."""
    import polars as pl

    error, n = pl.col("error"), pl.col("n_calls").fill_null(0)
    expects = pl.col(GOLD_CALLS) != "[]"
    called = pl.col("function")
    category = (
        pl.when(error.is_in([MISSING, EMPTY]))
        .then(error)
        .when(error == UNPARSABLE_CALL)
        .then(pl.when(expects).then(pl.lit(UNPARSABLE_CALL)).otherwise(pl.lit(UNEXPECTED_CALL)))
        .when(error.is_not_null())
        .then(error)
        .when(n == 0)
        .then(pl.when(expects).then(pl.lit(NO_CALL_ERROR)))
        .when(~expects)
        .then(pl.lit(UNEXPECTED_CALL))
        .when(pl.lit(one) & (n > 1))
        .then(pl.lit(WRONG_CALL_COUNT))
    )
    detail = (
        pl.when(error == UNPARSABLE_CALL)
        .then(
            pl.when(expects)
            .then(pl.col("error_detail"))
            .otherwise(pl.format("a call where the reference answers in text; {}", "error_detail"))
        )
        .when(error.is_not_null())
        .then(pl.col("error_detail"))
        .when(n == 0)
        .then(
            pl.when(expects).then(
                pl.format("no call found in the output; the reference calls {}", GOLD_CLASS)
            )
        )
        .when(~expects)
        .then(pl.format("calls {} where the reference answers in text", called))
        .when(pl.lit(one) & (n > 1))
        .then(pl.format("{} calls where the contract says calls: one", n))
    )
    return rows.select(category.alias("error"), detail.alias("error_detail"))


def _call_checks(rows: pl.DataFrame, needed: pl.Series, catalog: ToolCatalog) -> pl.DataFrame:
    """``error``/``error_detail`` from each call's tool and arguments, for rows ``needed``."""
    import orjson
    import polars as pl

    calls = (
        rows.select(
            pl.int_range(pl.len(), dtype=pl.UInt32).alias("row"),
            pl.col(GOLD_TOOLS).alias("tools"),
            pl.col("names").alias("name"),
            pl.col("arguments"),
        )
        .filter(needed)
        .explode(["name", "arguments"])
        .with_columns(pl.int_range(pl.len(), dtype=pl.UInt32).over("row").alias("call"))
    )
    triples = calls.select("tools", "name", "arguments").unique(maintain_order=True)
    kinds: list[str | None] = []
    details: list[str | None] = []
    checks: dict[tuple[str, str], Any] = {}  # (tools, name) -> is_valid, or None: unknown
    loads = orjson.loads
    for digest, name, arguments in zip(*(c.to_list() for c in triples.get_columns()), strict=True):
        key = (digest, name)
        is_valid = checks.get(key, False)
        if is_valid is False:
            known = name in catalog.schemas[digest]
            is_valid = checks[key] = catalog.validator(digest, name).is_valid if known else None
        if is_valid is None:
            shown = ", ".join(catalog.schemas[digest]) or "none"
            kinds.append(UNKNOWN_TOOL)
            details.append(f": {name!r} is not one of the row's tools ({shown})")
            continue
        value = loads(arguments)
        if is_valid(value):
            kinds.append(None)
            details.append(None)
        else:
            kinds.append(INVALID_ARGUMENTS)
            details.append(f" ({name}): {catalog.explain(digest, name, value)}")
    verdicts = triples.with_columns(
        pl.Series("kind", kinds, dtype=pl.String), pl.Series("why", details, dtype=pl.String)
    )
    failed = (
        calls.join(verdicts, on=["tools", "name", "arguments"], how="left", maintain_order="left")
        .filter(pl.col("kind").is_not_null())
        .with_columns((pl.col("kind") == INVALID_ARGUMENTS).alias("rank"))
        .sort(["row", "rank", "call"])
        .group_by("row", maintain_order=True)
        .first()
    )
    return failed.select(
        "row",
        pl.col("kind").alias("error"),
        pl.format("call {}{}", pl.col("call") + 1, pl.col("why")).alias("error_detail"),
    )


def format_verdicts(rows: pl.DataFrame, contract: Contract, catalog: ToolCatalog) -> pl.DataFrame:
    """``error`` and ``error_detail`` of every row (null error: format-valid).

    Calls equal to their row's gold calls (the same canonical text) need no
    check: the gold's were checked against the same tools when gold was read.
    """
    import polars as pl

    first = _first_errors(rows, contract.output.calls == "one")
    called = rows["n_calls"].fill_null(0) > 0
    same = (rows["calls"] == rows[GOLD_CALLS]).fill_null(False)
    needed = (first["error"].is_null() & called & ~same).alias("needed")
    if not needed.any():
        return first
    checks = _call_checks(rows, needed, catalog)
    error = first["error"].scatter(checks["row"], checks["error"])
    detail = first["error_detail"].scatter(checks["row"], checks["error_detail"])
    return pl.DataFrame([error.alias("error"), detail.alias("error_detail")])


def _compared(
    distinct: pl.DataFrame, rules: CallRules, names: list[str], scored_fields: list[str]
) -> pl.DataFrame:
    """``distinct`` (pairs of canonical call lists) with ``c``, ``m<i>`` and ``f<i>``.

    Pairs that keys decide (:mod:`evalkit.contract.tool_content_keys`) are
    compared in bulk, the others call by call.
    """
    import orjson
    import polars as pl

    from evalkit.contract.tool_content_keys import compare_by_keys, keys_apply

    columns = [
        "calls",
        GOLD_CALLS,
        "c",
        *(f"m{i}" for i in range(len(names))),
        *(f"f{i}" for i in range(len(scored_fields))),
    ]
    parts = []
    rest = distinct
    if keys_apply(rules):
        keyed = compare_by_keys(distinct.rename({GOLD_CALLS: "gold"}), rules)
        positions = pl.Series(range(distinct.height), dtype=pl.UInt32)
        parts.append(
            distinct.select("calls", GOLD_CALLS).gather(keyed["at"]).hstack(keyed.drop("at"))
        )
        rest = distinct.filter(~positions.is_in(keyed["at"].implode()))
    if rest.height:
        parsed = [
            (orjson.loads(p), orjson.loads(g))
            for p, g in zip(rest["calls"], rest[GOLD_CALLS], strict=True)
        ]
        normal = normalized_strings(rules, [side for pair in parsed for side in pair])
        verdicts = [compare_calls(rules, p, g, normal) for p, g in parsed]
        parts.append(
            rest.with_columns(
                pl.Series("c", [v.correct for v in verdicts], dtype=pl.Boolean),
                *(
                    pl.Series(f"m{i}", [v.fields[n] for v in verdicts], dtype=pl.Boolean)
                    for i, n in enumerate(names)
                ),
                *(
                    pl.Series(f"f{i}", [v.f1[n] for v in verdicts], dtype=pl.Float64)
                    for i, n in enumerate(scored_fields)
                ),
            ).select(columns)
        )
    return pl.concat([part.select(columns) for part in parts])


def _content(rows: pl.DataFrame, valid: pl.Series, contract: Contract) -> dict[str, pl.Series]:
    """``content_correct``, ``match.<field>`` and ``f1.<field>`` of every row."""
    import polars as pl

    rules = CallRules.of(contract)
    names = list(contract.fields)
    scored_fields = rules.scored_fields()
    expects = rows[GOLD_CALLS] != "[]"
    equal = (rows["calls"] == rows[GOLD_CALLS]).fill_null(False)
    decided = valid & (~expects | (equal & (not scored_fields)))
    slow = valid & ~decided
    correct = decided.clone()
    fields = {name: decided.clone() for name in names}
    f1: dict[str, pl.Series] = {
        name: pl.repeat(None, rows.height, dtype=pl.Float64, eager=True) for name in scored_fields
    }
    if slow.any():
        pairs = rows.filter(slow).select("calls", GOLD_CALLS)
        distinct = pairs.unique(maintain_order=True)
        table = _compared(distinct, rules, names, scored_fields)
        found = pairs.join(table, on=["calls", GOLD_CALLS], how="left", maintain_order="left")
        positions = slow.arg_true()
        correct = correct.scatter(positions, found["c"])
        for index, name in enumerate(names):
            fields[name] = fields[name].scatter(positions, found[f"m{index}"])
        for index, name in enumerate(scored_fields):
            f1[name] = f1[name].scatter(positions, found[f"f{index}"])
    columns = {"content_correct": correct}
    columns |= {f"match.{name}": series for name, series in fields.items()}
    columns |= {f"f1.{name}": series for name, series in f1.items()}
    return columns


def tool_example_columns(
    rows: pl.DataFrame, contract: Contract, catalog: ToolCatalog
) -> pl.DataFrame:
    """The example columns of a batch of rows: gold columns beside parsed tool outputs.

    ``rows`` holds ``id``, :data:`GOLD_CLASS`, :data:`GOLD_CALLS`,
    :data:`GOLD_TOOLS`, and the columns of
    :func:`~evalkit.contract.tool_parse.tool_parsed_schema` (``error`` already
    ``missing`` where there is no prediction). Returns ``id``, ``class``,
    ``predicted_class``, ``format_valid``, ``error``, ``error_detail``,
    ``content_correct``, ``match.<field>``, ``f1.<field>`` (``set`` fields),
    ``syntax`` and ``calls``.
    """
    import polars as pl

    verdicts = format_verdicts(rows, contract, catalog)
    valid = verdicts["error"].is_null().alias("format_valid")
    predicted = rows.select(
        pl.when(pl.lit(valid)).then(pl.col("function")).alias("predicted_class")
    ).to_series()
    gold_class = (
        rows[GOLD_CLASS]
        if contract.class_column is not None
        else pl.repeat(None, rows.height, dtype=pl.String, eager=True)
    )
    content = _content(rows, valid, contract)
    columns: list[Any] = [
        rows["id"],
        gold_class.alias("class"),
        predicted,
        valid,
        verdicts["error"],
        verdicts["error_detail"],
    ]
    columns += [series.alias(name) for name, series in content.items()]
    columns += [rows["syntax"], rows["calls"]]
    return pl.DataFrame(columns)


__all__ = ["ERRORS", "GOLD_CALLS", "GOLD_CLASS", "GOLD_TOOLS", "tool_example_columns"]
