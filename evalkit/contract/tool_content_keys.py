"""Content of strict tool calls decided in bulk: one key per call, lists of keys compared.

:func:`~evalkit.contract.tool_content.compare_calls` pairs calls by the
fields' matchers. For the matchers ``exact`` and ``normalized`` "these two
values match" is an equivalence (null and an absent key are one value; two
strings match when their normalised forms are equal; anything else when its
canonical JSON text is), and so is "the rest matches" (the function name when
no field lists it, and every unlisted argument: present on both sides with the
same text, or on neither). So each call gets a **key** per field, and a
content key from the fields that decide correctness; two calls match exactly
when their keys are equal, and a perfect matching between two lists of calls
(``calls: set``) exists exactly when the lists hold the same keys as
multisets, i.e. when their sorted lists of keys are equal (position by
position for ``ordered``/``one``, and lists of different lengths never match).

Keys are built by polars from the canonical texts of the calls, for pairs
whose calls on both sides are strict (:mod:`evalkit.contract.tool_fast`) and
whose ``normalized`` strings hold no escape; a contract with a ``number`` or
``set`` field (a tolerance and an F1 are not equivalences), or another pair,
is compared by :func:`~evalkit.contract.tool_content.compare_calls`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalkit.contract.tool_fast import CALL_OBJECT, PAIR, STRICT_CALL_LIST, call_objects

if TYPE_CHECKING:
    import polars as pl

    from evalkit.contract.tool_content import CallRules


def keys_apply(rules: CallRules) -> bool:
    """Whether every field's matcher is an equivalence (then keys decide content)."""
    from evalkit.contract.matchers import matcher

    return all(matcher(spec.match).keyed for spec in rules.fields.values())


def _part(key: pl.Expr) -> pl.Expr:
    """``key`` prefixed by its length, so that joined parts never run into each other."""
    import polars as pl

    return pl.concat_str(key.str.len_chars().cast(pl.String), pl.lit(":"), key)


def _field_key(rules: CallRules, field: str) -> tuple[pl.Expr, pl.Expr]:
    """``(key, undecidable)`` of one field for one call (columns ``name``, ``pairs``)."""
    import polars as pl

    from evalkit.contract.match_values import normalize_text
    from evalkit.contract.matchers import matcher

    normalized = matcher(rules.fields[field].match).normalizes
    if field == "name":
        name = pl.col("name")
        return (normalize_text(name) if normalized else name), pl.lit(False)
    prefix = '"' + field[len("arguments.") :] + '":'
    token = (
        pl.col("pairs")
        .list.eval(pl.element().filter(pl.element().str.starts_with(prefix)))
        .list.first()
        .str.slice(len(prefix))
    )
    absent = token.is_null() | (token == "null")
    is_string = token.str.starts_with('"')
    key = pl.when(absent).then(pl.lit("A")).otherwise(pl.concat_str(pl.lit("J"), token))
    if not normalized:
        return key, pl.lit(False)
    text = token.str.slice(1, token.str.len_chars() - 2)
    key = (
        pl.when(absent)
        .then(pl.lit("A"))
        .when(is_string)
        .then(pl.concat_str(pl.lit("S"), normalize_text(text)))
        .otherwise(pl.concat_str(pl.lit("J"), token))
    )
    escaped = (is_string & token.str.contains("\\", literal=True)).fill_null(False)
    return key, escaped


def _rest_key(rules: CallRules) -> pl.Expr:
    """The key of what no field lists: the name (unless listed) and the other arguments."""
    import polars as pl

    listed = ['"' + field[len("arguments.") :] + '":' for field in rules.fields if field != "name"]
    others = pl.col("pairs")
    if listed:
        keep = pl.lit(True)
        for prefix in listed:
            keep &= ~pl.element().str.starts_with(prefix)
        others = others.list.eval(pl.element().filter(keep))
    name = pl.lit("") if "name" in rules.fields else pl.col("name")
    return pl.concat_str(_part(name), others.list.join(","))


def compare_by_keys(pairs: pl.DataFrame, rules: CallRules) -> pl.DataFrame:
    """Content of distinct (``calls``, ``gold``) pairs of canonical call lists, where keys decide.

    Returns ``at`` (the pair's row in ``pairs``), ``c`` (content-correct) and
    ``m0``, ``m1``, … (each field's match, in the contract's order), for the
    pairs decided; the others are left out.
    """
    import polars as pl

    fields = list(rules.fields)
    sides = pl.concat(
        [
            pairs.select(pl.col("calls").alias("text"))
            .with_row_index("at")
            .with_columns(pl.lit(0, pl.UInt8).alias("side")),
            pairs.select(pl.col("gold").alias("text"))
            .with_row_index("at")
            .with_columns(pl.lit(1, pl.UInt8).alias("side")),
        ]
    )
    strict = pl.col("text").str.contains(STRICT_CALL_LIST)
    loose = sides.filter(~strict.fill_null(False))["at"]
    objects = (
        sides.filter(strict.fill_null(False))
        .select("at", "side", pl.col("text").str.extract_all(CALL_OBJECT).alias("object"))
        .explode("object")
    )
    calls = objects.select("at", "side").hstack(call_objects(objects["object"]))
    loose = pl.concat([loose, calls.filter(pl.col("name").is_null())["at"]])
    calls = calls.filter(pl.col("name").is_not_null()).with_columns(
        pl.col("arguments").str.extract_all(PAIR).alias("pairs")
    )
    keys, blocked = [], []
    for index, field in enumerate(fields):
        key, undecidable = _field_key(rules, field)
        keys.append(key.alias(f"k{index}"))
        blocked.append(undecidable)
    rest = _rest_key(rules)
    content = [_part(pl.col(f"k{fields.index(field)}")) for field in rules.correct]
    if rules.all_correct:
        content.append(_part(rest))
    keyed = calls.with_columns(*keys, pl.any_horizontal(pl.lit(False), *blocked).alias("blocked"))
    keyed = keyed.with_columns(
        pl.concat_str(*content).alias("c") if content else pl.lit("").alias("c")
    )
    loose = pl.concat([loose, keyed.filter("blocked")["at"]]).unique()
    columns = ["c", *(f"k{index}" for index in range(len(fields)))]
    lists = (
        keyed.filter(~pl.col("at").is_in(loose.implode()))
        .group_by("at", "side", maintain_order=True)
        .agg(*columns)
    )
    if not rules.ordered:
        lists = lists.with_columns(pl.col(column).list.sort() for column in columns)
    predicted = lists.filter(pl.col("side") == 0).drop("side")
    gold = lists.filter(pl.col("side") == 1).drop("side")
    both = predicted.join(gold, on="at", how="inner", suffix="_gold")
    return both.select(
        "at",
        (pl.col("c") == pl.col("c_gold")).alias("c"),
        *(
            (pl.col(f"k{index}") == pl.col(f"k{index}_gold")).alias(f"m{index}")
            for index in range(len(fields))
        ),
    ).sort("at")


__all__ = ["compare_by_keys", "keys_apply"]
