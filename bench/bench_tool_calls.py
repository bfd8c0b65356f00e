"""Benchmark scoring tool calls (``output.parse: tool_calls``) against a naive Python scorer.

Run: ``.venv/bin/python bench/bench_tool_calls.py`` (about 3 minutes on 2 cores;
``--rows`` to change the size, default 500,000).

Data: the tickets' first move at scale - each row's tools (one of four
OpenAI function lists, as JSON text in a Parquet column), its gold calls
(``gold_calls``, JSON text: ``lookup_order`` alone or with ``refund_status`` /
``track_parcel`` in parallel, ``escalate_to_legal``, or none) and a model's raw
output in Qwen's ``<tool_call>`` syntax, as ``evalkit generate`` writes it: 70%
right (some with a lower-cased order id, parallel calls reversed, ``<think>``
first), and the rest wrong order ids, a missing parallel call, text where a
call is expected, a call where none is, a schema break, an unknown tool,
truncated calls, blank and missing outputs. Random order ids: nearly every
output and every gold call is unique.

Measured in one run, on the same files:

* **evalkit**: ``python -m evalkit score`` in a fresh process, end to end
  (start-up, reading gold Parquet and predictions JSONL, finding and parsing
  the calls, schema validation, matching, summary, writing both files);
* **reference**: a naive scorer written the obvious way - a Python loop with
  ``json.loads`` per gold row and per call, a regex for the ``<tool_call>``
  blocks, a ``jsonschema`` validator per tool (built once, cached) called per
  call with its best error for the path, calls compared as sorted canonical
  JSON, per-class counters, a per-example CSV and a summary. Its counts
  (format-valid, content-correct, every error category) must equal evalkit's,
  or the comparison would mean nothing.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
import unicodedata
from pathlib import Path

import polars as pl

ROOT = Path(__file__).resolve().parents[1]
CONTRACT = """\
name: ticket-tool-calls-bench
version: 1
id: ticket_id
class: function
gold_calls: expected
output:
  parse: tool_calls
  tools: tools
  calls: set
fields:
  name: {match: exact}
  arguments.order_id: {match: normalized}
"""


def _tool(name: str, properties: dict, required: list[str], closed: bool = False) -> dict:
    parameters = {"type": "object", "properties": properties, "required": required}
    if closed:
        parameters["additionalProperties"] = False
    return {"type": "function", "function": {"name": name, "parameters": parameters}}


ORDER = {"type": "string", "pattern": "^[A-Za-z]{3}-[0-9]{6}$"}
LOOKUP = _tool("lookup_order", {"order_id": ORDER}, ["order_id"])
REFUND = _tool(
    "refund_status", {"order_id": ORDER, "include_history": {"type": "boolean"}}, ["order_id"]
)
TRACK = _tool(
    "track_parcel",
    {"order_id": ORDER, "carrier": {"type": "string", "enum": ["dhl", "ups", "post"]}},
    ["order_id"],
)
LEGAL = _tool(
    "escalate_to_legal", {"priority": {"type": "string", "enum": ["high", "urgent"]}},
    ["priority"], closed=True,
)  # fmt: skip
TOOL_LISTS = [
    [LOOKUP, REFUND, TRACK, LEGAL],
    [LOOKUP, REFUND, LEGAL],
    [LOOKUP, TRACK, LEGAL],
    [LEGAL, LOOKUP, TRACK, REFUND],
]


def _json(expression: pl.Expr) -> pl.Expr:
    return pl.concat_str(pl.lit('"'), expression, pl.lit('"'))


def _call(name: str, arguments: pl.Expr) -> pl.Expr:
    return pl.concat_str(pl.lit('{"name": "' + name + '", "arguments": {'), arguments, pl.lit("}}"))


def generate(rows: int, folder: Path, seed: int = 0) -> tuple[Path, Path]:
    """Gold Parquet and predictions JSONL of ``rows`` items, built with polars expressions."""
    import numpy as np

    rng = np.random.default_rng(seed)
    ids = "T" + pl.Series(np.arange(rows)).cast(pl.String).str.zfill(9)
    kind = pl.Series(rng.choice(5, rows, p=[0.35, 0.30, 0.15, 0.15, 0.05]))
    order = "ORD-" + pl.Series(rng.integers(0, 10**6, rows)).cast(pl.String).str.zfill(6)
    other = "ORD-" + pl.Series(rng.integers(0, 10**6, rows)).cast(pl.String).str.zfill(6)
    frame = pl.DataFrame({
        "ticket_id": ids, "kind": kind, "order": order, "other": other,
        "tools_index": pl.Series(rng.integers(0, 4, rows)),
        "roll": pl.Series(rng.random(rows)), "flip": pl.Series(rng.random(rows)),
        "priority": pl.Series(["high", "urgent"]).gather(rng.integers(0, 2, rows)),
    })  # fmt: skip
    # Tools that hold the gold functions: kind 2 needs refund_status, kind 3 track_parcel.
    tools_index = (
        pl.when(pl.col("kind") == 2).then(pl.col("tools_index").replace({2: 1}))
        .when(pl.col("kind") == 3).then(pl.col("tools_index").replace({1: 2}))
        .otherwise(pl.col("tools_index"))
    )  # fmt: skip
    texts = pl.Series([json.dumps(tools) for tools in TOOL_LISTS])
    order_arg = pl.concat_str(pl.lit('"order_id": '), _json(pl.col("order")))
    lookup, refund = _call("lookup_order", order_arg), _call("refund_status", order_arg)
    track = _call("track_parcel", order_arg)
    legal = _call(
        "escalate_to_legal", pl.concat_str(pl.lit('"priority": '), _json(pl.col("priority")))
    )
    k = pl.col("kind")
    gold_calls = (
        pl.when(k == 0).then(pl.lit("[]"))
        .when(k == 1).then(pl.concat_str(pl.lit("["), lookup, pl.lit("]")))
        .when(k == 2).then(pl.concat_str(pl.lit("["), lookup, pl.lit(", "), refund, pl.lit("]")))
        .when(k == 3).then(pl.concat_str(pl.lit("["), lookup, pl.lit(", "), track, pl.lit("]")))
        .otherwise(pl.concat_str(pl.lit("["), legal, pl.lit("]")))
    )  # fmt: skip
    frame = frame.with_columns(tools_index.alias("tools_index"), gold_calls.alias("expected"))
    gold = frame.select(
        "ticket_id", pl.lit(texts).gather(pl.col("tools_index")).alias("tools"), "expected"
    )

    def block(call: pl.Expr) -> pl.Expr:
        return pl.concat_str(pl.lit("<tool_call>\n"), call, pl.lit("\n</tool_call>"))

    low = pl.concat_str(pl.lit('"order_id": '), _json(pl.col("order").str.to_lowercase()))
    right_first = (
        pl.when(pl.col("flip") < 0.1).then(block(_call("lookup_order", low)))
        .otherwise(block(lookup))
    )  # fmt: skip
    second = pl.when(k == 2).then(block(refund)).otherwise(block(track))
    calls_right = (
        pl.when(k == 4).then(block(legal))
        .when(k == 1).then(right_first)
        .when(pl.col("flip") < 0.5).then(pl.concat_str(right_first, pl.lit("\n"), second))
        .otherwise(pl.concat_str(second, pl.lit("\n"), right_first))
    )  # fmt: skip
    wrong_arg = _call("lookup_order", pl.concat_str(pl.lit('"order_id": '), _json(pl.col("other"))))
    # the wrong tool, or a parallel call missing
    wrong_tool = pl.when(k == 1).then(block(refund)).otherwise(block(lookup))
    fedex = _call("track_parcel", pl.concat_str(order_arg, pl.lit(', "carrier": "fedex"')))
    text_answer = pl.lit('{"category": "account", "priority": "low", "order_id": null}')
    r = pl.col("roll")
    output = (
        pl.when(r < 0.01).then(pl.lit(None))
        .when(r < 0.02).then(pl.lit("  "))
        .when(k == 0).then(
            pl.when(r < 0.93).then(text_answer).otherwise(block(wrong_arg)))
        .when(r < 0.72).then(
            pl.when(pl.col("flip") < 0.2)
            .then(pl.concat_str(pl.lit("<think>\n\n</think>\n\n"), calls_right))
            .otherwise(calls_right))
        .when(r < 0.78).then(block(wrong_arg))
        .when(r < 0.82).then(wrong_tool)
        .when(r < 0.86).then(pl.lit("Your ticket is with the right team."))
        .when(r < 0.89).then(block(fedex))
        .when(r < 0.91).then(block(_call("get_order", order_arg)))
        .when(r < 0.94).then(calls_right.str.slice(0, 40))
        .otherwise(calls_right)
    )  # fmt: skip
    predictions = frame.select("ticket_id", output.alias("output")).filter(
        pl.col("output").is_not_null()
    )
    gold_path, pred_path = folder / "gold.parquet", folder / "predictions.jsonl"
    gold.write_parquet(gold_path)
    predictions.write_ndjson(pred_path)
    return gold_path, pred_path


BLOCK = re.compile(r"<tool_call>(.*?)(?:</tool_call>|\Z)", re.DOTALL)


def _normal(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).lower().split())


def _canonical(name: str, arguments: dict) -> str:
    shown = {
        k: _normal(v) if k == "order_id" and isinstance(v, str) else v for k, v in arguments.items()
    }
    return json.dumps({"name": name, "arguments": shown}, sort_keys=True)


def _naive_calls(text: str) -> list | None:
    """The ``<tool_call>`` blocks' calls; None when one does not parse; [] for text."""
    if "<tool_call>" not in text:
        return []
    calls = []
    for block in BLOCK.findall(text):
        try:
            value = json.loads(block.strip())
        except ValueError:
            return None
        if not isinstance(value, dict) or not isinstance(value.get("arguments"), dict):
            return None
        calls.append((value.get("name"), value["arguments"]))
    return calls


def reference_score(
    gold_path: Path, pred_path: Path, out: Path, rows: int | None = None, cached: bool = True
) -> dict[str, int]:
    """The naive scorer (see the module docstring); returns its counts.

    ``cached=False`` is the most naive reading of "jsonschema per call":
    ``jsonschema.validate(arguments, schema)`` for each call, which checks the
    schema against its meta-schema every time (run on the first ``rows`` only).
    """
    import jsonschema
    from jsonschema.exceptions import best_match

    gold = (
        pl.read_parquet(gold_path).head(rows).to_dicts()
        if rows
        else pl.read_parquet(gold_path).to_dicts()
    )
    outputs = {}
    with pred_path.open() as handle:
        for line in handle:
            record = json.loads(line)
            outputs[record["ticket_id"]] = record["output"]
    validators: dict[str, dict] = {}
    counts = {"n": 0, "format_valid": 0, "content_correct": 0}
    errors: dict[str, int] = {}
    classes: dict[str, list[int]] = {}
    out.mkdir(parents=True, exist_ok=True)
    with (out / "examples.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "class", "error", "detail", "content_correct"])
        for item in gold:
            tools = validators.get(item["tools"])
            if tools is None:
                tools = validators[item["tools"]] = {
                    t["function"]["name"]: jsonschema.Draft202012Validator(
                        t["function"]["parameters"]
                    )
                    for t in json.loads(item["tools"])
                }
            expected = [(c["name"], c["arguments"]) for c in json.loads(item["expected"])]
            klass = "+".join(sorted({name for name, _ in expected})) or "none"
            text = outputs.get(item["ticket_id"])
            error = detail = None
            calls = None
            if text is None:
                error = "missing"
            elif not text.strip():
                error = "empty"
            else:
                calls = _naive_calls(text)
                if calls is None:
                    error = "unparsable_call" if expected else "unexpected_call"
                elif not calls:
                    error = "no_call" if expected else None
                elif not expected:
                    error = "unexpected_call"
                elif any(name not in tools for name, _ in calls):
                    error = "unknown_tool"
                else:
                    for name, arguments in calls:
                        if not cached:
                            try:
                                jsonschema.validate(arguments, tools[name].schema)
                                continue
                            except jsonschema.ValidationError as failed:
                                error, detail = "invalid_arguments", failed.json_path
                                break
                        found = best_match(tools[name].iter_errors(arguments))
                        if found is not None:
                            error, detail = "invalid_arguments", found.json_path
                            break
            correct = error is None and sorted(_canonical(*c) for c in calls or []) == sorted(
                _canonical(*c) for c in expected
            )
            counts["n"] += 1
            counts["format_valid"] += error is None
            counts["content_correct"] += correct
            if error is not None:
                errors[error] = errors.get(error, 0) + 1
            stats = classes.setdefault(klass, [0, 0, 0])
            stats[0] += 1
            stats[1] += error is None
            stats[2] += correct
            writer.writerow([item["ticket_id"], klass, error, detail, correct])
    summary = {"overall": counts, "errors": errors, "classes": classes}
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    return {**counts, **{f"errors.{k}": v for k, v in errors.items()}}


def run_evalkit(contract: Path, gold: Path, pred: Path, out: Path) -> tuple[float, float]:
    """``python -m evalkit score`` in a fresh process: (wall seconds, CPU seconds of the tree)."""
    command = [
        sys.executable, "-m", "evalkit", "score", "--contract", str(contract), "--gold",
        str(gold), "--pred", str(pred), "--out", str(out), "--force", "--no-ledger", "-q",
    ]  # fmt: skip
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, cwd=ROOT)
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return seconds, cpu


def load_average() -> str:
    """The 1-minute load average (other processes competing for the cores)."""
    return Path("/proc/loadavg").read_text().split()[0]


def main() -> None:
    """Run both scorers on the same files and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=500_000)
    parser.add_argument("--repeat", type=int, default=3, help="evalkit runs (best is kept)")
    parser.add_argument(
        "--validate-rows",
        type=int,
        default=20_000,
        help="rows scored by the most naive reference (jsonschema.validate per call), "
        "extrapolated to --rows (0: skip it)",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-tool-calls-") as temp:
        folder = Path(temp)
        contract = folder / "contract.yaml"
        contract.write_text(CONTRACT)
        gold, pred = generate(args.rows, folder)
        size_mb = pred.stat().st_size / 2**20
        print(f"{args.rows:,} rows: predictions {size_mb:,.0f} MB, gold "
              f"{gold.stat().st_size / 2**20:,.0f} MB, cpu count {os.cpu_count()}, "
              f"load average {load_average()} at the start")  # fmt: skip
        runs = []
        for _ in range(args.repeat):
            runs.append(run_evalkit(contract, gold, pred, folder / "out"))
            print(
                f"  evalkit: {runs[-1][0]:.2f} s (CPU {runs[-1][1]:.2f} s), load {load_average()}"
            )
        best = min(runs)
        written = json.loads((folder / "out" / "summary.json").read_text())
        ours = {key: written["overall"][key] for key in ("n", "format_valid", "content_correct")}
        ours |= {f"errors.{k}": v["count"] for k, v in written["errors"].items()}
        started, started_cpu = time.perf_counter(), time.process_time()
        reference = reference_score(gold, pred, folder / "reference")
        reference_seconds = time.perf_counter() - started
        reference_cpu = time.process_time() - started_cpu
        print(f"  reference: {reference_seconds:.2f} s (CPU {reference_cpu:.2f} s), "
              f"load {load_average()}")  # fmt: skip
        print(f"  counts agree: {reference == ours}  ({ours})")
        if reference != ours:
            print(f"  reference counts: {reference}")
        print(f"  evalkit best {best[0]:.2f} s, {args.rows / best[0]:,.0f} rows/s; reference "
              f"{reference_seconds:.2f} s: ratio {reference_seconds / best[0]:.1f}x")  # fmt: skip
        if args.validate_rows:
            started = time.perf_counter()
            reference_score(gold, pred, folder / "validate", args.validate_rows, cached=False)
            per_row = (time.perf_counter() - started) / args.validate_rows
            print(f"  jsonschema.validate per call: {per_row * 1e6:.0f} us a row on "
                  f"{args.validate_rows:,} rows, {per_row * args.rows:.0f} s at {args.rows:,}: "
                  f"ratio {per_row * args.rows / best[0]:.0f}x, load {load_average()}")  # fmt: skip


if __name__ == "__main__":
    main()
