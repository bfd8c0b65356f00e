"""Parsing outputs in chunks, in this process or in a pool of worker processes.

Parsing and schema validation are per-output Python calls (orjson,
jsonschema-rs), bound by one core each; a process pool uses every core. The
pool runs the very same :meth:`OutputParser.parse_batch` as the single-process
path, chunk by chunk, and results come back in input order, so the verdicts
and the output bytes do not depend on the number of workers.

Workers are started with ``spawn`` (not ``fork``): polars keeps a thread pool,
and forking a multi-threaded process can deadlock.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from typing import TYPE_CHECKING

from evalkit.contract.parse import OutputParser, ParserSpec, parse_frame

if TYPE_CHECKING:
    import polars as pl

CHUNK_ROWS = 50_000
# Below this many outputs a pool costs more (start-up, imports) than it saves.
PARALLEL_MIN_ROWS = 150_000

_PARSER: OutputParser | None = None


def _start_worker(spec: ParserSpec) -> None:
    global _PARSER
    _PARSER = OutputParser(spec)


def _parse_chunk(texts: pl.Series) -> pl.DataFrame:
    assert _PARSER is not None, "the pool initialiser builds the parser"
    return parse_frame(_PARSER, texts.to_list())


def resolve_workers(workers: int | None, n_rows: int) -> int:
    """How many processes parse: ``workers`` if given, else every core for large inputs."""
    if workers is not None:
        return max(1, workers)
    if n_rows < PARALLEL_MIN_ROWS:
        return 1
    return max(1, min(os.cpu_count() or 1, 8))


class ParsePool:
    """A pool of parser processes for one contract (or none, for one worker)."""

    def __init__(self, spec: ParserSpec, workers: int) -> None:
        self.spec = spec
        self.workers = workers
        self._pool: ProcessPoolExecutor | None = None
        self._local: OutputParser | None = None
        if workers > 1:
            import multiprocessing

            self._pool = ProcessPoolExecutor(
                max_workers=workers,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_start_worker,
                initargs=(spec,),
            )

    def __enter__(self) -> ParsePool:
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)

    def parse_chunks(self, outputs: pl.Series) -> Iterator[pl.DataFrame]:
        """Parsed frames for consecutive chunks of ``outputs``, in order."""
        chunks = [outputs.slice(start, CHUNK_ROWS) for start in range(0, len(outputs), CHUNK_ROWS)]
        if self._pool is None:
            if self._local is None:
                self._local = OutputParser(self.spec)
            for chunk in chunks:
                yield parse_frame(self._local, chunk.to_list())
            return
        # Keep at most two chunks per worker in flight: bounded memory, busy workers.
        pending: list[Future[pl.DataFrame]] = []
        queue = iter(chunks)
        for chunk in queue:
            pending.append(self._pool.submit(_parse_chunk, chunk))
            if len(pending) >= 2 * self.workers:
                break
        while pending:
            done = pending.pop(0).result()
            following = next(queue, None)
            if following is not None:
                pending.append(self._pool.submit(_parse_chunk, following))
            yield done
