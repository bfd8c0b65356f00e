"""Validate ``evalkit plan`` against published peaks, and time it.

Run: ``.venv/bin/python bench/bench_plan.py`` (``--markdown`` prints only the
validation table that docs/plan.md carries).

* Validation: every row of ``bench/plan_measurements.csv`` (a published run
  with its source file, commit and row) beside the bound of its phase,
  recomputed from the settings; the bound must never exceed the measured
  peak, and the median train ratio must be at least 0.80.
* Speed: the library call ``evalkit.plan`` in process (median of 50), and
  ``python -m evalkit plan`` in a fresh process against ``python -m evalkit
  --help`` measured in the same run (the start-up floor), best of 5.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from evalkit.plan.api import plan  # noqa: E402
from evalkit.plan.measured import check_measurements  # noqa: E402

MEASUREMENTS = ROOT / "bench" / "plan_measurements.csv"
CONFIGS = ROOT / "examples" / "plan"


def _settings(row: dict[str, str]) -> str:
    parts = [row["method"]]
    if row["quant"]:
        parts.append(row["quant"])
    if row["r"]:
        parts.append(f"r {row['r']} {row['targets']}")
    if row["phase"] == "eval":
        parts.append(f"generate {row['eval_batch']} x {row['eval_tokens']}")
    else:
        parts.append(f"{row['batch']} x {row['seq_len']}")
        if row["grad_checkpointing"] == "true":
            parts.append("GC")
        parts.append(row["optimizer"])
    if row["gpus"] != "1":
        parts.append(f"{row['gpus']} GPUs")
    return ", ".join(parts)


def validation_table() -> tuple[str, float, int]:
    """The markdown table, the median train ratio, and how many rows exceed their peak."""
    checked = check_measurements(MEASUREMENTS, CONFIGS)
    lines = [
        "| source (file, row) | model | phase | settings | measured | bound GB | ratio |",
        "|---|---|---|---|---:|---:|---:|",
    ]
    for item in checked:
        row = item.row
        if row["unit"] == "bytes":
            printed = f"{int(row['measured']) / 1e9:.2f} GB"
        elif row["unit"] == "GiB":
            printed = f"{row['measured']} GiB ({item.measured_bytes / 1e9:.2f} GB)"
        else:
            printed = f"{row['measured']} {row['unit']}"
        kind = " reserved" if row["measured_kind"] == "max_memory_reserved" else ""
        lines.append(
            f"| {row['source']} `{row['file'].rsplit('/', 1)[-1]}` {row['row']} "
            f"| {row['config']} | {row['phase']} | {_settings(row)} "
            f"| {printed}{kind} | {item.bound_bytes / 1e9:.2f} "
            f"| {item.ratio:.3f} |"
        )
    train = [item.ratio for item in checked if item.row["phase"] == "train"]
    over = sum(item.bound_bytes > item.measured_bytes for item in checked)
    return "\n".join(lines), statistics.median(train), over


def best_of(command: list[str], runs: int) -> float:
    """The fastest of ``runs`` whole-process runs of ``command``, in seconds."""
    best = float("inf")
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True, env={**os.environ})
        best = min(best, time.perf_counter() - started)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", action="store_true", help="print the validation table only")
    args = parser.parse_args()
    table, median, over = validation_table()
    if args.markdown:
        print(table)
        return
    print(f"# bench_plan: {date.today()}, {platform.machine()}, {os.cpu_count()} cores")
    print(f"load average: {os.getloadavg()[0]:.2f}")
    print(table)
    print(f"\nmedian train bound/measured: {median:.3f}; rows over their peak: {over}")
    config = CONFIGS / "llama-2-13b"
    plan(config, method="qlora")  # warm the imports
    timings = []
    for _ in range(50):
        started = time.perf_counter()
        plan(config, method="qlora", eval_batch_size=64)
        timings.append(time.perf_counter() - started)
    print(f"library plan() in process: median {1000 * statistics.median(timings):.2f} ms")
    python = [sys.executable, "-m", "evalkit"]
    floor = best_of([*python, "--help"], 5)
    whole = best_of([*python, "plan", "--config", str(config), "--method", "qlora"], 5)
    print(f"python -m evalkit --help (start-up floor): {floor:.3f} s")
    print(f"python -m evalkit plan --config llama-2-13b --method qlora: {whole:.3f} s")
    print(f"plan / floor: {whole / floor:.1f}x")


if __name__ == "__main__":
    main()
