"""Benchmark ``evalkit score`` against a naive reference scorer, and its memory at 10M rows.

Run: ``.venv/bin/python bench/bench_score.py`` (about 5 minutes on 2 cores;
``--big-rows 0`` skips the 10M-row memory run).

Data: ticket-triage predictions as a model writes them - mostly unique JSON
objects (random order ids and amounts), 60% plain, 15% in ``` fences, 10%
inside prose, and the failures (truncated, schema-invalid, plain text,
blank, missing) - scored under ``contracts/ticket-triage.yaml``.

Measured in one run, on the same files:

* **evalkit**: ``python -m evalkit score`` in a fresh process, end to end
  (start-up, reading gold Parquet and predictions JSONL, parsing,
  validation, matching, summary, writing both files); peak RSS of the
  process tree sampled from /proc, and the largest single process;
* **reference**: a naive scorer - a Python loop with ``json.loads``,
  lenient extraction by regex, ``jsonschema`` (a validator built once; its
  best error names the category), field comparison, per-class counters, a
  per-example CSV and a summary - the same work, written the obvious way.
  Its counts must agree with evalkit's, or the comparison would be
  meaningless.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import unicodedata
from pathlib import Path

import polars as pl

ROOT = Path(__file__).resolve().parents[1]
CONTRACT = ROOT / "contracts" / "ticket-triage.yaml"
CATEGORIES = ["billing", "shipping", "account", "technical", "returns", "product_question",
              "legal_threat", "fraud_report"]  # fmt: skip
PRIORITIES = ["low", "normal", "high", "urgent"]


def answer_json() -> pl.Expr:
    """The JSON answer of a row (``p_category``, priority, order_id, amount) as text."""
    order_json = (
        pl.when(pl.col("order_id").is_null())
        .then(pl.lit("null"))
        .otherwise(pl.concat_str(pl.lit('"'), pl.col("order_id"), pl.lit('"')))
    )
    amount_json = (
        pl.when(pl.col("amount").is_null())
        .then(pl.lit("null"))
        .otherwise(pl.col("amount").cast(pl.String))
    )
    return pl.concat_str(
        pl.lit('{"category": "'), pl.col("p_category"), pl.lit('", "priority": "'),
        pl.col("priority"), pl.lit('", "order_id": '), order_json, pl.lit(', "amount": '),
        amount_json, pl.lit("}"),
    )  # fmt: skip


def generate(rows: int, folder: Path, seed: int = 0) -> tuple[Path, Path]:
    """Gold Parquet and predictions JSONL of ``rows`` items, built with polars expressions."""
    import numpy as np

    rng = np.random.default_rng(seed)
    ids = pl.Series("ticket_id", np.arange(rows)).cast(pl.String).str.zfill(9)
    has_order = rng.random(rows) < 0.5
    order_num = rng.integers(0, 10**6, rows)
    amount = np.round(rng.uniform(1, 500, rows), 2)
    gold = pl.DataFrame({
        "ticket_id": "T" + ids,
        "category": pl.Series(CATEGORIES).gather(rng.integers(0, 8, rows)),
        "priority": pl.Series(PRIORITIES).gather(rng.integers(0, 4, rows)),
        "order_id": pl.Series([f"ORD-{n:06d}" for n in order_num]).set(
            pl.Series(~has_order), None),
        "amount": pl.Series(amount).set(pl.Series(~(has_order & (rng.random(rows) < 0.6))), None),
    })  # fmt: skip
    roll = pl.Series(rng.random(rows))
    wrong_cat = pl.Series(CATEGORIES).gather(rng.integers(0, 8, rows))
    frame = gold.with_columns(
        roll.alias("roll"),
        pl.when(pl.Series(rng.random(rows)) < 0.15).then(wrong_cat)
        .otherwise(pl.col("category")).alias("p_category"),
    )  # fmt: skip
    body = answer_json()
    r = pl.col("roll")
    output = (
        pl.when(r < 0.60).then(body)
        .when(r < 0.75).then(pl.concat_str(pl.lit("```json\n"), body, pl.lit("\n```")))
        .when(r < 0.85).then(pl.concat_str(pl.lit("Here is the triage:\n"), body, pl.lit("\nOK")))
        .when(r < 0.90).then(body.str.slice(0, 30))
        .when(r < 0.95).then(body.str.replace('"priority": "', '"priority": "P-'))
        .when(r < 0.97).then(pl.concat_str(pl.lit("It is about "), pl.col("p_category")))
        .when(r < 0.99).then(pl.lit("  "))
        .otherwise(pl.lit(None))
    )  # fmt: skip
    predictions = frame.select("ticket_id", output.alias("output")).filter(
        pl.col("output").is_not_null()
    )
    gold_path, pred_path = folder / "gold.parquet", folder / "predictions.jsonl"
    gold.write_parquet(gold_path)
    predictions.write_ndjson(pred_path)
    return gold_path, pred_path


FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


def _normalize(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).lower().split())


def _naive_extract(text: str) -> object:
    for candidate in (text, *(m.group(1) for m in FENCE.finditer(text)),
                      text[text.find("{"): text.rfind("}") + 1]):  # fmt: skip
        try:
            return json.loads(candidate)
        except ValueError:
            continue
    return None


def _naive_matches(value: dict, item: dict) -> dict[str, bool]:
    order, amount = value.get("order_id"), value.get("amount")
    return {
        "category": value.get("category") == item["category"],
        "priority": value.get("priority") == item["priority"],
        "order_id": order is None if item["order_id"] is None
        else isinstance(order, str) and _normalize(order) == _normalize(item["order_id"]),
        "amount": amount is None if item["amount"] is None
        else isinstance(amount, int | float) and abs(amount - item["amount"]) <= 0.01,
    }  # fmt: skip


def reference_score(gold_path: Path, pred_path: Path, out: Path) -> dict[str, int]:
    """The naive scorer: a Python loop with json.loads and jsonschema, same outputs as evalkit.

    Per example: error category (``schema:<keyword>`` from jsonschema's best
    error), field matches, content correctness, predicted class; then the
    per-class and per-error counts; writes a per-example CSV and a summary.
    """
    import csv

    import jsonschema
    import yaml
    from jsonschema.exceptions import best_match

    contract = yaml.safe_load(CONTRACT.read_text())
    validator = jsonschema.Draft202012Validator(contract["output"]["schema"])
    if gold_path.suffix == ".jsonl":
        with gold_path.open() as handle:
            gold = [json.loads(line) for line in handle]
    else:
        gold = pl.read_parquet(gold_path).to_dicts()
    outputs = {}
    with pred_path.open() as handle:
        for line in handle:
            record = json.loads(line)
            outputs[record["ticket_id"]] = record["output"]
    counts = {"n": 0, "format_valid": 0, "content_correct": 0}
    classes: dict[str, dict[str, int]] = {}
    errors: dict[str, int] = {}
    predicted: dict[str, int] = {}
    out.mkdir(parents=True, exist_ok=True)
    with (out / "examples.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "class", "predicted_class", "error", "content_correct",
                         "category", "priority", "order_id", "amount"])  # fmt: skip
        for item in gold:
            text = outputs.get(item["ticket_id"])
            error, value = None, None
            if text is None:
                error = "missing"
            elif not text.strip():
                error = "empty"
            else:
                value = _naive_extract(text.strip())
                if value is None:
                    error = "invalid_json" if "{" in text else "no_json"
                else:
                    found = best_match(validator.iter_errors(value))
                    error = f"schema:{found.validator}" if found is not None else None
            matches = _naive_matches(value, item) if error is None else dict.fromkeys(
                ("category", "priority", "order_id", "amount"), False)  # fmt: skip
            correct = error is None and all(matches.values())
            guess = value.get("category") if error is None else None
            stats = classes.setdefault(
                item["category"], {"n": 0, "valid": 0, "correct": 0, "tp": 0}
            )
            stats["n"] += 1
            stats["valid"] += error is None
            stats["correct"] += correct
            stats["tp"] += guess == item["category"]
            if guess is not None:
                predicted[guess] = predicted.get(guess, 0) + 1
            if error is not None:
                errors[error] = errors.get(error, 0) + 1
            counts["n"] += 1
            counts["format_valid"] += error is None
            counts["content_correct"] += correct
            writer.writerow([item["ticket_id"], item["category"], guess, error, correct,
                             *matches.values()])  # fmt: skip
    summary = {
        "overall": counts,
        "errors": errors,
        "classes": {
            label: {**stats, "precision": stats["tp"] / predicted[label] if predicted.get(label)
                    else 0.0, "recall": stats["tp"] / stats["n"]}
            for label, stats in sorted(classes.items())
        },
    }  # fmt: skip
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    return {**counts, **{f"errors.{k}": v for k, v in errors.items()}}


def _tree_rss_bytes(root: int) -> int:
    """Resident memory of ``root`` and all its descendants, from /proc."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
                parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    tree, frontier = {root}, [root]
    while frontier:
        current = frontier.pop()
        for pid, parent in parents.items():
            if parent == current and pid not in tree:
                tree.add(pid)
                frontier.append(pid)
    total = 0
    for pid in tree:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        except OSError:
            continue
    return total


def run_evalkit(
    gold: Path, pred: Path, out: Path, env: dict[str, str] | None = None, cwd: Path | None = None
) -> dict[str, float]:
    """``python -m evalkit score`` in a fresh process: seconds, peak tree RSS, peak process RSS.

    ``env`` and ``cwd`` choose the checkout that runs (``python -m`` puts the
    working directory first on the path).
    """
    command = [
        sys.executable, "-m", "evalkit", "score", "--contract", str(CONTRACT), "--gold", str(gold),
        "--pred", str(pred), "--out", str(out), "--force", "-q",
    ]  # fmt: skip
    time_file = out.parent / "time.txt"
    started = time.perf_counter()
    process = subprocess.Popen(
        ["/usr/bin/time", "-v", "-o", str(time_file), *command],
        stdout=subprocess.DEVNULL,
        env=env,
        cwd=cwd,
    )
    peak = 0
    stop = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not stop.is_set():
            peak = max(peak, _tree_rss_bytes(process.pid))
            stop.wait(0.25)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    code = process.wait()
    seconds = time.perf_counter() - started
    stop.set()
    sampler.join()
    if code != 0:
        raise SystemExit(f"evalkit score failed with exit code {code}")
    report = dict(
        line.strip().rsplit(": ", 1) for line in time_file.read_text().splitlines() if ": " in line
    )
    return {
        "seconds": seconds,
        "tree_peak_mb": peak / 2**20,
        "process_peak_mb": int(report["Maximum resident set size (kbytes)"]) / 1024,
        # CPU time of the whole process tree: steadier than wall time on a shared machine.
        "cpu_seconds": float(report["User time (seconds)"])
        + float(report["System time (seconds)"]),
    }


def load_average() -> str:
    """The 1-minute load average (other processes competing for the cores)."""
    return Path("/proc/loadavg").read_text().split()[0]


def main() -> None:
    """Run the measurements and print them as Markdown table rows."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--big-rows", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=3, help="evalkit runs (best is kept)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-score-") as temp:
        folder = Path(temp)
        gold, pred = generate(args.rows, folder)
        size_mb = pred.stat().st_size / 2**20
        print(f"{args.rows:,} rows: predictions {size_mb:,.0f} MB, cpu count {os.cpu_count()}, "
              f"load average {load_average()} at the start")  # fmt: skip
        runs = [run_evalkit(gold, pred, folder / "out") for _ in range(args.repeat)]
        best = min(runs, key=lambda run: run["seconds"])
        written = json.loads((folder / "out" / "summary.json").read_text())
        summary = {**written["overall"]}
        summary |= {f"errors.{k}": v["count"] for k, v in written["errors"].items()}
        started, started_cpu = time.perf_counter(), time.process_time()
        reference = reference_score(gold, pred, folder / "reference")
        reference_seconds = time.perf_counter() - started
        reference_cpu = time.process_time() - started_cpu
        agree = reference == {key: summary[key] for key in reference} and all(
            key in reference for key in summary if key.startswith("errors.")
        )
        rate, reference_rate = args.rows / best["seconds"], args.rows / reference_seconds
        timings = ", ".join(f"{run['seconds']:.2f}" for run in runs)
        cpu = ", ".join(f"{run['cpu_seconds']:.2f}" for run in runs)
        print(f"| evalkit score, {args.rows:,} rows, fresh process (best of {args.repeat}: "
              f"{timings} s; CPU {cpu} s) | {best['seconds']:.2f} | "
              f"{rate:,.0f} rows/s; peak RSS {best['process_peak_mb']:,.0f} MB (largest "
              f"process), {best['tree_peak_mb']:,.0f} MB (process tree) |")  # fmt: skip
        print(f"| reference (Python loop, json.loads, jsonschema), same files (CPU "
              f"{reference_cpu:.2f} s) | {reference_seconds:.2f} | {reference_rate:,.0f} rows/s; "
              f"evalkit **{rate / reference_rate:.1f}×** faster; "
              f"counts agree: {agree} |")  # fmt: skip
        print(f"load average {load_average()} at the end of the {args.rows:,}-row runs")
        if not agree:
            print(f"  reference {reference} vs evalkit {summary}")
    if args.big_rows:
        with tempfile.TemporaryDirectory(prefix="bench-score-big-") as temp:
            folder = Path(temp)
            gold, pred = generate(args.big_rows, folder)
            size_mb = pred.stat().st_size / 2**20
            big = run_evalkit(gold, pred, folder / "out")
            print(f"| evalkit score, {args.big_rows:,} rows ({size_mb:,.0f} MB of predictions), "
                  f"fresh process (CPU {big['cpu_seconds']:.2f} s, load average "
                  f"{load_average()} after) | {big['seconds']:.2f} | "
                  f"{args.big_rows / big['seconds']:,.0f} "
                  f"rows/s; **peak RSS {big['process_peak_mb']:,.0f} MB** (largest process), "
                  f"{big['tree_peak_mb']:,.0f} MB (process tree) |")  # fmt: skip


if __name__ == "__main__":
    main()
