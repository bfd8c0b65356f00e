"""Per-split figures: token count quantiles, supervised ratio, what truncation does."""

from __future__ import annotations

import numpy as np

from evalkit.records._tokens import Quantiles, TokenCounts, Truncation
from evalkit.tokens.figures import RowFigures


def quantiles(values: np.ndarray) -> Quantiles:
    """p50/p95/p99 (numpy's default linear interpolation) and the maximum."""
    p50, p95, p99 = np.percentile(values, [50, 95, 99])
    return Quantiles(
        p50=round(float(p50), 4),
        p95=round(float(p95), 4),
        p99=round(float(p99), 4),
        max=int(values.max()),
    )


def token_counts(figures: RowFigures) -> TokenCounts | None:
    """Quantiles of the prompt (unsupervised), answer (supervised) and total tokens."""
    if figures.n == 0:
        return None
    return TokenCounts(
        prompt=quantiles(figures.total - figures.supervised),
        answer=quantiles(figures.supervised),
        total=quantiles(figures.total),
    )


def supervised_ratio(figures: RowFigures) -> float | None:
    """Supervised tokens over all tokens of the split (None without tokens)."""
    total = int(figures.total.sum())
    return round(int(figures.supervised.sum()) / total, 6) if total else None


def truncation(figures: RowFigures, limit: int | None) -> Truncation | None:
    """What a length limit cuts: examples over it, answers cut partly or fully, stops lost."""
    if limit is None:
        return None
    supervised, kept = figures.supervised, figures.kept_supervised
    return Truncation(
        max_seq_length=limit,
        over_limit=int((figures.total > limit).sum()),
        answer_cut_partly=int(((kept > 0) & (kept < supervised)).sum()),
        answer_cut_fully=int(((supervised > 0) & (kept == 0)).sum()),
        eos_lost=int(figures.eos_lost.sum()),
    )
