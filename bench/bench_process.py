"""Whole-process benchmarks: ``evalkit split`` and ``evalkit score`` as users run them.

Run: ``.venv/bin/python bench/bench_process.py`` (a few minutes on 2 cores;
``--big-rows 0`` skips the 10M-row memory run, ``--only split|score`` runs one
part, ``--code DIR`` adds another source checkout of evalkit to measure beside
this one, e.g. the code before a change, in the same run).

The library benchmarks (``bench_split.py``, ``bench_score.py``) time the work
after the imports; here each command runs as a fresh subprocess, so start-up,
imports, model building, worker start-up and writing all count. Runs of
evalkit and of the reference alternate, ``--repeat`` times, and the figures are
medians: on a shared machine the ratio within one run is what holds.

* **split**: 100,000 items in ~18,600 groups (``bench_split.make_data``),
  JSONL input, stratified, ratios 0.7/0.15/0.15, ``python -m evalkit split``
  writing Parquet splits, assignments and manifest. Reference: scikit-learn's
  StratifiedGroupKFold two-stage recipe (``bench_split.run_sgkf``) on the same
  data, timed in this process after its imports and reading, so the reference
  is timed for its algorithm alone. Quality read back from the output:
  count deviation and worst class-share deviation (pp).
* **score**: 500,000 unique raw outputs (80% plain JSON, 10% in ``` fences,
  7% inside prose, 3% truncated) under ``contracts/ticket-triage.yaml``, gold
  and predictions both JSONL, ``python -m evalkit score``. Reference: the
  naive single-process scorer of ``bench_score.py`` (a Python loop with
  ``json.loads`` and ``jsonschema``); its counts must agree with evalkit's.
* **10M rows**: the same score data at 10,000,000 rows, one run, peak RSS of
  the largest process and of the process tree.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))

from bench_score import (  # noqa: E402
    CATEGORIES,
    CONTRACT,
    PRIORITIES,
    answer_json,
    load_average,
    reference_score,
    run_evalkit,
)
from bench_split import RATIOS, make_data, quality, run_sgkf, targets_for  # noqa: E402


def _environment(code: Path) -> dict[str, str]:
    """The environment that makes ``python -m evalkit`` run the checkout at ``code``."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(code), env.get("PYTHONPATH")]))
    return env


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


# CPU seconds (user + system) of each timed run, by the name of what ran: on a
# shared machine they move much less than wall seconds.
CPU: dict[str, list[float]] = {}


def _timed(command: list[str], code: Path, name: str = "") -> float:
    """Seconds of one run of ``command`` against the checkout at ``code`` (the working
    directory is the checkout, since ``python -m`` puts it first on the path); its CPU
    seconds (the whole process tree's) go to ``CPU[name]``."""
    used = _children_cpu()
    started = time.perf_counter()
    subprocess.run(command, check=True, env=_environment(code), cwd=code, stdout=subprocess.DEVNULL)
    seconds = time.perf_counter() - started
    CPU.setdefault(name, []).append(_children_cpu() - used)
    return seconds


def _cpu_line(names: list[str], reference: str) -> str:
    """Median CPU seconds of each run and their ratios to the reference's."""
    medians = {name: _median(CPU[name]) for name in [*names, reference]}
    parts = [
        f"{name} {medians[name]:.2f} s ({_seconds(CPU[name])}; reference / this "
        f"{medians[reference] / medians[name]:.1f}×)"
        for name in names
    ]
    return f"CPU (user + system), median: {'; '.join(parts)}; reference {medians[reference]:.2f} s"


def _median(values: list[float]) -> float:
    return statistics.median(values)


def _seconds(values: list[float]) -> str:
    return ", ".join(f"{value:.2f}" for value in values)


def bench_split(folder: Path, items: int, repeat: int, codes: dict[str, Path]) -> None:
    """``evalkit split`` as a subprocess beside the StratifiedGroupKFold recipe."""
    frame = make_data(items)
    data = folder / "items.jsonl"
    frame.write_ndjson(data)
    labels = frame["label"].to_numpy()
    targets = targets_for(frame.height)
    code_of = {"train": 0, "val": 1, "test": 2}
    times: dict[str, list[float]] = {name: [] for name in codes}
    reference: list[float] = []
    qualities: dict[str, dict[str, float]] = {}
    print(f"split: {items:,} items, {frame['group'].n_unique():,} groups; "
          f"load average {load_average()} at the start")  # fmt: skip
    for _ in range(repeat):
        for name, code in codes.items():
            out = folder / f"split-{name}"
            command = [sys.executable, "-m", "evalkit", "split", str(data), "--out", str(out),
                       "--group", "group", "--stratify", "label", "--id", "id", "--ratios",
                       ",".join(map(str, RATIOS)), "--force", "--quiet"]  # fmt: skip
            times[name].append(_timed(command, code, f"split {name}"))
            assigned = pl.read_parquet(out / "assignments.parquet")
            joined = frame.select("id").join(assigned, on="id", maintain_order="left")
            qualities[name] = quality(
                labels, joined["split"].replace_strict(code_of).to_numpy(), targets
            )
        used = time.process_time()
        reference.append(run_sgkf(frame)[0])
        CPU.setdefault("split reference", []).append(time.process_time() - used)
    reference_median = _median(reference)
    for name, values in times.items():
        ratio = reference_median / _median(values)
        print(f"| `evalkit split` ({name}), whole process: {_seconds(values)} s | "
              f"{_median(values):.3f} | **{ratio:.1f}×** faster than the reference; "
              f"quality {json.dumps(qualities[name])} |")  # fmt: skip
    print(f"| reference: StratifiedGroupKFold two-stage recipe, in process after imports "
          f"and reading: {_seconds(reference)} s | {reference_median:.3f} | |")  # fmt: skip
    print(_cpu_line([f"split {name}" for name in codes], "split reference"))
    print(f"load average {load_average()} at the end of the split runs")


def make_score_data(rows: int, folder: Path, seed: int = 0) -> tuple[Path, Path]:
    """Gold and predictions JSONL; every output distinct (a unique order id or amount).

    80% plain JSON, 10% in ``` fences, 7% inside prose, 3% truncated (the
    closing brace cut off); 15% of categories wrong.
    """
    rng = np.random.default_rng(seed)
    ids = "T" + pl.Series(np.arange(rows)).cast(pl.String).str.zfill(9)
    has_order = rng.random(rows) < 0.5
    orders = pl.Series(rng.permutation(max(10**6, rows))[:rows]).cast(pl.String).str.zfill(6)
    amounts = pl.Series(np.round(1 + np.arange(rows) / 100, 2))
    gold = pl.DataFrame({
        "ticket_id": ids,
        "category": pl.Series(CATEGORIES).gather(rng.integers(0, len(CATEGORIES), rows)),
        "priority": pl.Series(PRIORITIES).gather(rng.integers(0, len(PRIORITIES), rows)),
        "order_id": ("ORD-" + orders).set(pl.Series(~has_order), None),
        "amount": amounts.set(pl.Series(has_order & (rng.random(rows) < 0.5)), None),
    })  # fmt: skip
    wrong = pl.Series(CATEGORIES).gather(rng.integers(0, len(CATEGORIES), rows))
    frame = gold.with_columns(
        pl.Series(rng.random(rows)).alias("roll"),
        pl.when(pl.Series(rng.random(rows)) < 0.15).then(wrong)
        .otherwise(pl.col("category")).alias("p_category"),
    )  # fmt: skip
    body = answer_json()
    roll = pl.col("roll")
    output = (
        pl.when(roll < 0.80).then(body)
        .when(roll < 0.90).then(pl.concat_str(pl.lit("```json\n"), body, pl.lit("\n```")))
        .when(roll < 0.97).then(pl.concat_str(pl.lit("Here is the triage:\n"), body,
                                              pl.lit("\nOK")))
        .otherwise(body.str.slice(0, body.str.len_chars() - 1))
    )  # fmt: skip
    predictions = frame.select("ticket_id", output.alias("output"))
    gold_path, pred_path = folder / "gold.jsonl", folder / "predictions.jsonl"
    gold.write_ndjson(gold_path)
    predictions.write_ndjson(pred_path)
    return gold_path, pred_path


def _score_command(gold: Path, pred: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "evalkit", "score", "--contract", str(CONTRACT), "--gold",
            str(gold), "--pred", str(pred), "--out", str(out), "--force", "-q"]  # fmt: skip


def _written_counts(out: Path) -> dict[str, int]:
    written = json.loads((out / "summary.json").read_text())
    counts = {key: written["overall"][key] for key in ("n", "format_valid", "content_correct")}
    return counts | {f"errors.{k}": v["count"] for k, v in written["errors"].items()}


def bench_score(folder: Path, rows: int, repeat: int, codes: dict[str, Path]) -> None:
    """``evalkit score`` as a subprocess beside the naive scorer."""
    gold, pred = make_score_data(rows, folder)
    sizes = (
        f"gold {gold.stat().st_size / 1e6:.0f} MB, predictions {pred.stat().st_size / 1e6:.0f} MB"
    )
    print(f"score: {rows:,} rows ({sizes}); load average {load_average()} at the start")
    times: dict[str, list[float]] = {name: [] for name in codes}
    reference: list[float] = []
    agree: dict[str, bool] = {}
    for _ in range(repeat):
        for name, code in codes.items():
            out = folder / f"score-{name}"
            times[name].append(_timed(_score_command(gold, pred, out), code, f"score {name}"))
        started, used = time.perf_counter(), time.process_time()
        expected = reference_score(gold, pred, folder / "reference")
        reference.append(time.perf_counter() - started)
        CPU.setdefault("score reference", []).append(time.process_time() - used)
        for name in codes:
            counts = _written_counts(folder / f"score-{name}")
            agree[name] = agree.get(name, True) and counts == expected
    reference_median = _median(reference)
    for name, values in times.items():
        ratio = reference_median / _median(values)
        print(f"| `evalkit score` ({name}), whole process: {_seconds(values)} s | "
              f"{_median(values):.3f} | **{ratio:.1f}×** faster than the reference; "
              f"counts agree: {agree[name]} |")  # fmt: skip
    print(f"| reference: naive scorer (json + jsonschema, one process): {_seconds(reference)} s "
          f"| {reference_median:.3f} | |")  # fmt: skip
    print(_cpu_line([f"score {name}" for name in codes], "score reference"))
    print(f"load average {load_average()} at the end of the score runs")


def bench_big(folder: Path, rows: int, codes: dict[str, Path]) -> None:
    """One 10M-row score run per checkout: seconds and peak resident memory."""
    gold, pred = make_score_data(rows, folder)
    for name, code in codes.items():
        big = run_evalkit(gold, pred, folder / f"big-{name}", env=_environment(code), cwd=code)
        print(f"| `evalkit score` ({name}), {rows:,} rows (gold {gold.stat().st_size / 1e6:,.0f} "
              f"MB JSONL), whole process (CPU {big['cpu_seconds']:.1f} s, load average "
              f"{load_average()} after) | {big['seconds']:.2f} | peak RSS "
              f"**{big['process_peak_mb']:,.0f} MB** (largest process), "
              f"{big['tree_peak_mb']:,.0f} MB (process tree) |")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=["split", "score"], help="run one part")
    parser.add_argument("--split-items", type=int, default=100_000)
    parser.add_argument("--score-rows", type=int, default=500_000)
    parser.add_argument("--big-rows", type=int, default=10_000_000, help="0 skips it")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--code", action="append", default=[], metavar="NAME=DIR",
        help="another evalkit checkout to measure in the same run (repeatable)",
    )  # fmt: skip
    args = parser.parse_args()
    codes = {"this checkout": ROOT}
    for item in args.code:
        name, _, directory = item.partition("=")
        codes[name] = Path(directory).resolve()
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory(prefix="bench-process-") as temp:
        folder = Path(temp)
        if args.only in (None, "split"):
            bench_split(folder, args.split_items, args.repeat, codes)
        if args.only in (None, "score"):
            bench_score(folder, args.score_rows, args.repeat, codes)
    if args.only in (None, "score") and args.big_rows:
        with tempfile.TemporaryDirectory(prefix="bench-process-big-") as temp:
            bench_big(Path(temp), args.big_rows, codes)


if __name__ == "__main__":
    main()
