"""Parsing subprocesses: how many, and starting them early.

A parsing subprocess spends its first ~0.15 s starting Python and importing
polars, orjson, jsonschema-rs and the parser, before it can parse anything;
the calling process spends as long on its own imports (polars, pydantic
models, the contract loader). Started one after the other, these add up on
the critical path. So ``evalkit score`` starts the subprocesses first thing,
before its heavy imports (:func:`early_workers`), and the pool that scoring
builds later takes them (:func:`take_started`) and sends them the parser spec.

This module imports nothing beyond the standard library, so that starting
workers costs the command line nothing to import.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

# Below this many outputs a pool costs more (start-up, imports) than it saves.
PARALLEL_MIN_ROWS = 150_000
WORKER_MODULE = "evalkit.scoring._worker"

_started: list[subprocess.Popen[bytes]] = []


def available_cores() -> int:
    """Cores this process may run on (respects CPU affinity, unlike ``os.cpu_count``)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def resolve_workers(workers: int | None, n_rows: int) -> int:
    """How many processes parse: ``workers`` if given, else every core for large inputs."""
    if workers is not None:
        return max(1, workers)
    if n_rows < PARALLEL_MIN_ROWS:
        return 1
    return max(1, min(available_cores(), 8))


def estimated_rows(path: Path) -> int:
    """A rough row count from the file size (100 bytes a row), before reading anything."""
    try:
        if path.is_dir():
            return sum(item.stat().st_size for item in path.rglob("*") if item.is_file()) // 100
        return path.stat().st_size // 100
    except OSError:
        return 0


def start_worker() -> subprocess.Popen[bytes]:
    """A new parsing subprocess; it imports what it needs, then waits for its parser spec."""
    import evalkit

    root = str(Path(evalkit.__file__).resolve().parents[1])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
    return subprocess.Popen(
        [sys.executable, "-m", WORKER_MODULE],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
        # Not in the terminal's process group: Ctrl-C goes to the parent,
        # which closes the pipes, and that ends the worker.
        start_new_session=True,
    )


def take_started(count: int) -> list[subprocess.Popen[bytes]]:
    """``count`` parsing subprocesses: those started early first, then new ones."""
    taken = _started[:count]
    del _started[:count]
    return taken + [start_worker() for _ in range(count - len(taken))]


def stop(processes: list[subprocess.Popen[bytes]]) -> None:
    """End parsing subprocesses: close their output and input (a worker blocked on
    either exits at once), wait briefly, and kill any that linger."""
    # Output first: a worker blocked on writing a result then fails and
    # exits, which unblocks a feeding thread that may hold the input's lock.
    for process in processes:
        if process.stdout is not None and not process.stdout.closed:
            with contextlib.suppress(OSError, ValueError):
                process.stdout.close()
    for process in processes:
        if process.stdin is not None and not process.stdin.closed:
            with contextlib.suppress(OSError, ValueError):
                process.stdin.close()
    for process in processes:
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextlib.contextmanager
def early_workers(predictions: Path, workers: int | None) -> Iterator[None]:
    """Start the parsing subprocesses that scoring ``predictions`` will use, now.

    As many as :func:`resolve_workers` will ask for, less the calling process
    (which parses its share); any the block leaves unused (a label contract,
    an error before parsing) are stopped when it ends.
    """
    count = resolve_workers(workers, estimated_rows(predictions)) - 1
    _started.extend(start_worker() for _ in range(count))
    try:
        yield
    finally:
        unused = _started[:]
        del _started[:]
        stop(unused)
