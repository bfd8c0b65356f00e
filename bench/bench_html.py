"""Benchmark report.html: rendering time and size, and what it adds to ``evalkit score``.

Run: ``.venv/bin/python bench/bench_html.py`` (about a minute on 2 cores).

Measured in one run:

* **render**: the HTML page of a comparison of 3 candidates with 50 classes
  (10 rare, 30% of outputs confused at random, 3,000-character outputs for
  every example shown: the page's worst case), against the Markdown of the
  same report as the reference; the page's size in bytes.
* **compare, whole process**: ``python -m evalkit compare`` of a baseline and
  two candidates (246 examples, the tests' simulated runs) with ``--out``
  (all four reports, report.html with the outputs read back from both
  predictions files), against the same command printing only.
* **outputs read back, 1M predictions**: what ``compare --out`` adds for the
  page at scale: the outputs of 200 examples read from a 1M-line predictions
  JSONL (sha256 check included) by ``read_outputs``, against polars reading
  the file (the read floor).
* **score overhead**: at 1M examples, what ``evalkit score`` now computes for
  the page and ``summary.json`` (the confusion matrix, the error examples'
  reasons) and the score page's rendering, against the per-class figures it
  computed before (``class_stats``) as the reference.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))


def best_of(repeat: int, function, *args):  # type: ignore[no-untyped-def]
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        result = function(*args)
        times.append(time.perf_counter() - start)
    return min(times), result


def bench_render() -> None:
    from test_html_reports import fifty_class_results, long_outputs

    from evalkit import compare
    from evalkit.report.html.compare import render_comparison_html
    from evalkit.report.markdown import render_comparison_markdown

    baseline, *candidates = fifty_class_results(3)
    report = compare(baseline, *candidates, resamples=1000)
    outputs = long_outputs(report)
    html_seconds, page = best_of(5, render_comparison_html, report, outputs)
    md_seconds, markdown = best_of(5, render_comparison_markdown, report)
    print(
        f"| render, 50 classes x 3 candidates | HTML {html_seconds * 1000:.1f} ms, "
        f"{len(page.encode()):,} bytes | Markdown {md_seconds * 1000:.1f} ms, "
        f"{len(markdown.encode()):,} bytes | {html_seconds / md_seconds:.1f}x |"
    )


def examples_frame(rows: int) -> pl.DataFrame:
    rng = np.random.default_rng(0)
    labels = pl.Series([f"class_{i:02d}" for i in range(50)])
    gold = labels.gather(rng.integers(0, 50, rows))
    confused = labels.gather(rng.integers(0, 50, rows))
    valid = rng.random(rows) > 0.1
    wrong = rng.random(rows) < 0.2
    errors = pl.Series(["no_json", "invalid_json", "schema:enum"]).gather(rng.integers(0, 3, rows))
    frame = pl.DataFrame(
        {
            "id": pl.Series(np.arange(rows)).cast(pl.String).str.zfill(9),
            "class": gold,
            "predicted_class": pl.select(
                pl.when(pl.lit(wrong)).then(pl.lit(confused)).otherwise(pl.lit(gold))
            ).to_series(),
            "format_valid": valid,
            "error": pl.select(
                pl.when(pl.lit(valid)).then(None).otherwise(pl.lit(errors))
            ).to_series(),
            "content_correct": valid & ~wrong,
        }
    )
    return frame.with_columns(
        pl.when(pl.col("format_valid")).then(pl.col("predicted_class")),
        pl.when(pl.col("error").is_not_null())
        .then("detail of " + pl.col("error"))
        .alias("error_detail"),
    )


def bench_score_overhead(rows: int) -> None:
    from evalkit.contract.model import Contract
    from evalkit.scoring import aggregate

    frame = examples_frame(rows)
    contract = Contract.model_validate(
        {
            "name": "bench",
            "version": 1,
            "id": "id",
            "class": "label",
            "output": {"parse": "label", "labels": [f"class_{i:02d}" for i in range(50)]},
            "fields": {"label": {"gold": "label", "match": "exact"}},
        }
    )
    reference, _ = best_of(3, aggregate.class_stats, frame, contract)
    confusion, _ = best_of(3, aggregate.confusion, frame, contract)
    errors, _ = best_of(3, aggregate.error_stats, frame)
    print(
        f"| score overhead, {rows:,} examples, 50 classes | confusion {confusion * 1000:.0f} ms,"
        f" error examples {errors * 1000:.0f} ms | class_stats {reference * 1000:.0f} ms | "
        f"{(confusion + errors) / reference:.2f}x |"
    )


def bench_compare_process() -> None:
    import subprocess
    import tempfile

    from simulated_runs import scored_run

    with tempfile.TemporaryDirectory() as folder:
        runs = [
            str(scored_run(Path(folder), name, seed, rate))
            for name, seed, rate in (("baseline", 1, 0.4), ("a", 2, 0.2), ("b", 3, 0.3))
        ]
        command = [sys.executable, "-m", "evalkit", "compare", *runs]

        def run(*extra: str) -> None:
            subprocess.run([*command, *extra], check=True, capture_output=True)

        printing, _ = best_of(5, run)
        counter = iter(range(100))
        writing, _ = best_of(5, lambda: run("--out", f"{folder}/out{next(counter)}"))
    print(
        f"| compare, whole process, 2 candidates | with --out (4 reports) {writing:.2f} s | "
        f"printing only {printing:.2f} s | {writing / printing:.2f}x |"
    )


def bench_outputs_read_back(rows: int) -> None:
    import hashlib
    import tempfile

    from bench_score import CONTRACT, generate

    from evalkit import score
    from evalkit.comparison.outputs import read_outputs

    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        gold, predictions = generate(rows, folder)
        score(CONTRACT, gold, predictions, name="big").write(folder / "big")
        digest = hashlib.sha256((folder / "big" / "summary.json").read_bytes()).hexdigest()
        ids = pl.read_parquet(gold, columns=["ticket_id"])["ticket_id"].gather_every(rows // 200)
        seconds, found = best_of(3, read_outputs, folder / "big", digest, ids.to_list())
        assert found.note is None, found.note
        floor, _ = best_of(3, pl.read_ndjson, predictions)
        size = predictions.stat().st_size / 1e6
    print(
        f"| outputs of 200 examples read back, {rows:,} predictions ({size:.0f} MB JSONL) | "
        f"{seconds:.2f} s | polars read_ndjson {floor:.2f} s | {seconds / floor:.1f}x |"
    )


def main() -> None:
    print(
        f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
        f"load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} cores"
    )
    print("| what | measured | reference (same run) | ratio |")
    print("|---|---|---|---:|")
    bench_render()
    bench_compare_process()
    bench_outputs_read_back(1_000_000)
    bench_score_overhead(1_000_000)
    print(f"# load average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
