"""What a reader looks at after the statistics: confusions, format errors, flipped examples.

These are counts and selections over the paired examples, made here (not in
``report/``) so that every rendering of a comparison — JSON, Markdown, HTML —
shows the same figures and the same examples.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from evalkit.comparison.paired import PairedExamples
from evalkit.records._compare import (
    ConfusionChange,
    ConfusionComparison,
    FlippedExample,
    FormatErrorCount,
)
from evalkit.scoring.aggregate import confusion_cells

if TYPE_CHECKING:
    import polars as pl

# A few flips of every class (so a regressed rare class is never crowded out
# by a large one), and a cap on the whole, so the report stays readable.
NEGATIVE_FLIPS_PER_CLASS = 3
POSITIVE_FLIPS_PER_CLASS = 1
MAX_NEGATIVE_FLIPS = 60
MAX_POSITIVE_FLIPS = 20


def _keyed(cells: list[tuple[str, str | None, int]]) -> dict[tuple[str, str | None], int]:
    return {(gold, predicted): count for gold, predicted, count in cells}


def confusion_change(paired: PairedExamples) -> ConfusionComparison | None:
    """Both sides' confusion matrices over the paired examples (None without gold classes)."""
    frame = paired.frame
    if frame["class"].null_count() == frame.height:
        return None
    base_labels, base_cells = confusion_cells(frame, "class", "baseline_predicted_class")
    cand_labels, cand_cells = confusion_cells(frame, "class", "predicted_class")
    base, cand = _keyed(base_cells), _keyed(cand_cells)
    keys = sorted(base.keys() | cand.keys(), key=lambda k: (k[0], k[1] is None, k[1] or ""))
    return ConfusionComparison(
        labels=sorted(set(base_labels) | set(cand_labels)),
        cells=[
            ConfusionChange(
                gold=gold,
                predicted=predicted,
                baseline=base.get((gold, predicted), 0),
                candidate=cand.get((gold, predicted), 0),
                change=cand.get((gold, predicted), 0) - base.get((gold, predicted), 0),
            )
            for gold, predicted in keys
        ],
    )


def _error_counts(frame: pl.DataFrame, side: str) -> pl.DataFrame:
    """Per error category of one side: count, smallest id and that example's detail."""
    import polars as pl

    detail = "baseline_error_detail" if side == "baseline" else "error_detail"
    return (
        frame.filter(pl.col(f"{side}_error").is_not_null())
        .group_by(pl.col(f"{side}_error").alias("category"))
        .agg(
            pl.len().alias(side),
            pl.col("id").min().alias(f"{side}_id"),
            pl.col(detail).sort_by("id").first().alias(f"{side}_detail"),
        )
    )


def format_errors(paired: PairedExamples) -> list[FormatErrorCount]:
    """Every format-error category of either side, most frequent in the candidate first.

    The example is the candidate's (the output under review) unless only
    the baseline makes that error.
    """
    import polars as pl

    frame = paired.frame
    joined = _error_counts(frame, "baseline").join(
        _error_counts(frame, "candidate"), on="category", how="full", coalesce=True
    )
    joined = joined.with_columns(
        pl.col("baseline").fill_null(0), pl.col("candidate").fill_null(0)
    ).sort(["candidate", "baseline", "category"], descending=[True, True, False])
    result = []
    for row in joined.iter_rows(named=True):
        side: Literal["baseline", "candidate"] = "candidate" if row["candidate"] else "baseline"
        result.append(
            FormatErrorCount(
                category=row["category"],
                baseline=int(row["baseline"]),
                candidate=int(row["candidate"]),
                example_id=row[f"{side}_id"],
                example_side=side,
                detail=row[f"{side}_detail"],
            )
        )
    return result


def _chosen(frame: pl.DataFrame, mask: pl.Expr, per_class: int, cap: int) -> pl.DataFrame:
    """The first ``per_class`` rows of each class (by id) where ``mask`` holds, at most ``cap``."""
    import polars as pl

    picked = (
        frame.filter(mask)
        .with_columns(pl.int_range(pl.len()).over("class").alias("rank_in_class"))
        .filter(pl.col("rank_in_class") < per_class)
    )
    # Round-robin over the classes when the cap bites: every class keeps its first flip.
    return picked.sort(["rank_in_class", "id"]).head(cap).sort("class", "id", nulls_last=True)


def flipped_examples(paired: PairedExamples, rare: dict[str, bool]) -> list[FlippedExample]:
    """Negative flips (a few per class), then positive flips, each by class and id."""
    import polars as pl

    frame = paired.frame  # sorted by id
    base, cand = pl.col("baseline_content_correct"), pl.col("candidate_content_correct")
    chosen = [
        ("negative", _chosen(frame, base & ~cand, NEGATIVE_FLIPS_PER_CLASS, MAX_NEGATIVE_FLIPS)),
        ("positive", _chosen(frame, ~base & cand, POSITIVE_FLIPS_PER_CLASS, MAX_POSITIVE_FLIPS)),
    ]
    return [
        FlippedExample(
            id=row["id"],
            direction=direction,  # type: ignore[arg-type]
            gold_class=row["class"],
            rare=rare.get(f"class:{row['class']}", False),
            baseline_category=row["baseline_category"],
            candidate_category=row["candidate_category"],
            baseline_predicted_class=row["baseline_predicted_class"],
            candidate_predicted_class=row["predicted_class"],
        )
        for direction, rows in chosen
        for row in rows.iter_rows(named=True)
    ]
