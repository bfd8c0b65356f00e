"""Benchmark an append to the test-set ledger, as ``score`` makes it, and a read of it.

Run: ``.venv/bin/python bench/bench_ledger.py`` (``--lines 1000``,
``--golds 10``, ``--appends 20``; ``--no-fsync`` times the work alone, without
the disk's ``fsync`` latency). ``PYTHONPATH=OTHER_CHECKOUT`` measures another
version of evalkit with the same script (the old ``append_look`` returned a
tuple; both are called the same way).

A ledger of ``--lines`` lines spread over ``--golds`` gold files (each with its
own content hash) is built first (not timed, without ``fsync``); then
``--appends`` looks at one gold file are appended one by one and timed
(median and minimum), and ``read_ledger`` of the whole file is timed once.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from evalkit.provenance.ledger import append_look
from evalkit.provenance.ledger_state import read_ledger


def summary(index: int, gold: str) -> Any:
    """A score summary as ``append_look`` reads it."""
    normalized = {"name": "c", "version": 1, "fields": {"category": {"gold": "category"}}}
    return SimpleNamespace(
        gold=SimpleNamespace(sha256=gold, path="split/test.parquet", content_sha256=gold[::-1]),
        contract=SimpleNamespace(
            name="c", version=1, fingerprint="sha256:1", normalized=normalized
        ),
        name=f"p{index}",
        predictions=SimpleNamespace(sha256=f"{index:064x}"),
        card=None,
        evalkit_version="0.1.0",
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=1000)
    parser.add_argument("--golds", type=int, default=10)
    parser.add_argument("--appends", type=int, default=20)
    parser.add_argument("--no-fsync", action="store_true")
    args = parser.parse_args()
    real_fsync = os.fsync
    with tempfile.TemporaryDirectory(prefix="bench-ledger-") as temporary:
        ledger = Path(temporary) / "evalkit-ledger.jsonl"
        os.fsync = lambda descriptor: None  # building the ledger is not what is measured
        for index in range(args.lines):
            append_look(ledger, summary(index, f"{index % args.golds:064x}"))
        if not args.no_fsync:
            os.fsync = real_fsync
        times = []
        for index in range(args.lines, args.lines + args.appends):
            started = time.perf_counter()
            append_look(ledger, summary(index, f"{3:064x}"))
            times.append(time.perf_counter() - started)
        started = time.perf_counter()
        report = read_ledger(ledger)
        reading = time.perf_counter() - started
        os.fsync = real_fsync
    print(
        f"append to a ledger of {args.lines:,}-{args.lines + args.appends:,} lines "
        f"({args.golds} gold files{', no fsync' if args.no_fsync else ''}): median "
        f"{statistics.median(times) * 1000:.1f} ms, minimum {min(times) * 1000:.1f} ms; "
        f"read_ledger of {report.lines:,} lines {reading * 1000:.0f} ms; load average "
        f"{Path('/proc/loadavg').read_text().split()[0]}"
    )


if __name__ == "__main__":
    main()
