"""Parsing outputs in chunks, in this process and in worker processes.

Parsing and schema validation are per-output Python calls (orjson,
jsonschema-rs), bound by one core each; with ``workers`` parsing processes,
``workers - 1`` are subprocesses and this process parses its share of the
chunks itself, while the subprocesses work (it would otherwise only wait for
them, and every subprocess costs ~0.15 CPU-seconds to start and its share of
pipe traffic). Every process runs the very same
:func:`~evalkit.contract.batch.parse_distinct`, chunk by chunk, and results
are read back in input order, so verdicts and output bytes do not depend on
the worker count.

Workers are plain ``python -m evalkit.scoring._worker`` subprocesses fed
through pipes (length-prefixed Arrow IPC messages), not a multiprocessing
pool: they never re-import the caller's main module (a script without an
``if __name__ == "__main__"`` guard works), and nothing is forked from a
process whose polars thread pool is running.
"""

from __future__ import annotations

import io
import pickle
import queue
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING

from evalkit.contract.batch import parse_distinct
from evalkit.contract.parse import OutputParser, ParserSpec
from evalkit.scoring.processes import stop, take_started

if TYPE_CHECKING:
    import polars as pl

CHUNK_ROWS = 50_000
_LENGTH_BYTES = 8


def _send(stream: IO[bytes], payload: bytes) -> None:
    stream.write(len(payload).to_bytes(_LENGTH_BYTES, "little"))
    stream.write(payload)
    stream.flush()


def _receive(stream: IO[bytes]) -> bytes | None:
    header = stream.read(_LENGTH_BYTES)
    if len(header) < _LENGTH_BYTES:
        return None
    size = int.from_bytes(header, "little")
    payload = stream.read(size)
    if len(payload) < size:
        return None
    return payload


@dataclass(frozen=True)
class ParsedChunk:
    """Parsed columns of consecutive outputs.

    ``frame`` has one row per distinct output (:func:`parse_distinct`) and
    ``rows`` gives each output's row in it; without ``rows``, ``frame`` has
    one row per output.
    """

    frame: pl.DataFrame
    rows: pl.Series | None = None

    def __len__(self) -> int:
        return len(self.rows) if self.rows is not None else self.frame.height

    def gather(self, outputs: pl.Series) -> pl.DataFrame:
        """The parsed columns of the outputs at positions ``outputs`` (null: a null row)."""
        import polars as pl

        index = outputs if self.rows is None else self.rows.gather(outputs)
        return self.frame.select(pl.all().gather(index))


def join_chunks(chunks: list[ParsedChunk]) -> ParsedChunk:
    """Consecutive chunks as one (their outputs in order)."""
    import polars as pl

    if len(chunks) == 1:
        return chunks[0]
    rows, base = [], 0
    for chunk in chunks:
        own = chunk.rows
        if own is None:
            own = pl.Series(range(chunk.frame.height), dtype=pl.UInt32)
        rows.append((own.cast(pl.Int64) + base).cast(pl.UInt32))
        base += chunk.frame.height
    return ParsedChunk(pl.concat([chunk.frame for chunk in chunks]), pl.concat(rows))


def _frame_bytes(frame: pl.DataFrame) -> bytes:
    buffer = io.BytesIO()
    frame.write_ipc(buffer, compression="uncompressed")
    return buffer.getvalue()


class ParsePool:
    """Parsing for one contract by ``workers`` processes: this one and ``workers - 1``
    subprocesses (none for one worker)."""

    def __init__(self, spec: ParserSpec, workers: int) -> None:
        self.spec = spec
        self.workers = workers
        self._local: OutputParser | None = None
        self._processes: list[subprocess.Popen[bytes]] = []
        if workers > 1:
            # Subprocesses started early (evalkit score starts them before its
            # own imports) are taken first; each gets the spec as its first message.
            self._processes = take_started(workers - 1)
            for process in self._processes:
                assert process.stdin is not None
                _send(process.stdin, pickle.dumps(self.spec))

    def __enter__(self) -> ParsePool:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the workers (see :func:`evalkit.scoring.processes.stop`)."""
        stop(self._processes)
        self._processes = []

    def parse_chunks(self, pieces: list[pl.Series]) -> Iterator[ParsedChunk]:
        """Parsed frames for consecutive chunks of the outputs, in order.

        ``pieces`` are the outputs as separately allocated parts (e.g. the
        chunks of a Series read piece by piece); they are taken off the list
        as they are sent, so a caller that keeps no other reference frees
        each piece's memory once it is parsed.
        """
        chunks = _chunks(pieces)
        if not self._processes:
            for chunk in chunks:
                yield self._parse_here(chunk)
            return
        yield from self._parse_shared(chunks)

    def _parse_here(self, chunk: pl.Series) -> ParsedChunk:
        if self._local is None:
            self._local = OutputParser(self.spec)
        return ParsedChunk(*parse_distinct(self._local, chunk))

    def _parse_shared(self, chunks: Iterator[pl.Series]) -> Iterator[ParsedChunk]:
        count = len(self._processes) + 1
        # Chunk i goes to subprocess i % count, or to this process when that
        # is count - 1. A producer thread fills one small queue per process
        # and one feeding thread per subprocess drains its queue, so memory
        # stays bounded and a worker blocked on writing a result never
        # deadlocks a parent blocked on writing the next chunk.
        queues: list[queue.Queue[pl.Series | None]] = [queue.Queue(maxsize=2) for _ in range(count)]
        here = queues[-1]
        progress = _Progress()
        producer = threading.Thread(target=_produce, args=(chunks, queues, progress), daemon=True)
        feeders = [
            threading.Thread(target=self._feed, args=(process, queues[index]), daemon=True)
            for index, process in enumerate(self._processes)
        ]
        for thread in (producer, *feeders):
            thread.start()
        index = 0
        ahead: ParsedChunk | None = None  # this process's next chunk, parsed early
        while progress.wait_for(index):
            if index % count == count - 1:
                parsed = ahead if ahead is not None else self._parse_here(_take(here))
                ahead = None
            else:
                # Parse this process's next chunk while the subprocess works on
                # this one, instead of waiting for it.
                if (index + 1) % count == count - 1 and progress.wait_for(index + 1):
                    ahead = self._parse_here(_take(here))
                parsed = self._receive_parsed(self._processes[index % count])
            yield parsed
            index += 1
        if progress.error is not None:
            raise progress.error

    @staticmethod
    def _receive_parsed(process: subprocess.Popen[bytes]) -> ParsedChunk:
        import polars as pl

        assert process.stdout is not None
        frame, rows = _receive(process.stdout), _receive(process.stdout)
        if frame is None or rows is None:
            code = process.wait()
            raise RuntimeError(f"a parsing worker stopped unexpectedly (exit code {code})")
        return ParsedChunk(pl.read_ipc(io.BytesIO(frame)), pl.read_ipc(io.BytesIO(rows))["row"])

    @staticmethod
    def _feed(process: subprocess.Popen[bytes], chunks: queue.Queue[pl.Series | None]) -> None:
        assert process.stdin is not None
        try:
            while (chunk := chunks.get()) is not None:
                _send(process.stdin, _frame_bytes(chunk.to_frame("output")))
        except (BrokenPipeError, OSError, ValueError, KeyboardInterrupt):
            return  # the worker died or the run was interrupted; the reader reports it


class _Progress:
    """How many chunks the producer has queued, and whether it has finished."""

    def __init__(self) -> None:
        self._condition = threading.Condition()
        self._produced = 0
        self._finished = False
        self.error: BaseException | None = None

    def add(self) -> None:
        with self._condition:
            self._produced += 1
            self._condition.notify_all()

    def finish(self, error: BaseException | None = None) -> None:
        with self._condition:
            self._finished, self.error = True, error
            self._condition.notify_all()

    def wait_for(self, index: int) -> bool:
        """True once chunk ``index`` exists; False when the producer ended before it."""
        with self._condition:
            self._condition.wait_for(lambda: self._produced > index or self._finished)
            return self._produced > index


def _take(chunks: queue.Queue[pl.Series | None]) -> pl.Series:
    chunk = chunks.get()
    assert chunk is not None, "the producer queues every chunk before its end marker"
    return chunk


def _chunks(pieces: list[pl.Series]) -> Iterator[pl.Series]:
    """Consecutive chunks of ``CHUNK_ROWS`` outputs (the last may be shorter).

    polars reads a file in many small pieces (hundreds for 1M JSONL lines);
    they are joined up to whole chunks, because every chunk costs a message
    and a round of bulk steps, and larger chunks find more repeated texts.
    """
    import polars as pl

    pending: list[pl.Series] = []
    pending_rows = 0
    while pieces:
        piece = pieces.pop(0)
        pending.append(piece)
        pending_rows += len(piece)
        del piece
        if pending_rows < CHUNK_ROWS:
            continue
        joined = pl.concat(pending, rechunk=True) if len(pending) > 1 else pending[0]
        whole = pending_rows - pending_rows % CHUNK_ROWS
        for start in range(0, whole, CHUNK_ROWS):
            yield joined.slice(start, CHUNK_ROWS)
        pending = [joined.slice(whole)] if whole < pending_rows else []
        pending_rows -= whole
        del joined
    if pending_rows:
        yield pl.concat(pending, rechunk=True) if len(pending) > 1 else pending[0]


def _produce(
    chunks: Iterator[pl.Series], queues: list[queue.Queue[pl.Series | None]], progress: _Progress
) -> None:
    error: BaseException | None = None
    try:
        for index, chunk in enumerate(chunks):
            queues[index % len(queues)].put(chunk)
            progress.add()
    except BaseException as failure:  # reported by the reader
        error = failure
    finally:
        for waiting in queues:
            waiting.put(None)
        progress.finish(error)


def serve(source: IO[bytes], sink: IO[bytes]) -> None:
    """Worker loop: read the parser spec, then parse chunks until the input ends."""
    # Imported before waiting for the spec: a worker started early does this
    # while the parent is still busy with its own imports.
    import jsonschema_rs  # noqa: F401
    import orjson  # noqa: F401
    import polars as pl

    first = _receive(source)
    if first is None:
        return
    spec = pickle.loads(first)  # sent by the parent process that started this worker
    parser = OutputParser(spec)
    while (payload := _receive(source)) is not None:
        outputs = pl.read_ipc(io.BytesIO(payload))["output"]
        frame, rows = parse_distinct(parser, outputs)
        _send(sink, _frame_bytes(frame))
        _send(sink, _frame_bytes(rows.to_frame("row")))
