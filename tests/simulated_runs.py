"""Test helper: gold tickets and seeded model outputs, scored by the real ``evalkit score``.

The outputs mix the cases a report has to show: right answers, wrong classes
(some predicting a class no gold item has), wrong priorities, truncated
JSON, prose without JSON, blank outputs and missing ids; each run from its
own seed, so baseline and candidate flip on different examples.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from evalkit import score

ROOT = Path(__file__).resolve().parents[1]
CONTRACT = ROOT / "contracts" / "ticket-triage.yaml"
# (class, gold items): five common classes and two rare ones (at most 10 items).
CLASSES = [("billing", 40), ("shipping", 30), ("account", 24), ("technical", 20),
           ("returns", 16), ("legal_threat", 6), ("fraud_report", 4)]  # fmt: skip
ALL_LABELS = [label for label, _ in CLASSES] + ["product_question"]


def gold_rows() -> list[dict]:
    rows, number = [], 0
    for category, count in CLASSES:
        for _ in range(count):
            number += 1
            rows.append({"ticket_id": f"T{number:04d}", "category": category,
                         "priority": "normal", "order_id": None, "amount": None})  # fmt: skip
    return rows


def simulated_output(row: dict, rng: random.Random, error_rate: float) -> str | None:
    """One raw output for a gold row; None means no prediction for the id."""
    answer = dict(row)
    del answer["ticket_id"]
    draw = rng.random()
    if draw < error_rate * 0.15:
        return None
    if draw < error_rate * 0.3:
        return json.dumps(answer)[:25]  # truncated: invalid_json
    if draw < error_rate * 0.4:
        return "I think this is about " + row["category"]  # no_json
    if draw < error_rate * 0.45:
        return "   "  # empty
    if draw < error_rate * 0.85:
        answer["category"] = rng.choice([c for c in ALL_LABELS if c != row["category"]])
    elif draw < error_rate:
        answer["priority"] = "high"
    text = json.dumps(answer)
    return f"Sure! Here it is:\n```json\n{text}\n```" if rng.random() < 0.3 else text


def scored_run(folder: Path, name: str, seed: int, error_rate: float, cli: bool = False) -> Path:
    """Write gold (once) and this run's predictions under ``folder``; score; return the result.

    With ``cli``, scored by the ``evalkit score`` command (which adds report.html).
    """
    folder.mkdir(parents=True, exist_ok=True)
    gold = folder / "gold.jsonl"
    rows = gold_rows()
    if not gold.exists():
        gold.write_text("".join(json.dumps(row) + "\n" for row in rows))
    rng = random.Random(seed)
    lines = []
    for row in rows:
        output = simulated_output(row, rng, error_rate)
        if output is not None:
            lines.append(json.dumps({"ticket_id": row["ticket_id"], "output": output}))
    predictions = folder / f"{name}.jsonl"
    predictions.write_text("\n".join(lines) + "\n")
    out = folder / name
    if cli:
        from evalkit.cli import main

        args = ["score", "--contract", CONTRACT, "--gold", gold, "--pred", predictions]
        try:
            main([str(arg) for arg in [*args, "--out", out, "--name", name, "--quiet"]])
        except SystemExit as done:
            assert done.code in (0, None), done.code
    else:
        score(CONTRACT, gold, predictions, name=name).write(out)
    return out
