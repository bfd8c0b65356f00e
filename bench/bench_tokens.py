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


def evalkit_seconds(data: Path, out: Path) -> tuple[float, float]:
    """The whole ``evalkit tokens`` process, start to exit: (seconds, CPU seconds)."""
    command = [
        str(EVALKIT), "tokens", str(data), "--tokenizer", str(TOKENIZER),
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
    parser.add_argument("--n", type=int, default=100_000, help="conversations")
    parser.add_argument("--repeat", type=int, default=2, help="runs of each side (best kept)")
    parser.add_argument("--limit-cost", action="store_true", help="the render time limit's cost")
    args = parser.parse_args()
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


if __name__ == "__main__":
    main()
