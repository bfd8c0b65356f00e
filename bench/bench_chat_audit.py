"""Benchmark ``evalkit audit`` on 200k conversations against the same texts as a flat column.

Run: ``.venv/bin/python bench/bench_chat_audit.py`` (``--n 200000``
conversations, ``--format jsonl|parquet``, ``--repeats 2``, ``--keep DIR``).

Data: ``n`` conversations, each a system prompt shared by all (80 words),
then 1-3 exchanges of a user turn (20-80 words) and an assistant turn (10-40
words), words from the Zipf-like vocabulary of ``bench_audit.py``; 1% of the
conversations are copied into a conversation of their own with one word of
the first user turn replaced (planted near duplicates). Rows are split
80/10/10 at random into train/val/test files.

The same rows are written twice: with a ``messages`` column (``{role,
content}`` lists) and with a flat ``text`` column holding exactly the text
the audit compares for a conversation (the user and assistant contents
joined by newlines, the default ``--roles``). ``evalkit audit`` runs as a
fresh process on each (imports, reading, sha256, the search, ``--json``
written), alternately, ``--repeats`` times; the best time of each is
compared, and both runs must report the same pairs. The goal: the
conversation audit within 1.5x the flat one.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from bench_audit import VOCABULARY, texts_from_words  # noqa: E402

SPLITS = ("train", "val", "test")
GOAL = 1.5


def _zipf_words(rng: np.random.Generator, count: int) -> np.ndarray:
    weights = 1.0 / np.arange(1, VOCABULARY + 1) ** 1.05
    return rng.choice(VOCABULARY, size=count, p=weights / weights.sum())


def make_data(n: int, seed: int = 0) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Rows (id, conversation_id, split, messages, text) and the planted (a, b) pairs."""
    rng = np.random.default_rng(seed)
    n_copies = n // 100
    n_base = n - n_copies
    exchanges = rng.integers(1, 4, n_base)
    n_turns = 2 * exchanges
    turn_of = np.concatenate([np.arange(k) for k in n_turns])  # 0 user, 1 assistant, ...
    is_user = turn_of % 2 == 0
    lengths = np.where(
        is_user, rng.integers(20, 81, is_user.size), rng.integers(10, 41, is_user.size)
    )
    turns = texts_from_words(_zipf_words(rng, int(lengths.sum())), lengths)
    # Near copies: the first user turn with one word replaced, the rest as is.
    sources = rng.choice(n_base, size=n_copies, replace=False)
    first_turn = np.zeros(n_base + 1, dtype=np.int64)
    np.cumsum(n_turns, out=first_turn[1:])
    copied_turns = np.concatenate([np.arange(first_turn[s], first_turn[s + 1]) for s in sources])
    copy_texts = turns.gather(copied_turns).to_list()
    position = 0
    for source in sources:
        words = copy_texts[position].split(" ")
        words[len(words) // 2] = "changed"
        copy_texts[position] = " ".join(words)
        position += int(n_turns[source])
    all_turns = pl.concat([turns, pl.Series("text", copy_texts)])
    all_counts = np.concatenate([n_turns, n_turns[sources]])
    all_roles = np.concatenate([turn_of, np.concatenate([np.arange(n_turns[s]) for s in sources])])
    system = " ".join(f"w{i}" for i in _zipf_words(np.random.default_rng(seed + 1), 80))
    messages = _messages(all_turns, all_roles, all_counts, system)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(all_counts, out=offsets[1:])
    flat = pl.Series(
        "text", pa.LargeListArray.from_arrays(pa.array(offsets), all_turns.to_arrow())
    ).list.join("\n")
    ids = [f"T{i:07d}" for i in range(n)]
    conversation = [f"C{i:07d}" for i in range(n)]
    rows = pl.DataFrame(
        {
            "id": ids,
            "conversation_id": conversation,
            "split": rng.choice(np.array(SPLITS), size=n, p=[0.8, 0.1, 0.1]),
            "messages": messages,
            "text": flat,
        }
    )
    planted = pl.DataFrame({"a": [ids[s] for s in sources], "b": ids[n_base:]})
    return rows, planted


def _messages(turns: pl.Series, turn_of: np.ndarray, counts: np.ndarray, system: str) -> pl.Series:
    """``List(Struct{role, content})``: the system prompt, then the turns of each row."""
    n = counts.size
    total = int(counts.sum()) + n
    starts = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts + 1, out=starts[1:])
    is_system = np.zeros(total, dtype=bool)
    is_system[starts[:-1]] = True
    role_names = np.array(["user", "assistant"])
    roles = np.empty(total, dtype=object)
    roles[is_system] = "system"
    roles[~is_system] = role_names[turn_of % 2]
    contents = np.empty(total, dtype=object)
    contents[is_system] = system
    contents[~is_system] = np.asarray(turns.to_list(), dtype=object)
    structs = pa.StructArray.from_arrays(
        [pa.array(roles, pa.large_string()), pa.array(contents, pa.large_string())],
        ["role", "content"],
    )
    return pl.Series("messages", pa.LargeListArray.from_arrays(pa.array(starts), structs))


def write_splits(rows: pl.DataFrame, folder: Path, column: str, fmt: str) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name in SPLITS:
        part = rows.filter(pl.col("split") == name).select("id", "conversation_id", column)
        path = folder / f"{name}.{fmt}"
        if fmt == "parquet":
            part.write_parquet(path)
        else:
            part.write_ndjson(path)
        paths.append(path)
    return paths


def run_audit(files: list[Path], column: str, out: Path) -> tuple[float, float, dict]:
    """(wall seconds, CPU seconds of the child, report) of one ``evalkit audit`` process."""
    command = [
        sys.executable, "-m", "evalkit", "audit", *map(str, files), "--id", "id",
        "--text", column, "--group", "conversation_id", "--json", str(out), "--force", "--quiet",
    ]  # fmt: skip
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    completed = subprocess.run(command, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if completed.returncode not in (0, 1):
        raise SystemExit(f"audit failed: {completed.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return seconds, cpu, json.loads(out.read_text())


def pairs(report: dict) -> set[frozenset[str]]:
    kinds = ("exact_duplicates", "near_duplicates")
    return {frozenset((pair["a"], pair["b"])) for kind in kinds for pair in report[kind]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200_000)
    parser.add_argument("--format", choices=["jsonl", "parquet"], default="jsonl")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--keep", type=Path)
    args = parser.parse_args()

    started = time.perf_counter()
    rows, planted = make_data(args.n)
    n_turns = rows["messages"].list.len().sum()
    print(f"generated {args.n:,} conversations ({n_turns:,} messages) in "
          f"{time.perf_counter() - started:.1f} s")  # fmt: skip
    folder = args.keep or Path(tempfile.mkdtemp(prefix="bench-chat-audit-"))
    try:
        chat_files = write_splits(rows, folder / "chat", "messages", args.format)
        flat_files = write_splits(rows, folder / "flat", "text", args.format)
        sizes = {
            kind: sum(p.stat().st_size for p in files) / 1e6
            for kind, files in (("chat", chat_files), ("flat", flat_files))
        }
        loads = [os.getloadavg()[0]]
        times: dict[str, list[float]] = {"flat": [], "chat": []}
        cpu: dict[str, list[float]] = {"flat": [], "chat": []}
        reports: dict[str, dict] = {}
        for _ in range(args.repeats):
            for kind, files, column in (("flat", flat_files, "text"),
                                        ("chat", chat_files, "messages")):  # fmt: skip
                seconds, cpu_seconds, reports[kind] = run_audit(
                    files, column, folder / f"{kind}.json"
                )
                times[kind].append(seconds)
                cpu[kind].append(cpu_seconds)
                loads.append(os.getloadavg()[0])
    finally:
        if args.keep is None:
            shutil.rmtree(folder, ignore_errors=True)
    same = pairs(reports["flat"]) == pairs(reports["chat"])
    split_of = dict(zip(rows["id"], rows["split"], strict=True))
    planted_pairs = {frozenset(pair) for pair in planted.select("a", "b").iter_rows()}
    found = pairs(reports["chat"])
    crossing = {pair for pair in planted_pairs if len({split_of[i] for i in pair}) == 2}
    flat_best, chat_best = min(times["flat"]), min(times["chat"])
    ratio = chat_best / flat_best
    print(f"\n{date.today()}, {platform.machine()}, {os.cpu_count()} cores, "
          f"load average {min(loads):.1f}-{max(loads):.1f} during the runs")  # fmt: skip
    print(f"{args.format} files: conversations {sizes['chat']:.0f} MB, flat {sizes['flat']:.0f} MB")
    for kind, label in (("flat", "flat text column"), ("chat", "messages column")):
        walls = ", ".join(f"{t:.1f}" for t in times[kind])
        cpus = ", ".join(f"{t:.1f}" for t in cpu[kind])
        print(f"evalkit audit, {label:<17} wall {walls} s; CPU {cpus} s")
    cpu_ratio = min(cpu["chat"]) / min(cpu["flat"])
    print(f"CPU time, best of each: {min(cpu['chat']):.1f} s / {min(cpu['flat']):.1f} s = "
          f"{cpu_ratio:.2f}x")  # fmt: skip
    print(f"best of each: {chat_best:.1f} s / {flat_best:.1f} s = {ratio:.2f}x "
          f"(goal <= {GOAL}x: {'met' if ratio <= GOAL else 'NOT met'})")  # fmt: skip
    print(f"same pairs reported by both: {same}; planted pairs across splits found: "
          f"{len(found & crossing):,} / {len(crossing):,}; unplanted pairs: "
          f"{len(found - planted_pairs):,}")  # fmt: skip


if __name__ == "__main__":
    main()
