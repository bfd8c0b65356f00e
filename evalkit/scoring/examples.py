"""The per-example table: one row per gold item with its verdicts.

Predictions are aligned with their gold rows once, then parsed and matched
chunk by chunk (parsing possibly in worker processes), so only a chunk's
parsed values are alive at a time; gold items without a prediction go
through the same matching code as ``missing``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalkit.contract.match import field_match, predicted_class, slice_mask
from evalkit.contract.parse import (
    INVALID_JSON,
    MISSING,
    UNKNOWN_LABEL,
    ParserSpec,
    parse_labels,
    parsed_schema,
)
from evalkit.scoring.workers import CHUNK_ROWS, ParsePool, resolve_workers

if TYPE_CHECKING:
    from collections.abc import Iterator

    import polars as pl

    from evalkit.contract.model import Contract

GOLD_PREFIX = "gold:"


def _override_errors(rows: pl.DataFrame, invalid_category: str) -> pl.DataFrame:
    """Failed requests are ``missing`` and undecodable bytes invalid, whatever the parser saw."""
    import polars as pl

    failed = pl.col("request_error").is_not_null()
    undecodable = pl.col("invalid_utf8").fill_null(False)
    return rows.with_columns(
        pl.when(failed)
        .then(pl.lit(MISSING))
        .when(undecodable)
        .then(pl.lit(invalid_category))
        .otherwise(pl.col("error"))
        .alias("error"),
        pl.when(failed)
        .then(pl.col("request_error"))
        .when(undecodable)
        .then(pl.lit("the output is not valid UTF-8"))
        .otherwise(pl.col("error_detail"))
        .alias("error_detail"),
    )


def _verdicts(rows: pl.DataFrame, contract: Contract, invalid_category: str) -> pl.DataFrame:
    """Example columns for rows holding gold columns and parsed columns."""
    import polars as pl

    rows = _override_errors(rows, invalid_category)
    columns: dict[str, pl.Series] = {}
    f1_columns: dict[str, pl.Series] = {}
    for index, (name, spec) in enumerate(contract.fields.items()):
        matched, f1 = field_match(
            rows, spec, index, f"fields.{name}", gold_column=GOLD_PREFIX + spec.gold
        )
        columns[name] = matched
        if f1 is not None:
            f1_columns[name] = f1
    correct = pl.Series([True] * rows.height, dtype=pl.Boolean)
    for name in contract.correct_fields:
        correct = correct & columns[name]
    valid = rows["error"].is_null()
    class_name = contract.class_field
    if contract.class_column is not None and class_name is not None:
        index = list(contract.fields).index(class_name)
        gold_class = GOLD_PREFIX + contract.class_column
        predicted = predicted_class(rows, gold_class, index, columns[class_name])
        classes = rows[gold_class].cast(pl.String)
    else:
        predicted = pl.Series([None] * rows.height, dtype=pl.String)
        classes = predicted
    result = pl.DataFrame(
        {
            "id": rows["id"],
            "class": classes,
            "predicted_class": predicted,
            "format_valid": valid,
            "error": rows["error"],
            "error_detail": rows["error_detail"],
            "content_correct": valid & correct,
        }
    )
    extra = [columns[name].alias(f"match.{name}") for name in contract.fields]
    extra += [f1.alias(f"f1.{name}") for name, f1 in f1_columns.items()]
    for index, item in enumerate(contract.slices):
        where = {GOLD_PREFIX + column: value for column, value in item.where.items()}
        mask = slice_mask(rows, where, f"slices[{index}] ({item.name})")
        extra.append(mask.alias(f"slice.{item.name}"))
    return result.with_columns(extra)


def _missing_rows(gold: pl.DataFrame, n_fields: int) -> pl.DataFrame:
    """Parsed-shaped rows for gold items that have no prediction at all."""
    import polars as pl

    schema = parsed_schema(n_fields)
    filler = [
        pl.lit(MISSING).alias("error"),
        pl.lit("no prediction for this id").alias("error_detail"),
    ]
    for name, dtype in schema.items():
        if name.startswith("k"):
            filler.append(pl.lit(0, dtype=dtype).alias(name))
        elif name.startswith("v"):
            filler.append(pl.lit(None, dtype=dtype).alias(name))
    return gold.with_columns(
        pl.lit(None, dtype=pl.String).alias("request_error"),
        pl.lit(False).alias("invalid_utf8"),
        *filler,
    )


def _parsed_chunks(
    contract: Contract, aligned: pl.DataFrame, workers: int | None
) -> Iterator[tuple[pl.DataFrame, pl.DataFrame]]:
    """``(rows, parsed)`` per chunk of the aligned predictions."""
    if contract.output.parse == "label":
        for start in range(0, aligned.height, CHUNK_ROWS):
            rows = aligned.slice(start, CHUNK_ROWS)
            yield rows, parse_labels(rows["output"], contract)
        return
    spec = ParserSpec.from_contract(contract)
    with ParsePool(spec, resolve_workers(workers, aligned.height)) as pool:
        start = 0
        for parsed in pool.parse_chunks(aligned["output"]):
            yield aligned.slice(start, parsed.height), parsed
            start += parsed.height


def build_examples(
    contract: Contract, gold: pl.DataFrame, known: pl.DataFrame, *, workers: int | None = None
) -> pl.DataFrame:
    """One row per gold item: verdicts, matches, slices; sorted by id.

    ``gold`` has ``id`` and ``gold:<column>`` columns; ``known`` has the
    predictions whose id is in gold (one per id): ``id``, ``output``,
    ``request_error``, ``invalid_utf8``.
    """
    import polars as pl

    invalid_category = UNKNOWN_LABEL if contract.output.parse == "label" else INVALID_JSON
    aligned = known.join(gold, on="id", how="left", maintain_order="left")
    parts = []
    for rows, parsed in _parsed_chunks(contract, aligned, workers):
        combined = pl.concat([rows.drop("output"), parsed], how="horizontal")
        parts.append(_verdicts(combined, contract, invalid_category))
    unanswered = gold.join(known.select("id"), on="id", how="anti")
    if unanswered.height or not parts:
        filled = _missing_rows(unanswered, len(contract.fields))
        parts.append(_verdicts(filled, contract, invalid_category))
    return pl.concat(parts, how="vertical").sort("id").rechunk()
