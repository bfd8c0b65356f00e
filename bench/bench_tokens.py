"""Benchmark the whole ``evalkit tokens`` process against the floor of its work.

Run: ``.venv/bin/python bench/bench_tokens.py`` (``--n 100000`` conversations;
``--repeat 2`` runs of each side, the best kept).

Data: ``n`` ticket-triage conversations of about 250 tokens with the example
tokenizer (``examples/tokenizer``: a system prompt, three or four tickets as
the user turn, the JSON answer), in a JSONL file.

* **Floor**, in this process, libraries imported and conversations already in
  memory as Python lists: render every conversation with the chat template
  (``apply_chat_template(conversations, tokenize=False)``, one batched call)
  and batch-encode the renders with offsets (``tokenizer(renders,
  add_special_tokens=False, return_offsets_mapping=True)``). That is the
  least any tool must do to know the tokens and where the assistant's text is.
* **evalkit**: the whole ``evalkit tokens FILE --tokenizer … --text messages
  --id id --json …`` process, from interpreter start to exit: imports, reading
  and validating the JSONL, rendering the training sequences and the
  inference prompts, encoding, masks, every check, the report.

The figure is evalkit's throughput as a share of the floor's (floor seconds
over evalkit seconds, same conversations, same run); the goal is >= 75%.
The machine is shared: the load average is printed with each figure.

``--tools``: function-calling conversations instead (``--n 20000``): the
walkthrough's 515 tool tickets (``examples/tickets/tickets_tools.jsonl``:
system prompt, ticket, one turn of one or two calls, their answers, the JSON
answer; per-row tools, some turns ``weight: 0``) repeated under new ids,
with the tool-capable example tokenizer (``examples/tokenizer-tools``). The
floor renders each group of rows that share a tools list in one call
(``apply_chat_template(conversations, tools=tools, tokenize=False)``;
transformers takes one tools list per call), from messages already in the
form the template takes (content ``""`` beside calls, arguments as objects),
then batch-encodes every render with offsets. The goal there: the whole
process within 1.5x the floor's time.

``--limit-cost``: what the render time limit costs instead. In this process,
the ``n`` conversations rendered through ``render_all`` (evalkit's render
path, 2,048 a call as ``evalkit tokens`` renders them), with the time limit
(:mod:`evalkit.tokens.time_limit`) and with it replaced by a no-op, in
alternating order (the side that runs first in a round is slower); CPU
seconds of each, best of ``--repeat``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOKENIZER = ROOT / "examples" / "tokenizer"
TICKETS = ROOT / "examples" / "tickets" / "tickets.jsonl"
TOOL_TOKENIZER = ROOT / "examples" / "tokenizer-tools"
TOOL_TICKETS = ROOT / "examples" / "tickets" / "tickets_tools.jsonl"
EVALKIT = Path(sys.executable).parent / "evalkit"
SYSTEM = (
    "You triage support tickets of an online shop. Answer with one JSON object: "
    "category, priority, order_id and amount."
)
KEYS = ("category", "priority", "order_id", "amount")


def make_conversations(n: int, seed: int = 0) -> list[dict]:
    """``n`` rows ``{id, messages}``: system prompt, three or four tickets, the JSON answer."""
    tickets = [json.loads(line) for line in TICKETS.read_text().splitlines()]
    rng = random.Random(seed)
    rows = []
    for index in range(n):
        first = rng.choice(tickets)
        others = 2 + (rng.random() < 0.1)
        user = " ".join([first["text"], *(rng.choice(tickets)["text"] for _ in range(others))])
        answer = json.dumps({key: first.get(key) for key in KEYS})
        messages = [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": user},
            {"role": "assistant", "content": answer},
        ]
        rows.append({"id": f"B{index:07d}", "messages": messages})
    return rows


def make_tool_conversations(n: int) -> list[dict]:
    """``n`` rows ``{id, messages, tools}``: the tool tickets, cycled under new ids."""
    tickets = [json.loads(line) for line in TOOL_TICKETS.read_text().splitlines()]
    return [
        {"id": f"F{index:07d}", "messages": ticket["messages"], "tools": ticket["tools"]}
        for index, ticket in enumerate(tickets[i % len(tickets)] for i in range(n))
    ]


def template_messages(messages: list[dict]) -> list[dict]:
    """Messages as an HF template takes them: content "" beside calls, object arguments."""
    result = []
    for message in messages:
        out = {k: v for k, v in message.items() if k not in ("weight", "training")}
        out["content"] = out.get("content") or ""
        if out.get("tool_calls"):
            out["tool_calls"] = [
                {**call, "function": {**call["function"],
                                      "arguments": json.loads(call["function"]["arguments"])}}
                for call in out["tool_calls"]
            ]  # fmt: skip
        result.append(out)
    return result


def tool_floor_seconds(rows: list[dict]) -> tuple[float, float, int]:
    """Render each tools group in one call + batch-encode with offsets; (s, CPU-s, tokens)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from transformers import PreTrainedTokenizerFast

    tokenizer = PreTrainedTokenizerFast.from_pretrained(str(TOOL_TOKENIZER))
    groups: dict[str, tuple[list, list[list[dict]]]] = {}
    for row in rows:
        key = json.dumps(row["tools"], sort_keys=True)
        groups.setdefault(key, (row["tools"], []))[1].append(template_messages(row["messages"]))
    started, cpu = time.perf_counter(), cpu_seconds(resource.RUSAGE_SELF)
    renders = []
    for tools, conversations in groups.values():
        renders += tokenizer.apply_chat_template(conversations, tools=tools, tokenize=False)
    encoded = tokenizer(renders, add_special_tokens=False, return_offsets_mapping=True)
    seconds = time.perf_counter() - started
    cpu = cpu_seconds(resource.RUSAGE_SELF) - cpu
    return seconds, cpu, sum(len(ids) for ids in encoded["input_ids"])


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"


def cpu_seconds(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def floor_seconds(conversations: list[list[dict]]) -> tuple[float, float, int]:
    """Render + batch-encode with offsets, in this process; (seconds, CPU seconds, tokens)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from transformers import PreTrainedTokenizerFast

    tokenizer = PreTrainedTokenizerFast.from_pretrained(str(TOKENIZER), trust_remote_code=False)
    started, cpu = time.perf_counter(), cpu_seconds(resource.RUSAGE_SELF)
    renders = tokenizer.apply_chat_template(conversations, tokenize=False)
    encoded = tokenizer(renders, add_special_tokens=False, return_offsets_mapping=True)
    seconds = time.perf_counter() - started
    cpu = cpu_seconds(resource.RUSAGE_SELF) - cpu
    return seconds, cpu, sum(len(ids) for ids in encoded["input_ids"])


def evalkit_seconds(data: Path, out: Path, tokenizer: Path = TOKENIZER) -> tuple[float, float]:
    """The whole ``evalkit tokens`` process, start to exit: (seconds, CPU seconds)."""
    command = [
        str(EVALKIT), "tokens", str(data), "--tokenizer", str(tokenizer),
        "--text", "messages", "--id", "id", "--json", str(out), "--force", "--quiet",
    ]  # fmt: skip
    started, cpu = time.perf_counter(), cpu_seconds(resource.RUSAGE_CHILDREN)
    completed = subprocess.run(command, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    cpu = cpu_seconds(resource.RUSAGE_CHILDREN) - cpu
    if completed.returncode != 0:
        raise SystemExit(f"evalkit tokens exited {completed.returncode}: {completed.stderr}")
    return seconds, cpu


def limit_cost(conversations: list[list[dict]], repeat: int) -> None:
    """CPU seconds of evalkit's renders with the render time limit and with a no-op."""
    import contextlib

    import evalkit.tokens.render as render
    from evalkit.tokens.load import load_tokenizer
    from evalkit.tokens.time_limit import Watch

    tokenizer = load_tokenizer(TOKENIZER)
    limited = render.time_limit

    @contextlib.contextmanager
    def unlimited(*_: object) -> object:
        yield Watch(0, 0.0)

    best = {"with the limit": float("inf"), "without": float("inf")}
    sides = [("with the limit", limited), ("without", unlimited)]
    for run in range(repeat):
        for name, guard in sides if run % 2 else sides[::-1]:  # alternate who goes first
            render.time_limit = guard  # type: ignore[assignment]
            cpu = time.process_time()
            for start in range(0, len(conversations), 2048):
                render.render_all(tokenizer, conversations[start : start + 2048])
            best[name] = min(best[name], time.process_time() - cpu)
            print(f"run {run + 1}: {name}: {time.process_time() - cpu:.2f} CPU-s (load {load()})")
    render.time_limit = limited
    ratio = best["with the limit"] / best["without"]
    print(f"best of {repeat}: renders of {len(conversations):,} conversations "
          f"{best['with the limit']:.2f} CPU-s with the time limit, {best['without']:.2f} "
          f"without ({ratio - 1:+.1%})")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, help="conversations (100,000; 20,000 with --tools)")
    parser.add_argument("--tools", action="store_true", help="function-calling conversations")
    parser.add_argument("--repeat", type=int, default=2, help="runs of each side (best kept)")
    parser.add_argument("--limit-cost", action="store_true", help="the render time limit's cost")
    args = parser.parse_args()
    if args.tools:
        tool_bench(args.n or 20_000, args.repeat)
        return
    args.n = args.n or 100_000
    rows = make_conversations(args.n)
    conversations = [row["messages"] for row in rows]
    print(f"{datetime.now():%Y-%m-%d %H:%M}  {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} cores, python {platform.python_version()}")  # fmt: skip
    if args.limit_cost:
        limit_cost(conversations, args.repeat)
        return
    with tempfile.TemporaryDirectory() as folder:
        data = Path(folder) / "conversations.jsonl"
        data.write_text("".join(json.dumps(row) + "\n" for row in rows))
        out = Path(folder) / "tokens.json"
        floors, wholes, tokens = [], [], 0
        for run in range(args.repeat):
            before = load()
            seconds, floor_cpu, tokens = floor_seconds(conversations)
            whole, whole_cpu = evalkit_seconds(data, out)
            floors.append((seconds, floor_cpu))
            wholes.append((whole, whole_cpu))
            print(
                f"run {run + 1}: floor {seconds:.1f} s ({floor_cpu:.1f} CPU-s), evalkit tokens "
                f"{whole:.1f} s ({whole_cpu:.1f} CPU-s); load before {before}, after {load()}; "
                f"wall ratio {seconds / whole:.0%}, CPU ratio {floor_cpu / whole_cpu:.0%}"
            )
        report = json.loads(out.read_text())
    split = next(iter(report["splits"].values()))
    floor, whole = min(w for w, _ in floors), min(w for w, _ in wholes)
    floor_cpu, whole_cpu = min(c for _, c in floors), min(c for _, c in wholes)
    print(f"{args.n:,} conversations, {tokens:,} tokens ({tokens / args.n:.0f} per conversation; "
          f"p50 {split['tokens']['total']['p50']:.0f})")  # fmt: skip
    print(f"floor {floor:.1f} s ({args.n / floor:,.0f} conv/s), whole evalkit tokens process "
          f"{whole:.1f} s ({args.n / whole:,.0f} conv/s)")  # fmt: skip
    print(f"best of {args.repeat}: evalkit throughput = {floor / whole:.0%} of the floor "
          f"(goal >= 75%); least CPU time: the floor {floor_cpu:.1f} CPU-s, evalkit "
          f"{whole_cpu:.1f} CPU-s ({floor_cpu / whole_cpu:.0%})")  # fmt: skip


def tool_bench(n: int, repeat: int) -> None:
    """The whole process on ``n`` function-calling conversations against their floor."""
    rows = make_tool_conversations(n)
    print(f"{datetime.now():%Y-%m-%d %H:%M}  {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} cores, python {platform.python_version()}")  # fmt: skip
    with tempfile.TemporaryDirectory() as folder:
        data = Path(folder) / "tools.jsonl"
        data.write_text("".join(json.dumps(row) + "\n" for row in rows))
        out = Path(folder) / "tokens.json"
        floors, wholes, tokens = [], [], 0
        for run in range(repeat):
            before = load()
            seconds, floor_cpu, tokens = tool_floor_seconds(rows)
            whole, whole_cpu = evalkit_seconds(data, out, TOOL_TOKENIZER)
            floors.append((seconds, floor_cpu))
            wholes.append((whole, whole_cpu))
            print(f"run {run + 1}: floor {seconds:.1f} s ({floor_cpu:.1f} CPU-s), evalkit tokens "
                  f"{whole:.1f} s ({whole_cpu:.1f} CPU-s); load before {before}, after {load()}; "
                  f"evalkit / floor: wall {whole / seconds:.2f}x, "
                  f"CPU {whole_cpu / floor_cpu:.2f}x")  # fmt: skip
        split = next(iter(json.loads(out.read_text())["splits"].values()))
    if split["total_tokens"] != tokens:
        raise SystemExit(f"evalkit counted {split['total_tokens']:,} tokens, the floor {tokens:,}")
    floor, whole = min(w for w, _ in floors), min(w for w, _ in wholes)
    floor_cpu, whole_cpu = min(c for _, c in floors), min(c for _, c in wholes)
    print(f"{n:,} function-calling conversations, {tokens:,} tokens (the same in both), "
          f"{split['tool_calls']:,} tool calls, "
          f"{split['excluded_turns']:,} turns weight 0")  # fmt: skip
    print(f"best of {repeat}: floor {floor:.1f} s ({floor_cpu:.1f} CPU-s), whole evalkit tokens "
          f"process {whole:.1f} s ({whole_cpu:.1f} CPU-s): {whole / floor:.2f}x the floor's time "
          f"(goal <= 1.5x), {whole_cpu / floor_cpu:.2f}x its CPU time")  # fmt: skip


if __name__ == "__main__":
    main()
