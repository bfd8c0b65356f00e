"""From the per-example table to the figures of ``summary.json``.

Every figure is a count over ``examples`` (one row per gold item) and a
ratio of two counts, so it can be recomputed from ``examples.parquet`` alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalkit.scoring.summary import ClassStats, ErrorStats, FieldStats, Rates

if TYPE_CHECKING:
    import polars as pl

    from evalkit.contract.model import Contract


def ratio(numerator: int | float, denominator: int) -> float | None:
    """``numerator / denominator``, or None when there is nothing to divide by."""
    return numerator / denominator if denominator else None


def rates(frame: pl.DataFrame) -> Rates:
    """Format validity and content accuracy of a set of examples."""
    import polars as pl

    counts = frame.select(
        pl.len().alias("n"),
        (pl.col("error") == "missing").sum().alias("missing"),
        pl.col("format_valid").sum().alias("format_valid"),
        pl.col("content_correct").sum().alias("content_correct"),
    ).row(0, named=True)
    n, valid, correct = (
        int(counts["n"]),
        int(counts["format_valid"]),
        int(counts["content_correct"]),
    )
    return Rates(
        n=n,
        missing=int(counts["missing"] or 0),
        format_valid=valid,
        format_validity=ratio(valid, n),
        content_correct=correct,
        content_accuracy=ratio(correct, n),
        content_accuracy_given_valid=ratio(correct, valid),
    )


def field_stats(examples: pl.DataFrame, contract: Contract) -> dict[str, FieldStats]:
    """Per field: how often it matched, over all items and over format-valid ones."""
    import polars as pl

    n = examples.height
    valid = int(examples["format_valid"].sum())
    result = {}
    for name, spec in contract.fields.items():
        matched = int(examples[f"match.{name}"].sum())
        mean_f1 = None
        if spec.match == "set":
            scores = examples.filter(pl.col("format_valid"))[f"f1.{name}"].fill_null(0.0)
            mean_f1 = ratio(float(scores.sum()), valid)
        result[name] = FieldStats(
            matched=matched,
            accuracy=ratio(matched, n),
            accuracy_given_valid=ratio(matched, valid),
            mean_f1=mean_f1,
        )
    return result


def class_stats(examples: pl.DataFrame, contract: Contract) -> dict[str, ClassStats]:
    """Per gold class: rates, and precision/recall/F1 of the class field.

    The predicted class comes only from format-valid outputs: an invalid or
    missing output lowers its own class's recall, not another's precision.
    """
    import polars as pl

    if contract.class_column is None:
        return {}
    predicted_counts = dict(
        examples.filter(pl.col("predicted_class").is_not_null())
        .group_by("predicted_class")
        .len()
        .iter_rows()
    )
    grouped = (
        examples.filter(pl.col("class").is_not_null())
        .group_by("class")
        .agg(
            pl.len().alias("n"),
            (pl.col("error") == "missing").sum().alias("missing"),
            pl.col("format_valid").sum().alias("format_valid"),
            pl.col("content_correct").sum().alias("content_correct"),
            (pl.col("predicted_class") == pl.col("class")).sum().alias("true_positives"),
        )
        .sort("class")
    )
    result = {}
    for row in grouped.iter_rows(named=True):
        n, valid, correct = int(row["n"]), int(row["format_valid"]), int(row["content_correct"])
        predicted = int(predicted_counts.get(row["class"], 0))
        precision = ratio(int(row["true_positives"]), predicted) or 0.0
        recall = ratio(int(row["true_positives"]), n) or 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        result[str(row["class"])] = ClassStats(
            n=n,
            missing=int(row["missing"]),
            format_valid=valid,
            format_validity=ratio(valid, n),
            content_correct=correct,
            content_accuracy=ratio(correct, n),
            content_accuracy_given_valid=ratio(correct, valid),
            support=n,
            rare=n <= contract.rare.max_support,
            predicted=predicted,
            precision=precision,
            recall=recall,
            f1=f1,
        )
    return result


def slice_stats(examples: pl.DataFrame, contract: Contract) -> dict[str, Rates]:
    """Per contract slice: the same rates as overall, over the slice's items."""
    import polars as pl

    return {
        item.name: rates(examples.filter(pl.col(f"slice.{item.name}"))) for item in contract.slices
    }


def error_stats(examples: pl.DataFrame) -> dict[str, ErrorStats]:
    """Per error category: how many, and the smallest id to look at."""
    import polars as pl

    grouped = (
        examples.filter(pl.col("error").is_not_null())
        .group_by("error")
        .agg(pl.len().alias("count"), pl.col("id").min().alias("example_id"))
        .sort("error")
    )
    return {
        str(row["error"]): ErrorStats(count=int(row["count"]), example_id=str(row["example_id"]))
        for row in grouped.iter_rows(named=True)
    }
