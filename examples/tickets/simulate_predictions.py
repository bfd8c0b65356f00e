"""Write SIMULATED predictions of three ticket-triage models, for the walkthrough.

Nothing here is a real model: the outputs are generated from the gold labels,
with a seeded random generator, to have the shapes real model outputs have.
They let the demo show what evalkit measures without training anything:

* ``baseline`` - a prompt-only reference: answers in raw text with ``` fences,
  prose around the JSON, truncated JSON, some missing answers, some schema
  violations and plain-text refusals; moderate content accuracy.
* ``candidate-a`` - an adapter that raises average content accuracy and
  format validity but gets the rare class ``legal_threat`` systematically
  wrong (it files legal threats as ``account``): the regression an average hides.
* ``candidate-b`` - an adapter that raises the average without breaking any
  class: it may flip a few examples the baseline had right, but never so many
  that a class, the ``no-order-id`` slice or the overall accuracy drops.

Usage::

    python examples/tickets/simulate_predictions.py demo-out/split/test.parquet \\
        --out demo-out/predictions [--seed 11]

writes ``baseline.jsonl``, ``candidate-a.jsonl`` and ``candidate-b.jsonl``
(``{"ticket_id": ..., "output": "<raw text>"}`` per line). The same gold file
and seed always give the same bytes, whatever the gold row order.

A gold file split from ``generate.py --plant`` output has a ``planted_flip``
column (the true category of a ticket whose label was flipped): there every
model answers the true category, validly, as models that read the text do;
those are the items ``evalkit compare`` lists as suspect gold labels.

The gold file may be a split of the training conversations
(``tickets_chat.jsonl``): the gold values are then read from each
conversation's reference answer. With ``--batch-input PROMPTS`` (the file
``evalkit prompts`` wrote) the predictions come as the output file an OpenAI
Batch job would return for it instead, ``<model>.batch-output.jsonl``: one
response per request, in the requests' order (a missing answer is a request
that failed, which the Batch API reports in its separate error file)::

    python examples/tickets/simulate_predictions.py demo-out/chat-split/test.jsonl \\
        --batch-input demo-out/prompts/test.batch.jsonl --out demo-out/chat-predictions
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path
from typing import Any

import polars as pl

CATEGORIES = [
    "billing", "shipping", "account", "technical",
    "returns", "product_question", "legal_threat", "fraud_report",
]  # fmt: skip
PRIORITIES = ["low", "normal", "high", "urgent"]
# (content right given a valid answer, share of invalid answers) per model
QUALITY = {"baseline": (0.74, 0.16), "candidate-a": (0.93, 0.03), "candidate-b": (0.93, 0.03)}
BASELINE_FAILURES = ["missing", "empty", "no_json", "truncated", "python_dict", "schema_enum",
                     "schema_required"]  # fmt: skip
CANDIDATE_FAILURES = ["truncated", "schema_enum"]


def _answer(item: dict[str, Any], right: bool, rng: random.Random) -> dict[str, Any]:
    """The model's structured answer: the gold values, with one field wrong unless ``right``."""
    answer = {key: item[key] for key in ("category", "priority", "order_id", "amount")}
    if answer["order_id"] is not None and rng.random() < 0.3:
        answer["order_id"] = answer["order_id"].lower()  # matches: normalized
    if answer["amount"] is not None and rng.random() < 0.3:
        answer["amount"] = round(answer["amount"] + rng.choice([-0.004, 0.004]), 3)  # in tolerance
    if answer["order_id"] is None and rng.random() < 0.5:
        del answer["order_id"]  # null gold: absent is fine
    if right:
        return answer
    wrong = rng.choice(["category", "category", "priority", "order_id", "amount"])
    if wrong == "category":
        answer["category"] = rng.choice([c for c in CATEGORIES if c != item["category"]])
    elif wrong == "priority":
        answer["priority"] = rng.choice([p for p in PRIORITIES if p != item["priority"]])
    elif wrong == "order_id":
        answer["order_id"] = None if item["order_id"] else f"ORD-{rng.randrange(10**6):06d}"
    else:
        gold_amount = item["amount"] or 0.0
        answer["amount"] = round(gold_amount + max(1.0, gold_amount * rng.choice([0.5, 1.0])), 2)
    return answer


def _render(answer: dict[str, Any], failure: str | None, rng: random.Random) -> str | None:
    """Raw text for an answer: valid in one of several styles, or broken as ``failure`` says."""
    text = json.dumps(answer)
    if failure == "missing":
        return None
    if failure == "empty":
        return rng.choice(["", "  \n"])
    if failure == "no_json":
        return f"This ticket is about {answer['category'].replace('_', ' ')}, {answer['priority']}."
    if failure == "truncated":
        return text[: rng.randrange(8, max(9, len(text) - 2))]
    if failure == "python_dict":
        return repr(answer)
    if failure == "schema_enum":
        return json.dumps({**answer, "priority": rng.choice(["critical", "P1", "High"])})
    if failure == "schema_required":
        return json.dumps({k: v for k, v in answer.items() if k != "priority"})
    style = rng.random()
    if style < 0.25:
        return f"```json\n{json.dumps(answer, indent=2)}\n```"
    if style < 0.45:
        return f"Here is the triage for this ticket:\n{text}\nLet me know if you need more."
    return text


def _failure(model: str, rng: random.Random) -> str | None:
    if rng.random() >= QUALITY[model][1]:
        return None
    return rng.choice(BASELINE_FAILURES if model == "baseline" else CANDIDATE_FAILURES)


def _outcomes(items: list[dict[str, Any]], model: str, rng: random.Random) -> list[tuple]:
    """(failure, right) per item, before the per-group repair."""
    right_share = QUALITY[model][0]
    return [(_failure(model, rng), rng.random() < right_share) for _ in items]


def _correct(outcome: tuple) -> bool:
    return outcome[0] is None and outcome[1]


def _repair(items: list[dict[str, Any]], base: list[tuple], cand: list[tuple]) -> list[tuple]:
    """Undo negative flips until no class, the no-order-id slice or the total drops."""
    cand = list(cand)
    groups = [("all", lambda item: True), ("slice", lambda item: item["order_id"] is None)]
    groups += [(c, lambda item, c=c: item["category"] == c) for c in CATEGORIES]
    for _, member in groups:
        idx = [i for i, item in enumerate(items) if member(item)]
        deficit = sum(_correct(base[i]) for i in idx) - sum(_correct(cand[i]) for i in idx)
        for i in idx:
            if deficit <= 0:
                break
            if _correct(base[i]) and not _correct(cand[i]):
                cand[i] = (None, True)
                deficit -= 1
    return cand


def simulate(gold: pl.DataFrame, seed: int) -> dict[str, list[dict[str, Any]]]:
    """Records ``{ticket_id, output}`` per model, in ticket_id order."""
    items = gold.sort("ticket_id").to_dicts()
    base = _outcomes(items, "baseline", random.Random(f"{seed}:baseline"))
    cand_a = _outcomes(items, "candidate-a", random.Random(f"{seed}:candidate-a"))
    cand_b = _outcomes(items, "candidate-b", random.Random(f"{seed}:candidate-b"))
    # Candidates are fine-tuned from the same data: they keep most of what the baseline knew.
    cand_a = [(f, r or _correct(b)) for (f, r), b in zip(cand_a, base, strict=True)]
    cand_b = _repair(items, base, cand_b)
    plans = {"baseline": base, "candidate-a": cand_a, "candidate-b": cand_b}
    records: dict[str, list[dict[str, Any]]] = {}
    for model, plan in plans.items():
        rng = random.Random(f"{seed}:{model}:render")
        rows = []
        for item, (failure, right) in zip(items, plan, strict=True):
            truth = item.get("planted_flip")
            if truth is not None:  # a planted wrong label: every model reads the text right
                failure, right = None, True
            answer = _answer(item, right, rng)
            if truth is not None:
                answer["category"] = truth
            if model == "candidate-a" and item["category"] == "legal_threat":
                answer["category"] = "account"  # the systematic rare-class regression
            output = _render(answer, failure, rng)
            if output is not None:
                rows.append({"ticket_id": item["ticket_id"], "output": output})
        records[model] = rows
    return records


def _read_gold(path: Path) -> pl.DataFrame:
    from evalkit.chat import read_chat
    from evalkit.io import read_table

    table = read_table(path)
    frame = table.frame
    column = next((c for c in ("messages", "conversations") if c in frame.columns), None)
    if column is None:
        return frame
    # Training conversations: the gold values are the reference answer's keys.
    chat = read_chat(table, column)
    answers = [json.loads(answer) for answer in chat.reference_answers().to_list()]
    keys = ("category", "priority", "order_id", "amount")
    values = {key: [answer.get(key) for answer in answers] for key in keys}
    return pl.DataFrame({"ticket_id": frame["ticket_id"], **values})


def batch_output(requests: list[dict[str, Any]], rows: list[dict[str, Any]]) -> list[dict]:
    """What an OpenAI Batch job returns for ``requests`` when the model answers ``rows``.

    One record per answered request, in the requests' order; a request
    without an answer failed, and the Batch API lists it in its error file.
    """
    outputs = {row["ticket_id"]: row["output"] for row in rows}
    records = []
    for number, request in enumerate(requests, start=1):
        custom_id = request["custom_id"]
        if custom_id not in outputs:
            continue
        message = {"role": "assistant", "content": outputs[custom_id]}
        body = {
            "id": f"chatcmpl-{number:06d}",
            "object": "chat.completion",
            "model": request["body"]["model"],
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        }
        records.append(
            {
                "id": f"batch_req_{number:06d}",
                "custom_id": custom_id,
                "response": {"status_code": 200, "request_id": f"req_{number:06d}", "body": body},
                "error": None,
            }
        )
    return records


def main() -> None:
    """Command line: gold file in, three simulated prediction files out."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("gold", type=Path, help="gold file, e.g. demo-out/split/test.parquet")
    parser.add_argument("--out", type=Path, required=True, help="folder for the three files")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument(
        "--batch-input", type=Path, help="OpenAI Batch requests (evalkit prompts) to answer"
    )
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    requests = None
    if args.batch_input is not None:
        text = args.batch_input.read_text(encoding="utf-8")
        requests = [json.loads(line) for line in text.splitlines() if line.strip()]
    for model, rows in simulate(_read_gold(args.gold), args.seed).items():
        name, records = f"{model}.jsonl", rows
        if requests is not None:
            name, records = f"{model}.batch-output.jsonl", batch_output(requests, rows)
        lines = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in records)
        (args.out / name).write_text(lines, encoding="utf-8")
        print(f"wrote {args.out / name} ({len(records)} simulated predictions)")


if __name__ == "__main__":
    main()
