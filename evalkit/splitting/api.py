"""``evalkit.split``: group-aware, exact-count, stratified splitting.

This is the one library call behind ``evalkit split``. It reads (or takes) a
table, checks it, builds groups in a canonical order, assigns them (see
``assign``), and returns the split frames, the per-item assignments and the
manifest. Writing is a separate step (:meth:`SplitResult.write`) so that a
caller can inspect a split before anything touches the disk.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from evalkit._version import __version__
from evalkit.errors import InfeasibleSplit, UsageError
from evalkit.io import TableFormat, atomic_directory, read_table, sha256_file, write_table
from evalkit.splitting.assign import assign_groups
from evalkit.splitting.freeze import frozen_rows
from evalkit.splitting.groups import (
    NullGroupPolicy,
    build_table,
    class_index,
    group_key,
    key_groups,
    merge_clusters,
    pin_frozen,
)
from evalkit.splitting.inputs import check_names, check_table, resolve_targets
from evalkit.splitting.lengths import load_tokenizer
from evalkit.splitting.manifest import (
    Freezing,
    InputInfo,
    Merging,
    SplitManifest,
    SplitOptions,
)
from evalkit.splitting.report import build_report
from evalkit.splitting.state import IntArray, Problem, required_classes


@dataclass(frozen=True)
class SplitResult:
    """A finished split: the rows of each split, the assignments and the manifest."""

    frames: dict[str, pl.DataFrame]
    assignments: pl.DataFrame
    manifest: SplitManifest

    def write(self, out: Path | str, fmt: TableFormat = "parquet", force: bool = False) -> None:
        """Write ``<name>.<fmt>`` per split, ``assignments.parquet`` and ``manifest.json``.

        All files are written into a temporary folder that replaces ``out`` only
        once everything succeeded; an existing ``out`` needs ``force``, and is
        never replaced if it holds the input or is a folder this did not write.
        """
        source = self.manifest.input.path
        inputs = [Path(source)] if source is not None else []
        with atomic_directory(Path(out), force, inputs=inputs, marker="manifest.json") as staging:
            for name, frame in self.frames.items():
                write_table(frame, staging / f"{name}.{fmt}", fmt)
            write_table(self.assignments, staging / "assignments.parquet", "parquet")
            manifest = self.manifest.model_dump(mode="json")
            text = json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"
            (staging / "manifest.json").write_text(text, encoding="utf-8")


def split(
    data: pl.DataFrame | Path | str,
    *,
    group: Sequence[str],
    sizes: Sequence[int] | None = None,
    ratios: Sequence[float] | None = None,
    names: Sequence[str] = ("train", "val", "test"),
    stratify: str | None = None,
    seed: int = 0,
    id_column: str | None = None,
    text: str | None = None,
    null_group: NullGroupPolicy = "error",
    tolerance: int | None = None,
    near_dup: float | None = None,
    freeze: Path | str | None = None,
    tokenizer: Path | str | None = None,
) -> SplitResult:
    """Split ``data`` into named parts, keeping every group whole.

    Item counts hit ``sizes`` (or ``ratios`` of the rows) exactly when the
    group sizes allow, else the closest found; with ``stratify`` each split's
    class shares track the whole and every class present in at least as many
    groups as there are splits appears in each. Same data and seed give the
    same split whatever the row order. Raises an ``EvalkitError`` subclass on
    bad input, and ``InfeasibleSplit`` when a count misses by more than
    ``tolerance`` items. Lengths of ``text`` are in characters, or in tokens of
    a local ``tokenizer`` (a tokenizer.json, or a folder holding one).
    """
    path = Path(data) if isinstance(data, str | Path) else None
    frame = read_table(path) if path is not None else data
    assert isinstance(frame, pl.DataFrame)
    source = str(path) if path is not None else "input table"
    names = list(names)
    check_names(names)
    if tolerance is not None and tolerance < 0:
        raise UsageError(f"--tolerance: must be >= 0 items, got {tolerance}")
    if near_dup is not None and not 0.0 < near_dup <= 1.0:
        raise UsageError(f"--near-dup: a Jaccard threshold in (0, 1], got {near_dup}")
    if near_dup is not None and text is None:
        raise UsageError("--near-dup needs --text COL: the column whose texts are compared")
    if tokenizer is not None and text is None:
        raise UsageError("--tokenizer needs --text COL: the column whose tokens are counted")
    loaded_tokenizer = load_tokenizer(Path(tokenizer)) if tokenizer is not None else None
    check_table(
        frame, source=source, group=group, id_column=id_column, stratify=stratify, text=text
    )
    targets = resolve_targets(frame.height, names, sizes, ratios, source)
    unused = frame.height - int(targets.sum())
    all_targets = np.r_[targets, unused] if unused else targets

    key_group, n_null = key_groups(frame, group, id_column, null_group, source)
    row_group = key_group
    merging = None
    if near_dup is not None:
        from evalkit.leakage import duplicate_components

        assert text is not None
        clusters = duplicate_components(frame[text], near_dup, seed=seed)
        row_group, n_merged, largest = merge_clusters(key_group, np.asarray(clusters))
        merging = Merging(threshold=near_dup, merged_groups=n_merged, largest_merged_group=largest)
    n_groups = int(row_group.max()) + 1
    freezing, pinned = None, None
    if freeze is not None:
        freeze_path = Path(freeze)
        row_frozen = frozen_rows(frame, freeze_path, group, id_column, names)
        pinned, n_frozen, conflicts = pin_frozen(row_group, row_frozen, n_groups)
        freezing = Freezing(
            path=str(freeze_path),
            sha256=sha256_file(freeze_path),
            frozen_groups=n_frozen,
            new_groups=n_groups - n_frozen,
            conflicts=conflicts,
        )
    row_class, labels = class_index(frame, stratify)
    table = build_table(row_group, row_class, len(labels), pinned)
    covered = np.r_[np.ones(len(names), bool), np.zeros(1 if unused else 0, bool)]
    problem = Problem(targets=all_targets, covered_splits=covered & (all_targets > 0), seed=seed)
    row_split = assign_groups(table, problem)[row_group]

    split_names = pl.Series("split", [*names, None], dtype=pl.String)
    split_column = split_names.gather(row_split)
    order = frame[id_column].arg_sort().to_numpy() if id_column is not None else None
    assignments = _assignments(frame, group, id_column, split_column, order)
    frames = _split_frames(frame, row_split, names, order)
    options = SplitOptions(
        group=list(group),
        stratify=stratify,
        sizes=list(sizes) if sizes is not None else None,
        ratios=list(ratios) if ratios is not None else None,
        names=names,
        seed=seed,
        id=id_column,
        text=text,
        null_group=null_group,
        tolerance=tolerance,
        near_dup=near_dup,
        freeze=str(freeze) if freeze is not None else None,
        tokenizer=str(tokenizer) if tokenizer is not None else None,
    )
    required = [labels[i] for i in np.flatnonzero(required_classes(table, problem))]
    splits, quality = build_report(
        frame,
        row_split,
        key_group,
        names,
        targets,
        row_class,
        labels,
        required if stratify else [],
        text,
        loaded_tokenizer,
    )
    manifest = SplitManifest(
        evalkit_version=__version__,
        seed=seed,
        input=InputInfo(
            path=str(path) if path is not None else None,
            sha256=sha256_file(path) if path is not None else None,
            n_items=frame.height,
            n_groups=n_groups,
        ),
        options=options,
        targets={name: int(t) for name, t in zip(names, targets, strict=True)},
        splits=splits,
        unused=unused,
        null_groups=n_null,
        merging=merging,
        freezing=freezing,
        quality=quality,
    )
    if tolerance is not None and quality.max_count_deviation > tolerance:
        worst = max(splits, key=lambda name: abs(splits[name].count_deviation))
        report = splits[worst]
        raise InfeasibleSplit(
            f"{source}: split {worst!r} gets {report.n_items} items for a target of "
            f"{report.target} (off by {report.count_deviation:+d}, --tolerance {tolerance}); "
            "the group sizes do not allow closer counts: change --sizes or raise --tolerance"
        )
    return SplitResult(frames=frames, assignments=assignments, manifest=manifest)


def _assignments(
    frame: pl.DataFrame,
    group: Sequence[str],
    id_column: str | None,
    split: pl.Series,
    order: IntArray | None,
) -> pl.DataFrame:
    """``id, group, split`` per item; the id is the row number when there is no id column."""
    ids = pl.col(id_column) if id_column is not None else pl.int_range(pl.len(), dtype=pl.Int64)
    table = frame.select(ids.alias("id"), group_key(group).alias("group")).with_columns(split)
    return table[order] if order is not None else table


def _split_frames(
    frame: pl.DataFrame, row_split: IntArray, names: Sequence[str], order: IntArray | None
) -> dict[str, pl.DataFrame]:
    """The rows of each named split, sorted by id when there is one (input order otherwise)."""
    if order is not None:
        frame, row_split = frame[order], row_split[order]
    return {name: frame.filter(pl.Series(row_split == index)) for index, name in enumerate(names)}
