"""Benchmark ``ExactStratifiedGroupKFold`` against scikit-learn's ``StratifiedGroupKFold``.

Run: ``nice .venv/bin/python bench/bench_kfold.py`` (``--sizes 100000,1000000``
to choose the sizes, ``--process-size 0`` to skip the whole-process run).

Data: ``bench_split.make_data`` — ``n`` items in about ``n/5.4`` groups of
skewed sizes (1 to 30), eight classes with a long tail, 15% of the items
drifting from their group's class. k = 5 folds, ``shuffle=True``,
``random_state=0`` for both.

* **Fold generation**, in one process, on the same arrays: the whole of
  ``list(cv.split(X, y, groups))`` (checks, grouping, assignment, the index
  arrays), evalkit first, then scikit-learn; the ratio of the two times is
  the figure that holds on a shared machine. Each splitter is warmed on a
  small sample first, so imports are not timed.
* **Whole process**, at ``--process-size``: a fresh ``python`` that imports
  its splitter, reads the same Parquet file and generates the folds, timed
  from outside (start-up and imports included), evalkit and scikit-learn
  alternating, ``--repeat`` times each (medians).

Quality, computed here from the yielded indices: the spread of test-fold
sizes against ⌊n/k⌋/⌈n/k⌉ (exact = 0 items off) and the worst class-share
deviation of a test fold from the whole, in points.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(BENCH))

from bench_split import make_data  # noqa: E402

K = 5
SEED = 0
# A fresh process: import one splitter, read the data, generate every fold.
CHILD = f"""
import sys
import polars as pl
if sys.argv[1] == "evalkit":
    from evalkit.model_selection import ExactStratifiedGroupKFold as Splitter
else:
    from sklearn.model_selection import StratifiedGroupKFold as Splitter
frame = pl.read_parquet(sys.argv[2])
y, groups = frame["label"].to_numpy(), frame["group"].to_numpy()
folds = list(Splitter({K}, shuffle=True, random_state={SEED}).split(y, y, groups))
assert sum(test.size for _, test in folds) == frame.height
"""


def splitters() -> dict[str, Any]:
    from sklearn.model_selection import StratifiedGroupKFold

    from evalkit.model_selection import ExactStratifiedGroupKFold

    return {
        "evalkit": ExactStratifiedGroupKFold(K, shuffle=True, random_state=SEED),
        "sgkf": StratifiedGroupKFold(K, shuffle=True, random_state=SEED),
    }


def quality(y: np.ndarray, folds: list[tuple[np.ndarray, np.ndarray]]) -> dict[str, object]:
    """Test-fold sizes against the exact ones, and the worst class-share deviation (pp)."""
    n = y.size
    exact = sorted(n // K + (i < n % K) for i in range(K))
    sizes = sorted(int(test.size) for _, test in folds)
    labels, codes = np.unique(y, return_inverse=True)
    whole = np.bincount(codes, minlength=labels.size) / n
    worst = max(
        float(np.abs(np.bincount(codes[test], minlength=labels.size) / test.size - whole).max())
        for _, test in folds
    )
    return {
        "test_fold_sizes": sizes,
        "items_off_exact": int(sum(abs(a - b) for a, b in zip(sizes, exact, strict=True))),
        "worst_class_share_deviation_pp": round(100 * worst, 4),
    }


def fold_generation(n_items: int) -> dict[str, object]:
    """Both splitters on the same data, in this process; times and quality."""
    frame = make_data(n_items, seed=SEED)
    y, groups = frame["label"].to_numpy(), frame["group"].to_numpy()
    X = np.zeros(n_items)
    warm = make_data(2_000, seed=1)
    row: dict[str, object] = {"n_items": n_items, "n_groups": int(frame["group"].n_unique())}
    for name, cv in splitters().items():
        wy, wg = warm["label"].to_numpy(), warm["group"].to_numpy()
        list(cv.split(wy, wy, wg))
        started, cpu_started = time.perf_counter(), time.process_time()
        folds = list(cv.split(X, y, groups))
        row[f"{name}_seconds"] = round(time.perf_counter() - started, 3)
        row[f"{name}_cpu_seconds"] = round(time.process_time() - cpu_started, 3)
        row[f"{name}_quality"] = quality(y, folds)
    row["speedup"] = round(float(row["sgkf_seconds"]) / float(row["evalkit_seconds"]), 1)
    row["cpu_speedup"] = round(
        float(row["sgkf_cpu_seconds"]) / float(row["evalkit_cpu_seconds"]), 1
    )
    return row


def whole_process(n_items: int, repeat: int) -> dict[str, object]:
    """Fresh processes, evalkit and scikit-learn alternating; median wall seconds."""
    with tempfile.TemporaryDirectory(prefix="bench-kfold-") as folder:
        path = Path(folder) / "data.parquet"
        make_data(n_items, seed=SEED).write_parquet(path)
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        times: dict[str, list[float]] = {"evalkit": [], "sgkf": []}
        cpu: dict[str, list[float]] = {"evalkit": [], "sgkf": []}
        for _ in range(repeat):
            for name in times:
                before = _children_cpu()
                started = time.perf_counter()
                subprocess.run([sys.executable, "-c", CHILD, name, str(path)], check=True, env=env)
                times[name].append(time.perf_counter() - started)
                cpu[name].append(_children_cpu() - before)
    wall = {name: statistics.median(values) for name, values in times.items()}
    used = {name: statistics.median(values) for name, values in cpu.items()}
    return {
        "process_n_items": n_items,
        "evalkit_process_seconds": round(wall["evalkit"], 3),
        "sgkf_process_seconds": round(wall["sgkf"], 3),
        "process_speedup": round(wall["sgkf"] / wall["evalkit"], 1),
        "evalkit_process_cpu_seconds": round(used["evalkit"], 3),
        "sgkf_process_cpu_seconds": round(used["sgkf"], 3),
        "process_cpu_speedup": round(used["sgkf"] / used["evalkit"], 1),
        "repeat": repeat,
    }


def _children_cpu() -> float:
    """User + system seconds of the finished child processes so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--process-size", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3, help="whole-process runs of each")
    args = parser.parse_args()
    import sklearn

    print(
        f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} {platform.machine()} "
        f"{os.cpu_count()} cores, Python {platform.python_version()}, "
        f"scikit-learn {sklearn.__version__}, load {os.getloadavg()[0]:.1f}"
    )
    for size in (int(s) for s in args.sizes.split(",") if s):
        print(json.dumps(fold_generation(size)), flush=True)
    if args.process_size:
        print(json.dumps(whole_process(args.process_size, args.repeat)), flush=True)
    print(f"# load at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
