"""Write SIMULATED answers of three function-calling models to the tickets' first move.

Nothing here is a real model: the answers are generated from the reference
turns of the test split (``generate.py --format calls``), with a seeded random
generator, in the shapes real models write them:

* ``baseline`` - a served model answering the OpenAI Batch requests that
  ``evalkit prompts`` wrote: its calls come back structured
  (``message.tool_calls``, ``content: null``). It sometimes answers in text
  where a call is expected, forgets the parallel call, calls a tool that does not
  exist, breaks a tool's schema, or calls a tool where none applies.
* ``candidate-a`` - a fine-tuned adapter run with ``evalkit generate``: raw text
  in its template's syntax (Qwen's ``<tool_call>`` blocks, ``<think>`` first
  now and then). Better on average, but it has stopped calling the rare tool
  ``escalate_to_legal``: it answers legal threats in text.
* ``candidate-b`` - another adapter, same syntax: better on average without
  breaking any function, slice or the total (a few flips the baseline had right
  are allowed, never enough to drop a group).

Usage::

    python examples/tickets/simulate_tool_calls.py demo-out/calls-split/test.jsonl \\
        --batch-input demo-out/prompts/calls-test.batch.jsonl \\
        --out demo-out/calls-predictions [--seed 11]

writes ``baseline.batch-output.jsonl``, ``candidate-a.jsonl`` and
``candidate-b.jsonl`` (``{"ticket_id": ..., "output": "<raw text>"}`` per line,
as ``evalkit generate`` writes its ``predictions.jsonl``). The same split and
seed always give the same bytes.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path
from typing import Any

MODELS = ("baseline", "candidate-a", "candidate-b")
# Share of right answers per model, and the failures it makes otherwise.
QUALITY = {"baseline": 0.78, "candidate-a": 0.92, "candidate-b": 0.92}
CALL_FAILURES = {
    "baseline": ["text", "text", "miss_parallel", "wrong_arg", "wrong_tool", "unknown_tool",
                 "bad_args"],
    "candidate-a": ["wrong_arg", "miss_parallel", "truncated", "bad_args"],
    "candidate-b": ["wrong_arg", "miss_parallel", "truncated", "bad_args"],
}  # fmt: skip
TEXT_FAILURES = {"baseline": ["spurious"], "candidate-a": ["spurious"], "candidate-b": ["spurious"]}
Call = tuple[str, dict[str, Any]]


def reference(line: dict[str, Any]) -> tuple[list[Call], str | None]:
    """The reference turn of a split line: its calls, and its text when it calls nothing."""
    turn = line["messages"][-1]
    calls = [
        (call["function"]["name"], json.loads(call["function"]["arguments"]))
        for call in turn.get("tool_calls") or []
    ]
    return calls, None if calls else turn["content"]


def _klass(calls: list[Call]) -> str:
    return "+".join(sorted({name for name, _ in calls})) or "none"


def _plan(items: list[dict[str, Any]], model: str, rng: random.Random) -> list[str | None]:
    """Per item: None (a right answer) or the failure the model makes."""
    plan: list[str | None] = []
    for item in items:
        right = rng.random() < QUALITY[model]
        failures = CALL_FAILURES[model] if item["calls"] else TEXT_FAILURES[model]
        failure = None if right else rng.choice(failures)
        if failure == "miss_parallel" and len(item["calls"]) < 2:
            failure = "wrong_arg"
        plan.append(failure)
    return plan


def _repair(items: list[dict[str, Any]], base: list[Any], cand: list[Any]) -> list[Any]:
    """Undo negative flips until no function, slice or the total drops below the baseline."""
    cand = list(cand)
    groups = [lambda item: True, lambda item: len(item["calls"]) > 1]
    groups += [lambda item, k=k: item["class"] == k for k in sorted({i["class"] for i in items})]
    for member in groups:
        idx = [i for i, item in enumerate(items) if member(item)]
        deficit = sum(base[i] is None for i in idx) - sum(cand[i] is None for i in idx)
        for i in idx:
            if deficit <= 0:
                break
            if base[i] is None and cand[i] is not None:
                cand[i] = None
                deficit -= 1
    return cand


def _other_order(order_id: str, rng: random.Random) -> str:
    digits = list(order_id[-6:])
    position = rng.randrange(6)
    digits[position] = str((int(digits[position]) + rng.randint(1, 9)) % 10)
    return order_id[:-6] + "".join(digits)


def answer(item: dict[str, Any], failure: str | None, rng: random.Random) -> tuple[Any, ...]:
    """``(calls, text)`` the model answers with (calls None: a text answer)."""
    calls = [(name, dict(arguments)) for name, arguments in item["calls"]]
    if not calls:
        if failure == "spurious":
            return [("lookup_order", {"order_id": f"ORD-{rng.randint(100000, 999999)}"})], None
        return None, item["text"]
    if failure == "text":
        return None, "I have forwarded your ticket to the right team."
    if failure == "miss_parallel":
        calls = calls[:1]
    elif failure == "wrong_arg":
        name, arguments = calls[0]
        if "order_id" in arguments:
            arguments["order_id"] = _other_order(arguments["order_id"], rng)
        else:
            arguments["priority"] = "high" if arguments["priority"] == "urgent" else "urgent"
    elif failure == "wrong_tool":
        calls = [("track_parcel" if name == "refund_status" else name, a) for name, a in calls]
        if len(calls) == 1:
            calls = [("refund_status", {"order_id": "ORD-000000"})]
    elif failure == "unknown_tool":
        calls = [("get_order" if name == "lookup_order" else name, a) for name, a in calls]
    elif failure == "bad_args":  # a schema break per tool: required, type, enum
        name, arguments = calls[-1]
        broken = {
            "lookup_order": lambda a: {"order": a["order_id"]},
            "refund_status": lambda a: {**a, "include_history": "yes"},
            "track_parcel": lambda a: {**a, "carrier": "fedex"},
            "escalate_to_legal": lambda a: {"priority": "critical"},
        }
        calls[-1] = (name, broken[name](arguments))
    for index, (name, arguments) in enumerate(calls):
        if "order_id" in arguments and failure is None and rng.random() < 0.2:
            calls[index] = (name, {**arguments, "order_id": arguments["order_id"].lower()})
    if len(calls) > 1 and rng.random() < 0.5:
        calls.reverse()  # parallel calls in another order: still right
    return calls, None


def qwen_text(
    calls: list[Call] | None, text: str | None, truncated: bool, rng: random.Random
) -> str:
    """The raw text a Qwen-template model writes (``<tool_call>`` blocks, or plain text)."""
    if calls is None:
        return str(text)
    blocks = [
        "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"
        for name, arguments in calls
    ]
    raw = "\n".join(blocks)
    if rng.random() < 0.2:
        raw = "<think>\n\n</think>\n\n" + raw
    if truncated:
        raw = raw[: len(raw) // 2]
    return raw


def batch_record(request: dict[str, Any], number: int, calls: Any, text: str | None) -> dict:
    """One line of a Batch output file: a chat completion with structured calls or text."""
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if calls is not None:
        message["tool_calls"] = [
            {
                "id": f"call_{number:06d}_{index}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
            for index, (name, arguments) in enumerate(calls)
        ]
    body = {
        "id": f"chatcmpl-{number:06d}",
        "object": "chat.completion",
        "model": request["body"]["model"],
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if calls is not None else "stop",
            }
        ],
    }
    return {
        "id": f"batch_req_{number:06d}",
        "custom_id": request["custom_id"],
        "response": {"status_code": 200, "request_id": f"req_{number:06d}", "body": body},
        "error": None,
    }


def simulate(lines: list[dict[str, Any]], requests: list[dict[str, Any]], seed: int) -> dict:
    """Records per output file: the baseline's Batch output, the candidates' predictions."""
    items = []
    for line in sorted(lines, key=lambda line: line["ticket_id"]):
        calls, text = reference(line)
        items.append(
            {"id": line["ticket_id"], "calls": calls, "text": text, "class": _klass(calls)}
        )
    plans = {model: _plan(items, model, random.Random(f"{seed}:{model}")) for model in MODELS}
    plans["candidate-b"] = _repair(items, plans["baseline"], plans["candidate-b"])
    by_id = {request["custom_id"]: request for request in requests}
    files: dict[str, list[dict[str, Any]]] = {}
    for model in MODELS:
        rng = random.Random(f"{seed}:{model}:render")
        records = []
        for number, (item, failure) in enumerate(zip(items, plans[model], strict=True), 1):
            if model == "candidate-a" and item["class"] == "escalate_to_legal":
                failure = "text"  # the regression: legal threats answered in text
            truncated = failure == "truncated"
            calls, text = answer(item, None if truncated else failure, rng)
            if model == "baseline":
                records.append(batch_record(by_id[item["id"]], number, calls, text))
            else:
                output = qwen_text(calls, text, truncated, rng)
                records.append({"ticket_id": item["id"], "output": output})
        name = "baseline.batch-output.jsonl" if model == "baseline" else f"{model}.jsonl"
        files[name] = records
    return files


def main() -> None:
    """Command line: the calls split's test file and its Batch requests in, three files out."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "gold", type=Path, help="the test split, e.g. demo-out/calls-split/test.jsonl"
    )
    parser.add_argument("--batch-input", type=Path, required=True, help="evalkit prompts' requests")
    parser.add_argument("--out", type=Path, required=True, help="folder for the three files")
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    read = lambda path: [json.loads(x) for x in path.read_text("utf-8").splitlines() if x.strip()]  # noqa: E731
    for name, records in simulate(read(args.gold), read(args.batch_input), args.seed).items():
        lines = "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records)
        (args.out / name).write_text(lines, encoding="utf-8")
        print(f"wrote {args.out / name} ({len(records)} simulated answers)")


if __name__ == "__main__":
    main()
