"""Text normalisation and ``parse: label`` outputs, as polars expressions.

One normalisation serves the ``normalized`` matcher and lenient label
extraction, applied to gold and predictions alike, so both sides always go
through the same code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalkit.contract.match_values import normalize_text
from evalkit.contract.parse import ABSENT, EMPTY, MISSING, STRING, UNKNOWN_LABEL

if TYPE_CHECKING:
    import polars as pl

    from evalkit.contract.model import Contract


def label_key(expression: pl.Expr, extract: str) -> pl.Expr:
    """The form a label is compared in: trimmed (strict) or normalised (lenient).

    Lenient also drops surrounding quotes, backticks and asterisks and a
    trailing ``.`` or ``!``, which models add around a bare label.
    """
    if extract == "strict":
        return expression.str.strip_chars()
    cleaned = normalize_text(expression).str.strip_chars("\"'`* ").str.strip_chars_end(".!")
    return cleaned.str.strip_chars("\"'`* ")


def parse_labels(outputs: pl.Series, contract: Contract) -> pl.DataFrame:
    """``parse: label``: the same columns as :func:`parse_frame`, computed in polars.

    A label that matches (per :func:`label_key`) becomes the field's string
    value, written as the contract writes it.
    """
    import polars as pl

    labels = contract.output.labels or []
    extract = contract.output.extract
    table = pl.DataFrame({"label": labels}).with_columns(
        label_key(pl.col("label"), extract).alias("key")
    )
    collisions = table.filter(pl.col("key").is_duplicated())
    if collisions.height:
        from evalkit.errors import InvalidContract

        pair = ", ".join(repr(v) for v in collisions["label"].to_list()[:2])
        raise InvalidContract(
            f"output.labels: {pair} are the same label under lenient extraction; "
            "merge them or use extract: strict"
        )
    frame = pl.DataFrame({"output": outputs}).with_columns(
        label_key(pl.col("output"), extract).alias("key")
    )
    found = frame.join(table, on="key", how="left", maintain_order="left")
    blank = pl.col("output").str.strip_chars() == ""
    error = (
        pl.when(pl.col("output").is_null())
        .then(pl.lit(MISSING))
        .when(blank)
        .then(pl.lit(EMPTY))
        .when(pl.col("label").is_null())
        .then(pl.lit(UNKNOWN_LABEL))
    )
    shown = pl.col("output").str.slice(0, 80)
    detail = (
        pl.when(pl.col("output").is_null())
        .then(pl.lit("no output for this id"))
        .when(blank)
        .then(pl.lit("the output is blank"))
        .when(pl.col("label").is_null())
        .then(pl.format("{} is not one of the contract's labels", shown))
    )
    return found.select(
        error.alias("error"),
        detail.alias("error_detail"),
        pl.when(pl.col("label").is_null())
        .then(pl.lit(ABSENT))
        .otherwise(pl.lit(STRING))
        .cast(pl.UInt8)
        .alias("k0"),
        pl.col("label").alias("v0"),
    )
