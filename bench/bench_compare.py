"""Benchmark ``evalkit compare`` on two 1M-example results, bootstrap included.

Run: ``.venv/bin/python bench/bench_compare.py`` (``--n 1000000``,
``--resamples 10000``, ``--classes 50``, ``--slices 3``).

Data: two result folders as ``evalkit score`` writes them (summary.json,
examples.parquet with id, class, predicted_class, format_valid, error,
error_detail, content_correct, match.category, match.priority, slice.*):
``n`` examples in ``--classes`` classes of Zipf-like sizes (the smallest few
rare), baseline accuracy ~0.85, the candidate drawn correlated with the
baseline (~6% negative and ~8% positive flips), ~2% invalid outputs.
``summary.json`` has every figure ``score`` writes (computed by the scorer's
own functions) and the sha256 of ``examples.parquet``, which ``compare``
checks. Writing the folders is not timed.

Timed, in this process, best of ``--repeat`` runs:

* ``end to end``: what ``evalkit compare BASE CAND --out DIR`` does: load and
  check both folders, pair by id, every statistic for every scope (overall,
  each class, each slice) with ``--resamples`` paired-bootstrap resamples per
  delta, the gate, report.json + report.md + junit.xml written.
* ``evalkit compare CLI``: the same as a fresh ``python -m evalkit compare``
  process, interpreter start-up and imports included.
* ``load both folders``: reading and checking the two folders alone (the
  part of end to end that recomputes the summaries' figures).
* ``read floor`` (reference): ``polars.read_parquet`` of the two
  ``examples.parquet`` files and nothing else: the least any comparison reads.
* ``naive bootstrap`` (reference): the textbook paired bootstrap that
  resamples item indices, for the overall delta only, timed for a few
  resamples and extrapolated to ``--resamples`` (labelled as extrapolated).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

import numpy as np
import polars as pl

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from scored_results import EVALUATOR, contract, fingerprint  # noqa: E402

from evalkit.comparison.api import compare  # noqa: E402
from evalkit.comparison.results import load_result  # noqa: E402
from evalkit.contract.model import Contract  # noqa: E402
from evalkit.io import atomic_directory, atomic_write_text, sha256_file  # noqa: E402
from evalkit.report.json_report import render_json  # noqa: E402
from evalkit.report.junit import render_junit  # noqa: E402
from evalkit.report.markdown import render_comparison_markdown  # noqa: E402
from evalkit.scoring import aggregate  # noqa: E402


def make_outcomes(n: int, n_classes: int, n_slices: int, seed: int = 0) -> dict[str, np.ndarray]:
    """Per-example outcomes of a baseline and a correlated candidate."""
    rng = np.random.default_rng(seed)
    weights = 1 / np.arange(1, n_classes + 1) ** 1.1
    classes = rng.choice(n_classes, n, p=weights / weights.sum())
    base_valid = rng.random(n) > 0.02
    cand_valid = np.where(rng.random(n) < 0.97, base_valid, ~base_valid)
    base_correct = (rng.random(n) < 0.87) & base_valid
    flip = rng.random(n)
    cand_correct = np.where(base_correct, flip > 0.06, flip < 0.55) & cand_valid
    slices = {f"s{k}": rng.random(n) < 0.3 for k in range(n_slices)}
    return {
        "classes": classes,
        "base_valid": base_valid,
        "cand_valid": cand_valid,
        "base_correct": base_correct,
        "cand_correct": cand_correct,
        **{f"slice.{name}": members for name, members in slices.items()},
    }


def write_folder(folder: Path, name: str, data: dict, valid: np.ndarray, correct: np.ndarray):
    n = valid.size
    labels = np.array([f"class_{k:03d}" for k in range(int(data["classes"].max()) + 1)])
    gold = labels[data["classes"]]
    frame = pl.DataFrame(
        {
            "id": [f"E{k:08d}" for k in range(n)],
            "class": gold,
            "predicted_class": np.where(correct, gold, labels[0]),
            "format_valid": valid,
            "content_correct": correct,
            "match.category": correct,
            "match.priority": valid,
            **{key: data[key] for key in data if key.startswith("slice.")},
        }
    )
    invalid = ~pl.col("format_valid")
    frame = frame.with_columns(
        pl.when(invalid).then(None).otherwise(pl.col("predicted_class")).alias("predicted_class"),
        pl.when(invalid).then(pl.lit("no_json")).alias("error"),
        pl.when(invalid).then(pl.lit("no JSON object found")).alias("error_detail"),
    )
    folder.mkdir(parents=True)
    frame.write_parquet(
        folder / "examples.parquet", compression="zstd", statistics=True, row_group_size=131_072
    )
    slices = [{"name": key.removeprefix("slice."), "where": {"order_id": None}}
              for key in data if key.startswith("slice.")]  # fmt: skip
    normalized = contract(rare={"max_support": 500}, significance=0.05, slices=slices)
    figures = Contract.model_validate(normalized)
    summary = {  # every figure score writes and compare checks, as score computes them
        "format_version": 1,
        "evalkit_version": "0.1.0",
        "name": name,
        "contract": {
            "name": normalized["name"],
            "version": 1,
            "fingerprint": fingerprint(normalized),
            "normalized": normalized,
            "evaluator": EVALUATOR,
        },
        "gold": {"path": "gold.parquet", "sha256": "0" * 64, "n": n},
        "overall": aggregate.rates(frame).model_dump(mode="json"),
        "classes": {
            label: stats.model_dump(mode="json")
            for label, stats in aggregate.class_stats(frame, figures).items()
        },
        "slices": {
            label: rates.model_dump(mode="json")
            for label, rates in aggregate.slice_stats(frame, figures).items()
        },
        "examples_sha256": sha256_file(folder / "examples.parquet"),
    }
    (folder / "summary.json").write_text(json.dumps(summary))


CPU_SECONDS: dict[str, float] = {}


def best_of(repeat: int, function) -> float:
    """Best wall time of ``repeat`` runs; the CPU time of this process in that run is kept too
    (steadier than wall time on a shared machine)."""
    times = []
    for _ in range(repeat):
        started, started_cpu = time.perf_counter(), time.process_time()
        function()
        times.append((time.perf_counter() - started, time.process_time() - started_cpu))
    wall, cpu = min(times)
    CPU_SECONDS[function.__name__] = cpu
    return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--resamples", type=int, default=10_000)
    parser.add_argument("--classes", type=int, default=50)
    parser.add_argument("--slices", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    data = make_outcomes(args.n, args.classes, args.slices)
    with tempfile.TemporaryDirectory() as temporary:
        root = Path(temporary)
        base, cand = root / "baseline", root / "candidate"
        write_folder(base, "baseline", data, data["base_valid"], data["base_correct"])
        write_folder(cand, "candidate", data, data["cand_valid"], data["cand_correct"])

        def end_to_end() -> None:
            report = compare(base, cand, seed=0, resamples=args.resamples)
            with atomic_directory(root / "out", force=True) as staging:
                atomic_write_text(staging / "report.json", render_json(report))
                atomic_write_text(staging / "report.md", render_comparison_markdown(report))
                atomic_write_text(staging / "junit.xml", render_junit(report.candidates))

        def load_both() -> None:
            load_result(base)
            load_result(cand)

        def read_floor() -> None:
            pl.read_parquet(base / "examples.parquet")
            pl.read_parquet(cand / "examples.parquet")

        def command_line() -> None:
            command = [sys.executable, "-m", "evalkit", "compare", str(base), str(cand)]
            command += ["--out", str(root / "cli-out"), "--force"]
            command += ["--resamples", str(args.resamples)]
            subprocess.run(command, check=True, capture_output=True)

        total = best_of(args.repeat, end_to_end)
        floor = best_of(args.repeat, read_floor)
        loading = best_of(args.repeat, load_both)
        cli = best_of(args.repeat, command_line)
        report = json.loads((root / "out" / "report.json").read_text())

    differences = data["cand_correct"].astype(np.int8) - data["base_correct"].astype(np.int8)
    rng = np.random.default_rng(0)
    naive_resamples = 20
    started = time.perf_counter()
    for _ in range(naive_resamples):
        differences[rng.integers(0, args.n, args.n)].mean()
    naive = (time.perf_counter() - started) / naive_resamples * args.resamples

    scopes = 1 + len(report["classes"]) + args.slices
    print(f"date {date.today()}  machine {platform.machine()} {os.cpu_count()} cores")
    print(f"n {args.n:,}  scopes {scopes}  resamples {args.resamples:,} per delta (x2 deltas)")
    cpu = CPU_SECONDS["end_to_end"]
    print(f"end to end          {total:7.2f} s   (goal <= 10 s; CPU {cpu:.2f} s)")
    print(f"evalkit compare CLI {cli:7.2f} s   (a fresh process: start-up and imports included)")
    print(
        f"load both folders   {loading:7.2f} s   (read and check them; CPU "
        f"{CPU_SECONDS['load_both']:.2f} s)"
    )
    print(f"read floor          {floor:7.2f} s   end to end / read floor = {total / floor:.1f}x")
    print(
        f"naive bootstrap     {naive:7.1f} s   (overall delta only, extrapolated from "
        f"{naive_resamples} resamples) = {naive / total:.0f}x end to end"
    )
    print(f"verdict {report['verdict']}, overall delta {report['overall']['delta']:+.4f}")


if __name__ == "__main__":
    main()
