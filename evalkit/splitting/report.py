"""Quality figures of a finished split, computed from the final per-row labels.

Nothing here trusts the assignment algorithm's own bookkeeping: counts, class
shares, length quantiles and leaked groups are recomputed from each row's
split and its group key, so the manifest states what the files actually hold.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

from evalkit.records._manifest import Leakage, LengthStats, Quality, SplitReport
from evalkit.splitting.state import BoolArray, IntArray

MAJOR_CLASS_SHARE = 0.05


def _length(row_lengths: pl.Series, unit: str) -> LengthStats | None:
    lengths = row_lengths.drop_nulls().to_numpy()
    if lengths.size == 0:
        return None
    p50, p95 = np.percentile(lengths, [50, 95])
    return LengthStats(
        min=int(lengths.min()),
        p50=round(float(p50), 4),
        p95=round(float(p95), 4),
        max=int(lengths.max()),
        unit=unit,
    )


def groups_per_split(row_split: IntArray, row_key_group: IntArray, n_splits: int) -> BoolArray:
    """(n_key_groups x n_splits) booleans: does the group have items in the split."""
    n_groups = int(row_key_group.max()) + 1 if row_key_group.size else 0
    cells = np.bincount(row_key_group * n_splits + row_split, minlength=n_groups * n_splits)
    return (cells > 0).reshape(n_groups, n_splits)


def build_report(
    frame: pl.DataFrame,
    row_split: IntArray,
    row_key_group: IntArray,
    names: Sequence[str],
    targets: IntArray,
    row_class: IntArray,
    labels: Sequence[str],
    required: Sequence[str],
    lengths: pl.Series | None,
    length_unit: str = "chars",
) -> tuple[dict[str, SplitReport], Quality]:
    """Per-split reports and the overall quality block of the manifest.

    ``row_split`` holds an index into ``names`` per row (``len(names)`` for
    rows left unused); ``row_key_group`` the row's group-key index;
    ``lengths`` the length of each row's text (null: no text), in
    ``length_unit``.
    """
    n_labels = len(labels)
    presence = groups_per_split(row_split, row_key_group, len(names) + 1)
    shares = np.bincount(row_class, minlength=n_labels) / max(frame.height, 1)
    major = shares >= MAJOR_CLASS_SHARE
    cells = np.bincount(row_split * n_labels + row_class, minlength=(len(names) + 1) * n_labels)
    per_split = cells.reshape(len(names) + 1, n_labels)
    reports: dict[str, SplitReport] = {}
    worst, worst_major = 0.0, 0.0
    missing_required: dict[str, list[str]] = {}
    for index, (name, target) in enumerate(zip(names, targets, strict=True)):
        counts = per_split[index]
        n_items = int(counts.sum())
        split_shares = counts / n_items if n_items else np.zeros(n_labels)
        deviation = 100.0 * (split_shares - shares) if n_items else np.zeros(n_labels)
        if n_items:
            worst = max(worst, float(np.abs(deviation).max()))
            worst_major = max(worst_major, float(np.abs(deviation[major]).max(initial=0.0)))
        absent = [label for label, count in zip(labels, counts, strict=True) if count == 0]
        # A split with no target is not expected to cover anything.
        missing_required[name] = [c for c in required if c in absent] if target > 0 else []
        length = None
        if lengths is not None:
            length = _length(lengths.filter(pl.Series(row_split == index)), length_unit)
        reports[name] = SplitReport(
            target=int(target),
            n_items=n_items,
            n_groups=int(presence[:, index].sum()),
            count_deviation=n_items - int(target),
            class_counts={label: int(c) for label, c in zip(labels, counts, strict=True)},
            class_shares={
                label: round(float(s), 6) for label, s in zip(labels, split_shares, strict=True)
            },
            class_share_deviation_pp={
                label: round(float(d), 4) for label, d in zip(labels, deviation, strict=True)
            },
            classes_missing=absent,
            length=length,
        )
    quality = Quality(
        max_count_deviation=max(abs(r.count_deviation) for r in reports.values()),
        max_class_share_deviation_pp=round(worst, 4),
        max_class_share_deviation_pp_major=round(worst_major, 4),
        required_classes=list(required),
        required_classes_missing=missing_required,
        leakage=Leakage(groups_in_several_splits=int((presence.sum(axis=1) > 1).sum())),
    )
    return reports, quality
