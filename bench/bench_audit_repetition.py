"""Benchmark repetition within a split on its worst case: one template, thousands of times.

Run: ``.venv/bin/python bench/bench_audit_repetition.py`` (``--n 20000``
random texts, ``--template 5000`` variants, ``--baseline-code DIR`` to time
another checkout's audit of the same files alternately, ``--repeats 3``).

Data: ``n`` texts of 20-80 words from a Zipf-like 50,000-word vocabulary
(bench_audit.py's generator), split 80/10/10 at random, plus ``template``
variants of one 40-word message that differ only in an order number, all in
``train``: one LSH bucket of thousands of distinct texts inside one split.
Across splits the audit never pairs texts of one split, so before the
within-split figures such a template cost nothing; inside the split its
clusters are found by checking each text against a pivot (linear), not by
checking every pair (5,000 variants: 12.5M pairs). The script checks that
the template comes out as one cluster of ``template`` items.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
from datetime import date
from pathlib import Path

import numpy as np
import polars as pl

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from bench_audit import report_ratio, texts_from_words, timed_audit  # noqa: E402

VOCABULARY = 50_000
TEMPLATE = (
    "this is an automated message from the order status form on our website a customer has "
    "submitted a request about order {} and would like to know where the parcel is and when "
    "it will arrive please look up the shipment and answer the customer directly"
)


def make_files(folder: Path, n: int, template: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    lengths = rng.integers(20, 81, n)
    weights = 1.0 / np.arange(1, VOCABULARY + 1) ** 1.05
    words = rng.choice(VOCABULARY, size=int(lengths.sum()), p=weights / weights.sum())
    texts = texts_from_words(words, lengths)
    split = rng.choice(np.array(["train", "val", "test"]), size=n, p=[0.8, 0.1, 0.1])
    rows = pl.DataFrame({"id": [f"R{i:07d}" for i in range(n)], "text": texts, "split": split})
    forms = pl.DataFrame(
        {
            "id": [f"F{i:07d}" for i in range(template)],
            "text": [TEMPLATE.format(f"ORD-{i:06d}") for i in range(template)],
            "split": ["train"] * template,
        }
    )
    # Each text is its own conversation (the audit is run with --group conversation_id).
    everything = pl.concat([rows, forms]).with_columns(pl.col("id").alias("conversation_id"))
    for name in ("train", "val", "test"):
        part = everything.filter(pl.col("split") == name).drop("split")
        part.write_parquet(folder / f"{name}.parquet")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--template", type=int, default=5_000)
    parser.add_argument("--baseline-code", type=Path)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench-repetition-"))
    try:
        make_files(folder, args.n, args.template)
        codes = [("this", ROOT)]
        if args.baseline_code is not None:
            codes.insert(0, ("baseline", args.baseline_code))
        wall: dict[str, list[float]] = {name: [] for name, _ in codes}
        cpu: dict[str, list[float]] = {name: [] for name, _ in codes}
        report: dict = {}
        for _ in range(args.repeats):
            for name, code in codes:
                seconds, used, found = timed_audit(folder, code)
                wall[name].append(seconds)
                cpu[name].append(used)
                if name == "this":
                    report = found
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    load = os.getloadavg()[0]
    print(f"{date.today()}, {platform.machine()}, {os.cpu_count()} cores, load {load:.1f}")
    print(f"{args.n:,} random texts + {args.template:,} template variants in train")
    report_ratio(wall, cpu)
    train = report["within"]["train"]
    largest = train["clusters"][0]
    print(
        f"train: {train['near_share']:.1%} in near-duplicate clusters, largest "
        f"{largest['size']:,} ({largest['example_id']}); openings: "
        f"{json.dumps(train['openings'][:1])}"
    )
    if largest["size"] != args.template:
        raise SystemExit(f"the template should be one cluster of {args.template} items")


if __name__ == "__main__":
    main()
