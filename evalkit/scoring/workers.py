"""Parsing outputs in chunks, in this process and in worker processes.

Parsing and schema validation are per-output Python calls (orjson,
jsonschema-rs), bound by one core each; with ``workers`` parsing processes,
``workers - 1`` are subprocesses and this process parses chunks itself while
the result it needs next is not back yet (it would otherwise only wait, and
every subprocess costs ~0.15 CPU-seconds to start and its share of pipe
traffic); a subprocess takes the next chunk whenever it has room, so the
busier this process is, the more the subprocesses parse. Every process runs
the very same
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
from typing import IO, TYPE_CHECKING, Protocol

from evalkit.scoring.processes import stop, take_started

if TYPE_CHECKING:
    import polars as pl


class ChunkParser(Protocol):
    """Parses one chunk of outputs: a frame per distinct output, and each output's row."""

    def parse_distinct(self, outputs: pl.Series) -> tuple[pl.DataFrame, pl.Series]: ...


class Spec(Protocol):
    """What a worker is sent (pickled): the rules it builds its parser from
    (:class:`evalkit.contract.parse.ParserSpec`, or the tool-call parser's spec)."""

    def build(self) -> ChunkParser: ...

    @property
    def parse_in_caller(self) -> bool:
        """Whether the calling process parses chunks too while it waits (False when it
        has work of its own meanwhile, such as reading and checking tool-call gold)."""
        ...


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

    def __init__(self, spec: Spec, workers: int) -> None:
        self.spec = spec
        self.workers = workers
        self._local: ChunkParser | None = None
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
            self._local = self.spec.build()
        return ParsedChunk(*self._local.parse_distinct(chunk))

    def _parse_shared(self, chunks: Iterator[pl.Series]) -> Iterator[ParsedChunk]:
        """Chunks parsed by whichever process is free, yielded in order.

        A subprocess takes the next chunk whenever it has fewer than
        ``IN_FLIGHT`` (a feeding thread each); this process parses one only
        while the result it needs next is not there yet. So the subprocesses
        take the larger share when this process is busy reading gold and
        matching (measured: with a fixed half each, the subprocess waited
        for this process). One reading thread per subprocess reads each
        result as soon as it is due, so a subprocess never waits on a full
        pipe, and a subprocess blocked on writing never deadlocks a parent
        blocked on writing the next chunk.
        """
        local = self.spec.parse_in_caller
        board = _Board(chunks, len(self._processes), local)
        results: list[queue.Queue[ParsedChunk | BaseException]] = [
            queue.Queue() for _ in self._processes
        ]
        for owner, process in enumerate(self._processes):
            feeding = threading.Thread(target=self._feed, args=(owner, process, board))
            reading = threading.Thread(
                target=self._read, args=(owner, process, board, results[owner])
            )
            for thread in (feeding, reading):
                thread.daemon = True
                thread.start()
        ahead: dict[int, ParsedChunk] = {}  # chunks this process parsed while waiting
        index = 0
        while True:
            if index in ahead:
                yield ahead.pop(index)
                index += 1
                continue
            owner = board.owner(index)
            if owner == _LOCAL:  # every subprocess is full: parse it here
                claimed = board.claim(_LOCAL)
                if claimed is None:
                    break
                ahead[claimed[0]] = self._parse_here(claimed[1])
                continue
            if owner == _END:
                break
            assert isinstance(owner, int)
            waiting = results[owner]
            if local and waiting.empty() and (claimed := board.claim(_LOCAL)) is not None:
                ahead[claimed[0]] = self._parse_here(claimed[1])  # instead of waiting
                continue
            parsed = waiting.get()
            if isinstance(parsed, BaseException):
                raise parsed
            yield parsed
            index += 1
        if board.error is not None:
            raise board.error

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
    def _feed(owner: int, process: subprocess.Popen[bytes], board: _Board) -> None:
        assert process.stdin is not None
        try:
            while (claimed := board.claim(owner)) is not None:
                _send(process.stdin, _frame_bytes(claimed[1].to_frame("output")))
                del claimed  # the chunk's memory goes once it is sent
        except (BrokenPipeError, OSError, ValueError, KeyboardInterrupt):
            return  # the worker died or the run was interrupted; the reader reports it
        finally:
            board.leave(owner)

    @classmethod
    def _read(
        cls,
        owner: int,
        process: subprocess.Popen[bytes],
        board: _Board,
        results: queue.Queue[ParsedChunk | BaseException],
    ) -> None:
        # Only a result that is due is read: a thread blocked on reading would
        # hold the pipe's lock when the pool closes it.
        while board.due(owner):
            try:
                results.put(cls._receive_parsed(process))
            except BaseException as error:  # the worker died: the consumer raises it
                results.put(error)
                return
            board.done(owner)


_LOCAL = -1  # the owner of a chunk parsed by this process
_END = -2  # no chunk with this index: the chunks have run out
IN_FLIGHT = 2  # chunks a subprocess holds at once: one parsing, one arriving


class _Board:
    """Which process parses which chunk: chunks go out in order, one at a time, to
    whoever asks first; a subprocess asks again once a result of its own is read."""

    def __init__(self, chunks: Iterator[pl.Series], subprocesses: int, local: bool = True) -> None:
        self._chunks = chunks
        self._local = local  # whether this process takes chunks when every subprocess is full
        self._condition = threading.Condition()
        self._owners: list[int] = []  # owner of each chunk handed out so far
        self._in_flight = [0] * subprocesses
        self._taking = [True] * subprocesses  # whose feeding thread still runs
        self._finished = False
        self.error: BaseException | None = None

    def claim(self, owner: int) -> tuple[int, pl.Series] | None:
        """The next chunk for ``owner`` (its index and outputs), or None when none is
        left. A subprocess first waits while it holds ``IN_FLIGHT`` chunks."""
        with self._condition:
            if owner != _LOCAL:
                self._condition.wait_for(
                    lambda: self._finished or self._in_flight[owner] < IN_FLIGHT
                )
            if self._finished:
                return None
            try:
                chunk = next(self._chunks)
            except StopIteration:
                self._finish()
                return None
            except BaseException as failure:  # re-raised by the consumer
                self._finish(failure)
                return None
            self._owners.append(owner)
            if owner != _LOCAL:
                self._in_flight[owner] += 1
            self._condition.notify_all()
            return len(self._owners) - 1, chunk

    def _finish(self, error: BaseException | None = None) -> None:
        self._finished, self.error = True, error
        self._condition.notify_all()

    def owner(self, index: int) -> int:
        """Who has chunk ``index``: a subprocess, ``_LOCAL`` when it is not handed out
        yet and no subprocess can take it now, or ``_END`` when the chunks ran out
        before it. While a subprocess has room, it is left the chunk."""
        with self._condition:
            self._condition.wait_for(
                lambda: (
                    index < len(self._owners)
                    or self._finished
                    or (self._local and not self._room())
                )
            )
            if index < len(self._owners):
                return self._owners[index]
            return _END if self._finished else _LOCAL

    def _room(self) -> bool:
        return any(
            taking and held < IN_FLIGHT
            for taking, held in zip(self._taking, self._in_flight, strict=True)
        )

    def leave(self, owner: int) -> None:
        """Subprocess ``owner`` takes no more chunks (they ran out, or it failed)."""
        with self._condition:
            self._taking[owner] = False
            self._condition.notify_all()

    def due(self, owner: int) -> bool:
        """Wait until subprocess ``owner`` owes a result; False when it never will."""
        with self._condition:
            self._condition.wait_for(lambda: self._in_flight[owner] > 0 or self._finished)
            return self._in_flight[owner] > 0

    def done(self, owner: int) -> None:
        """A result of subprocess ``owner`` was read: it may take another chunk."""
        with self._condition:
            self._in_flight[owner] -= 1
            self._condition.notify_all()


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
    parser = spec.build()
    while (payload := _receive(source)) is not None:
        outputs = pl.read_ipc(io.BytesIO(payload))["output"]
        frame, rows = parser.parse_distinct(outputs)
        _send(sink, _frame_bytes(frame))
        _send(sink, _frame_bytes(rows.to_frame("row")))
