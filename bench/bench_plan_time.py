"""Validate ``evalkit plan``'s time bounds against published runs, and time the plan with them.

Run: ``.venv/bin/python bench/bench_plan_time.py`` (``--markdown`` prints only
the validation table that docs/plan.md carries).

* Validation: every row of ``bench/plan_time_measurements.csv`` (a published
  run with its source file, commit and row, GPU, settings and work) beside the
  plan's lower bound of its time, recomputed; no bound may exceed the shortest
  time the printed figure stands for. measured / bound is how far from the
  card's peak the run was: its median is the utilisation people get.
* Speed: ``evalkit.plan`` with the time section (Llama-2-7B, a 20M-token epoch,
  500 evaluations of 256 new tokens, every GPU of the table) in process, and
  ``python -m evalkit plan`` with it in a fresh process against ``python -m
  evalkit --help`` measured in the same run.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench_plan import best_of  # noqa: E402  (bench/ is the script's folder)

from evalkit.plan import TimeRequest, plan  # noqa: E402
from evalkit.plan.measured_time import check_time_measurements  # noqa: E402

MEASUREMENTS = ROOT / "bench" / "plan_time_measurements.csv"
CONFIGS = ROOT / "examples" / "plan"
WORK = TimeRequest(train_tokens=20_000_000, eval_examples=500, eval_new_tokens=256)
WORK_ARGUMENTS = [
    "--train-tokens",
    "20000000",
    "--eval-examples",
    "500",
    "--eval-new-tokens",
    "256",
]


def _settings(row: dict[str, str]) -> str:
    parts = [row["method"]]
    if row["r"]:
        parts.append(f"r {row['r']} {row['targets']}")
    if row["phase"] == "eval":
        parts.append(
            f"generate {row['eval_examples']} x ({row['eval_prompt_tokens']} + "
            f"{row['eval_new_tokens']})"
        )
    else:
        parts.append(f"{int(row['tokens']):,} tokens at {row['seq_len']}")
        if row["grad_checkpointing"] == "true":
            parts.append("GC")
    return ", ".join(parts)


def validation_table() -> tuple[str, float, int]:
    """The markdown table, the median train measured/bound, and how many rows it beats."""
    checked = check_time_measurements(MEASUREMENTS, CONFIGS)
    lines = [
        "| source (file, row) | model | GPU | settings | printed | measured s | bound s "
        "| measured/bound |",
        "|---|---|---|---|---:|---:|---:|---:|",
    ]
    for item in checked:
        row = item.row
        unit = "s" if row["unit"] == "seconds" else "tokens/s"
        lines.append(
            f"| {row['source']} `{row['file'].rsplit('/', 1)[-1]}` {row['row']} "
            f"| {row['config']} | {row['gpu']} | {_settings(row)} | {row['measured']} {unit} "
            f"| {item.measured_seconds:,.2f} | {item.bound_seconds:,.2f} | {item.ratio:.2f} |"
        )
    train = [item.ratio for item in checked if item.row["phase"] == "train"]
    under = sum(item.bound_seconds > item.measured_seconds for item in checked)
    return "\n".join(lines), statistics.median(train), under


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", action="store_true", help="print the validation table only")
    args = parser.parse_args()
    table, median, over = validation_table()
    if args.markdown:
        print(table)
        return
    print(f"# bench_plan_time: {date.today()}, {platform.machine()}, {os.cpu_count()} cores")
    print(f"load average: {os.getloadavg()[0]:.2f}")
    print(table)
    ratios = [row.ratio for row in check_time_measurements(MEASUREMENTS, CONFIGS)]
    print(
        f"\nmedian train measured/bound: {median:.2f} ({100 / median:.0f}% of the peak); "
        f"smallest {min(ratios):.2f}, largest {max(ratios):.2f}; bounds over a measured "
        f"time: {over}"
    )
    config = CONFIGS / "llama-2-7b"
    plan(config, time=WORK)  # warm the imports
    timings = []
    for _ in range(20):
        started = time.perf_counter()
        plan(config, time=WORK)
        timings.append(time.perf_counter() - started)
    print(f"library plan(time=...) in process: median {1000 * statistics.median(timings):.1f} ms")
    python = [sys.executable, "-m", "evalkit"]
    floor = best_of([*python, "--help"], 5)
    whole = best_of([*python, "plan", "--config", str(config), *WORK_ARGUMENTS], 5)
    print(f"python -m evalkit --help (start-up floor): {floor:.3f} s")
    print(f"python -m evalkit plan --config llama-2-7b (with time): {whole:.3f} s")
    print(f"plan / floor: {whole / floor:.1f}x")


if __name__ == "__main__":
    main()
