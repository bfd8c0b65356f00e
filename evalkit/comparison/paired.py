"""Pairing two results by id and summarising every scope with paired statistics.

The per-example work is a handful of polars expressions (a join and grouped
sums); everything after that operates on one row of counts per scope, so a
million examples cost no more in statistics than a hundred.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from evalkit.comparison import statistics
from evalkit.comparison.results import ScoredResult
from evalkit.records._compare import NewError, Pairing, ScopeComparison

if TYPE_CHECKING:
    import polars as pl

MAX_LISTED_IDS = 10
_PAIRED_COLUMNS = ("format_valid", "content_correct", "error", "category")


@dataclass(frozen=True)
class PairedExamples:
    """The examples present in both results, one row each, sorted by id.

    Columns: ``id``, ``class``, ``slice.<name>`` (from the baseline; both
    share the gold file), the candidate's ``predicted_class`` and
    ``error_detail`` (the baseline's as ``baseline_predicted_class`` and
    ``baseline_error_detail``), and ``baseline_<x>`` / ``candidate_<x>`` for
    ``format_valid``, ``content_correct``, ``error`` and ``category`` (the
    error category, or ``mismatch:<fields>`` for a valid output with wrong
    content).
    """

    frame: pl.DataFrame
    pairing: Pairing
    slice_names: list[str]


def _category(frame: pl.DataFrame, correct_fields: list[str] | None) -> pl.Expr:
    import polars as pl

    fields = [c.removeprefix("match.") for c in frame.columns if c.startswith("match.")]
    if correct_fields is not None:
        fields = [field for field in fields if field in correct_fields]
    if fields:
        # concat_str over per-field pieces: a list column per row would cost
        # seconds on a million examples.
        failed = pl.concat_str(
            [pl.when(~pl.col(f"match.{f}")).then(pl.lit(f"{f},")) for f in fields],
            ignore_nulls=True,
        ).str.strip_suffix(",")
        mismatch = pl.when(failed != "").then("mismatch:" + failed).otherwise(pl.lit("mismatch"))
    else:
        mismatch = pl.lit("mismatch")
    return (
        pl.when(pl.col("error").is_not_null())
        .then(pl.col("error"))
        .when(~pl.col("content_correct"))
        .then(mismatch)
        .otherwise(None)
        .alias("category")
    )


def _side(result: ScoredResult, correct_fields: list[str] | None, prefix: str) -> pl.DataFrame:
    import polars as pl

    frame = result.examples
    side = frame.select(
        "id",
        pl.col("format_valid"),
        pl.col("content_correct"),
        pl.col("error").cast(pl.String),
        _category(frame, correct_fields),
    )
    return side.rename({c: f"{prefix}_{c}" for c in _PAIRED_COLUMNS})


def _details(result: ScoredResult, prefix: str) -> pl.DataFrame:
    """``id``, ``predicted_class`` and ``error_detail`` (null columns when not recorded)."""
    import polars as pl

    frame = result.examples
    return frame.select(
        "id",
        *(
            (
                pl.col(c).cast(pl.String) if c in frame.columns else pl.lit(None, dtype=pl.String)
            ).alias(prefix + c)
            for c in ("predicted_class", "error_detail")
        ),
    )


def _listed(ids: pl.Series) -> list[str]:
    return ids.sort().head(MAX_LISTED_IDS).to_list()


def pair_examples(
    baseline: ScoredResult, candidate: ScoredResult, correct_fields: list[str] | None
) -> PairedExamples:
    """Join the two results on id; count and list the ids only one of them has."""
    import polars as pl

    slice_names = [name for name in baseline.slice_names if name in candidate.slice_names]
    gold_columns = ["id", "class", *(f"slice.{name}" for name in slice_names)]
    base = (
        baseline.examples.select(gold_columns)
        .join(_side(baseline, correct_fields, "baseline"), on="id")
        .join(_details(baseline, "baseline_"), on="id")
    )
    cand = _side(candidate, correct_fields, "candidate").join(_details(candidate, ""), on="id")
    frame = base.join(cand, on="id", how="inner").sort("id")
    only_base = only_cand = pl.Series("id", [], dtype=pl.String)
    if frame.height < max(baseline.examples.height, candidate.examples.height):
        only_base = baseline.examples.join(candidate.examples, on="id", how="anti")["id"]
        only_cand = candidate.examples.join(baseline.examples, on="id", how="anti")["id"]
    pairing = Pairing(
        paired=frame.height,
        only_in_baseline=len(only_base),
        only_in_candidate=len(only_cand),
        only_in_baseline_ids=_listed(only_base),
        only_in_candidate_ids=_listed(only_cand),
    )
    return PairedExamples(frame, pairing, slice_names)


def _count_expressions(grouped: bool) -> list[pl.Expr]:
    """Sums per scope; ``grouped`` for a group_by (where a column becomes a list by itself)."""
    import polars as pl

    base, cand = pl.col("baseline_content_correct"), pl.col("candidate_content_correct")
    base_valid, cand_valid = pl.col("baseline_format_valid"), pl.col("candidate_format_valid")
    flip_ids = (
        pl.col("id").filter(base & ~cand).sort().head(MAX_LISTED_IDS).alias("negative_flip_ids")
    )
    format_flip_ids = (
        pl.col("id")
        .filter(base_valid & ~cand_valid)
        .sort()
        .head(MAX_LISTED_IDS)
        .alias("format_negative_flip_ids")
    )
    return [
        pl.len().cast(pl.Int64).alias("n"),
        base.sum().cast(pl.Int64).alias("baseline_correct"),
        cand.sum().cast(pl.Int64).alias("candidate_correct"),
        (base & ~cand).sum().cast(pl.Int64).alias("negative_flips"),
        (~base & cand).sum().cast(pl.Int64).alias("positive_flips"),
        base_valid.sum().cast(pl.Int64).alias("baseline_valid"),
        cand_valid.sum().cast(pl.Int64).alias("candidate_valid"),
        (base_valid & ~cand_valid).sum().cast(pl.Int64).alias("format_negative_flips"),
        (~base_valid & cand_valid).sum().cast(pl.Int64).alias("format_positive_flips"),
        flip_ids if grouped else flip_ids.implode(),
        format_flip_ids if grouped else format_flip_ids.implode(),
    ]


def scope_counts(paired: PairedExamples) -> dict[str, pl.DataFrame]:
    """One row of counts per scope, in three families: overall, classes, slices."""
    import polars as pl

    frame = paired.frame
    counts = _count_expressions(grouped=False)
    overall = frame.select(counts).with_columns(pl.lit("overall").alias("scope"))
    classes = (
        frame.filter(pl.col("class").is_not_null())
        .group_by("class")
        .agg(_count_expressions(grouped=True))
        .sort("class")
        .with_columns(("class:" + pl.col("class")).alias("scope"))
        .drop("class")
    )
    slices = [
        frame.filter(pl.col(f"slice.{name}").fill_null(False))
        .select(counts)
        .with_columns(pl.lit(f"slice:{name}").alias("scope"))
        for name in paired.slice_names
    ]
    empty = overall.clear()
    return {
        "overall": overall,
        "classes": classes if classes.height else empty,
        "slices": pl.concat(slices) if slices else empty,
    }


def _shares(numerator: np.ndarray, n: np.ndarray) -> list[float | None]:
    """numerator / n per scope; None for an empty scope."""
    return [float(x) / int(m) if m > 0 else None for x, m in zip(numerator, n, strict=True)]


def _intervals(low: np.ndarray, high: np.ndarray) -> list[tuple[float, float] | None]:
    return [None if np.isnan(a) else (float(a), float(b)) for a, b in zip(low, high, strict=True)]


def _bootstrap(
    positive: np.ndarray,
    negative: np.ndarray,
    n: np.ndarray,
    streams: list[str],
    seed: int,
    resamples: int,
) -> list[tuple[float, float] | None]:
    """Paired-bootstrap interval per scope, each from its own named random stream."""
    return [
        statistics.paired_bootstrap_delta_ci(
            int(positive[i]),
            int(negative[i]),
            int(n[i]),
            statistics.scope_seed(seed, stream),
            resamples,
        )
        for i, stream in enumerate(streams)
    ]


def _holm_over_tested(p: np.ndarray, rare: list[bool]) -> np.ndarray:
    """Holm-adjust across the scopes whose drops may be judged by significance.

    Rare classes are judged by their threshold alone, so they are no part of
    the tested family: counting them would inflate every common class's
    adjusted p. Their own figure is adjusted across all classes, for reading only.
    """
    adjusted = statistics.holm_adjust(p)
    common = ~np.asarray(rare, dtype=bool)
    if common.any():
        adjusted[common] = statistics.holm_adjust(p[common])
    return adjusted


def compare_scopes(
    counts: pl.DataFrame, rare: dict[str, bool], seed: int, resamples: int
) -> list[ScopeComparison]:
    """Statistics of every scope in one family; Holm adjusts across the family."""
    c: dict[str, Any] = {
        name: counts[name].to_numpy() for name in counts.columns if counts[name].dtype.is_numeric()
    }
    n, positive, negative = c["n"], c["positive_flips"], c["negative_flips"]
    format_positive, format_negative = c["format_positive_flips"], c["format_negative_flips"]
    scopes: list[str] = counts["scope"].to_list()
    p = statistics.mcnemar_exact_p(negative, positive)
    fields: dict[str, list[Any]] = {
        "scope": scopes,
        "n": n.tolist(),
        "rare": [rare.get(scope, False) for scope in scopes],
        "baseline_correct": c["baseline_correct"].tolist(),
        "candidate_correct": c["candidate_correct"].tolist(),
        "baseline_accuracy": _shares(c["baseline_correct"], n),
        "candidate_accuracy": _shares(c["candidate_correct"], n),
        "baseline_accuracy_ci": _intervals(*statistics.wilson_interval(c["baseline_correct"], n)),
        "candidate_accuracy_ci": _intervals(*statistics.wilson_interval(c["candidate_correct"], n)),
        "delta": _shares(positive - negative, n),
        "delta_ci": _bootstrap(positive, negative, n, scopes, seed, resamples),
        "negative_flips": negative.tolist(),
        "positive_flips": positive.tolist(),
        "negative_flip_rate": _shares(negative, n),
        "mcnemar_p": p.tolist(),
        "holm_p": _holm_over_tested(p, [rare.get(scope, False) for scope in scopes]).tolist(),
        "negative_flip_ids": counts["negative_flip_ids"].to_list(),
        "baseline_format_validity": _shares(c["baseline_valid"], n),
        "candidate_format_validity": _shares(c["candidate_valid"], n),
        "format_delta": _shares(format_positive - format_negative, n),
        "format_delta_ci": _bootstrap(
            format_positive, format_negative, n, [f"format|{s}" for s in scopes], seed, resamples
        ),
        "format_negative_flips": format_negative.tolist(),
        "format_positive_flips": format_positive.tolist(),
        "format_mcnemar_p": statistics.mcnemar_exact_p(format_negative, format_positive).tolist(),
        "format_negative_flip_ids": counts["format_negative_flip_ids"].to_list(),
    }
    return [
        ScopeComparison(**{key: values[i] for key, values in fields.items()})
        for i in range(len(scopes))
    ]


def new_errors(paired: PairedExamples) -> list[NewError]:
    """Errors the candidate makes where the baseline was right or wrong differently.

    Grouped by the candidate's category, most frequent first, with the
    smallest id as the example: the reader sees each new failure mode once.
    """
    import polars as pl

    frame = paired.frame.filter(
        pl.col("candidate_category").is_not_null()
        & (
            pl.col("baseline_category").is_null()
            | (pl.col("baseline_category") != pl.col("candidate_category"))
        )
    )
    grouped = (
        frame.sort("id")
        .group_by("candidate_category", maintain_order=True)
        .agg(
            pl.len().alias("count"),
            pl.col("id").first().alias("example_id"),
            pl.col("baseline_category").first(),
            pl.col("class").first(),
            pl.col("predicted_class").first(),
            pl.col("error_detail").first(),
        )
        .sort(["count", "candidate_category"], descending=[True, False])
    )
    return [
        NewError(
            category=row["candidate_category"],
            count=row["count"],
            example_id=row["example_id"],
            baseline_category=row["baseline_category"],
            gold_class=row["class"],
            predicted_class=row["predicted_class"],
            detail=row["error_detail"],
        )
        for row in grouped.iter_rows(named=True)
    ]
