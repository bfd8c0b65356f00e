"""Benchmark ``evalkit.split`` against scikit-learn's StratifiedGroupKFold recipe.

Run: ``.venv/bin/python bench/bench_split.py`` (``--sizes 100000,1000000,10000000``
to choose the evalkit sizes, ``--reference-size`` for the comparison).

Data: ``n`` items in about ``n/5`` groups of skewed sizes (1 to 30), eight
classes with a long tail (two rare ones), a class per group with 15% of items
drifting to another class. Target: 70/15/15 by items.

* At the reference size, both evalkit and the two-stage StratifiedGroupKFold
  recipe (test = one fold of k = round(1/0.15); val = one fold of
  k = round(0.85/0.15) of the rest) run in the same process on the same data;
  the ratio of their times is the figure that matters on a shared machine.
* evalkit alone at each size, each in a fresh subprocess so that the peak
  resident memory (ru_maxrss) is that size's own.

Quality (count deviation, worst class-share deviation in points, rare class
missing from a split) is reported for both.
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import subprocess
import sys
import time
from datetime import date
from pathlib import Path

import numpy as np
import polars as pl

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CLASSES = ["a", "b", "c", "d", "e", "f", "rare1", "rare2"]
CLASS_WEIGHTS = np.array([0.24, 0.2, 0.17, 0.14, 0.12, 0.1, 0.02, 0.01])
RATIOS = (0.7, 0.15, 0.15)


def make_data(n_items: int, seed: int = 0) -> pl.DataFrame:
    """Items in skewed groups; each group has a main class, some items drift."""
    rng = np.random.default_rng(seed)
    sizes = np.arange(1, 31)
    weights = sizes**-1.3
    mean = (sizes * weights).sum() / weights.sum()
    n_groups_guess = int(n_items / mean * 1.2) + 10
    group_sizes = rng.choice(sizes, n_groups_guess, p=weights / weights.sum())
    cumulative = np.cumsum(group_sizes)
    n_groups = int(np.searchsorted(cumulative, n_items)) + 1
    group = np.repeat(np.arange(n_groups), group_sizes[:n_groups])[:n_items]
    main = rng.choice(len(CLASSES), n_groups, p=CLASS_WEIGHTS)
    label = main[group]
    drift = rng.random(n_items) < 0.15
    label[drift] = rng.choice(6, int(drift.sum()))
    order = rng.permutation(n_items)
    return pl.DataFrame(
        {
            "id": np.arange(n_items)[order],
            "group": group[order],
            "label": np.asarray(CLASSES)[label][order],
        }
    )


def quality(labels: np.ndarray, splits: np.ndarray, targets: list[int]) -> dict[str, float]:
    """Count deviation, worst class-share deviation (pp) and rare classes missing."""
    names, codes = np.unique(labels, return_inverse=True)
    whole = np.bincount(codes, minlength=names.size) / codes.size
    major = whole >= 0.05
    worst, worst_major, missing = 0.0, 0.0, 0
    count_dev = 0
    for index, target in enumerate(targets):
        mask = splits == index
        count_dev = max(count_dev, abs(int(mask.sum()) - target))
        counts = np.bincount(codes[mask], minlength=names.size)
        if mask.any():
            deviation = np.abs(100 * (counts / mask.sum() - whole))
            worst = max(worst, float(deviation.max()))
            worst_major = max(worst_major, float(deviation[major].max()))
        missing += int((counts == 0).sum())
    return {
        "max_count_deviation": count_dev,
        "max_class_share_deviation_pp": round(worst, 3),
        "max_major_class_share_deviation_pp": round(worst_major, 3),
        "class_split_pairs_missing": missing,
    }


def targets_for(n_items: int) -> list[int]:
    from evalkit.splitting.inputs import resolve_targets

    return [int(t) for t in resolve_targets(n_items, ["train", "val", "test"], None, RATIOS, "")]


def run_evalkit(frame: pl.DataFrame) -> tuple[float, np.ndarray]:
    from evalkit.splitting.api import split

    started = time.perf_counter()
    result = split(frame, group=["group"], stratify="label", ratios=RATIOS, id_column="id", seed=0)
    seconds = time.perf_counter() - started
    code = {"train": 0, "val": 1, "test": 2}
    joined = frame.select("id").join(result.assignments, on="id", maintain_order="left")
    return seconds, joined["split"].replace_strict(code).to_numpy()


def run_sgkf(frame: pl.DataFrame) -> tuple[float, np.ndarray]:
    from sklearn.model_selection import StratifiedGroupKFold

    labels = frame["label"].to_numpy()
    groups = frame["group"].to_numpy()
    index = np.arange(frame.height)
    started = time.perf_counter()
    outer = StratifiedGroupKFold(n_splits=round(1 / RATIOS[2]), shuffle=True, random_state=0)
    rest, test = next(outer.split(index, labels, groups))
    inner = StratifiedGroupKFold(
        n_splits=round((1 - RATIOS[2]) / RATIOS[1]), shuffle=True, random_state=0
    )
    _train_local, val_local = next(inner.split(rest, labels[rest], groups[rest]))
    seconds = time.perf_counter() - started
    splits = np.zeros(frame.height, dtype=np.int64)
    splits[rest[val_local]] = 1
    splits[test] = 2
    return seconds, splits


def run_gss(frame: pl.DataFrame, seed: int) -> np.ndarray:
    """GroupShuffleSplit, two stages: test share of groups, then val of the rest."""
    from sklearn.model_selection import GroupShuffleSplit

    groups = frame["group"].to_numpy()
    index = np.arange(frame.height)
    outer = GroupShuffleSplit(n_splits=1, test_size=RATIOS[2], random_state=seed)
    rest, test = next(outer.split(index, groups=groups))
    inner = GroupShuffleSplit(n_splits=1, test_size=RATIOS[1] / (1 - RATIOS[2]), random_state=seed)
    _, val_local = next(inner.split(rest, groups=groups[rest]))
    splits = np.zeros(frame.height, dtype=np.int64)
    splits[rest[val_local]] = 1
    splits[test] = 2
    return splits


def small_data(n_seeds: int) -> dict[str, dict[str, object]]:
    """The example tickets (1,200 items, ~240 conversations), 840/180/180, many seeds."""
    sys.path.insert(0, str(ROOT / "examples" / "tickets"))
    from generate import generate

    tools = {"evalkit": [], "sgkf": [], "group_shuffle_split": []}
    for seed in range(n_seeds):
        tickets = pl.DataFrame(generate(1200, seed))
        frame = tickets.select(
            pl.col("ticket_id").str.slice(1).cast(pl.Int64).alias("id"),
            pl.col("conversation_id").alias("group"),
            pl.col("category").alias("label"),
        )
        labels = frame["label"].to_numpy()
        targets = [840, 180, 180]
        ours = run_evalkit(frame)[1]
        theirs = run_sgkf(frame)[1]
        shuffled = run_gss(frame, seed)
        for name, splits in (
            ("evalkit", ours),
            ("sgkf", theirs),
            ("group_shuffle_split", shuffled),
        ):
            row = quality(labels, splits, targets)
            row["test_items"] = int((splits == 2).sum())
            tools[name].append(row)
    summary: dict[str, dict[str, object]] = {}
    for name, rows in tools.items():
        summary[name] = {
            "test_items_range": [
                min(r["test_items"] for r in rows),
                max(r["test_items"] for r in rows),
            ],
            "max_count_deviation": max(r["max_count_deviation"] for r in rows),
            "mean_worst_class_share_deviation_pp": round(
                float(np.mean([r["max_class_share_deviation_pp"] for r in rows])), 2
            ),
            "max_worst_class_share_deviation_pp": max(
                r["max_class_share_deviation_pp"] for r in rows
            ),
            "max_worst_major_class_share_deviation_pp": max(
                r["max_major_class_share_deviation_pp"] for r in rows
            ),
            "seeds_with_a_class_missing_from_a_split": sum(
                r["class_split_pairs_missing"] > 0 for r in rows
            ),
        }
    return summary


def child(n_items: int) -> None:
    """Measure evalkit alone at one size; print one JSON line."""
    frame = make_data(n_items)
    run_evalkit(make_data(1000, seed=1))  # imports, so the time is the split's own
    rss_data_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    seconds, splits = run_evalkit(frame)
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    row = {
        "n_items": n_items,
        "n_groups": int(frame["group"].n_unique()),
        "seconds": round(seconds, 3),
        "peak_rss_mb": round(peak_kb / 1024, 1),
        "rss_after_data_mb": round(rss_data_kb / 1024, 1),
        **quality(frame["label"].to_numpy(), splits, targets_for(n_items)),
    }
    print(json.dumps(row))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference-size", type=int, default=100_000)
    parser.add_argument("--sizes", default="100000,1000000,10000000")
    parser.add_argument("--seeds", type=int, default=20, help="seeds of the small-data run")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return
    print(f"# {date.today()} {platform.machine()} {platform.python_version()}")
    print(json.dumps({"small_data_20_seeds": small_data(args.seeds)}))
    frame = make_data(args.reference_size)
    targets = targets_for(frame.height)
    labels = frame["label"].to_numpy()
    run_evalkit(frame.head(1000))  # warm the imports
    ours_seconds, ours = run_evalkit(frame)
    sgkf_seconds, theirs = run_sgkf(frame)
    print(
        json.dumps(
            {
                "reference_size": frame.height,
                "evalkit_seconds": round(ours_seconds, 3),
                "sgkf_seconds": round(sgkf_seconds, 3),
                "speedup": round(sgkf_seconds / ours_seconds, 1),
                "evalkit_quality": quality(labels, ours, targets),
                "sgkf_quality": quality(labels, theirs, targets),
            }
        )
    )
    for size in (int(s) for s in args.sizes.split(",") if s):
        completed = subprocess.run(
            [sys.executable, __file__, "--child", str(size)],
            capture_output=True,
            text=True,
            check=True,
        )
        print(completed.stdout.strip())


if __name__ == "__main__":
    main()
