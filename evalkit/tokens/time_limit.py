"""A time limit on chat-template renders, in any thread of any process, nearly free per render.

A chat template is code from the model's folder. jinja's sandbox keeps it
from reaching Python's internals, but not from looping: two nested
``range(100000)`` loops render for hours. Every render runs inside
:func:`time_limit`; when one conversation's render has used ``seconds`` of
its thread's CPU time without finishing, the render is stopped and the
caller gets :class:`TemplateTimeout` (exit 2, naming the template).

How: the rendering thread only bumps a counter per conversation
(:meth:`Watch.at`, an integer add on the hot path). One watchdog thread
per process, asleep while nothing is watched, wakes a few times per limit,
reads the rendering thread's CPU clock, and when the counter has not moved
for ``seconds`` of that thread's CPU time raises an exception in it
(``PyThreadState_SetAsyncExc``), delivered between two bytecodes of the
template's loop. CPU time, not wall time: a busy shared machine or a
process stopped with Ctrl-Z does not make a template slow. Not SIGALRM: a
signal handler can be set only from the main thread, and the signal may
belong to someone else (pytest-timeout, the application embedding evalkit).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from evalkit.errors import EvalkitError


class TemplateTimeout(EvalkitError):
    """A chat template rendered one conversation for longer than the limit (a runaway loop)."""


class _Expired(BaseException):
    """Raised asynchronously in a rendering thread; a BaseException, so that no ``except
    Exception`` of jinja or transformers swallows it on its way out."""


def _cpu_clock(thread_id: int) -> int | None:
    """The CPU-time clock of a thread (None where the platform has none: wall time then)."""
    try:
        return time.pthread_getcpuclockid(thread_id)
    except (AttributeError, OSError):
        return None


@dataclass(eq=False)
class Watch:
    """One guarded stretch of renders in one thread."""

    thread_id: int
    seconds: float
    ticks: int = 0
    """Renders started: the rendering thread adds one per conversation."""
    row: int = 0
    """The conversation being rendered (its index in the caller's batch)."""
    clock: int | None = None
    seen: int = -1
    since: float = 0.0
    """The thread's clock when ``ticks`` was last seen to move."""
    fired: bool = False
    active: bool = True

    def at(self, row: int) -> None:
        """The render of conversation ``row`` is starting: the limit applies to each afresh."""
        self.ticks += 1
        self.row = row

    def now(self) -> float:
        if self.clock is not None:
            try:
                return time.clock_gettime(self.clock)
            except OSError:  # the thread is gone
                self.clock = None
        return time.monotonic()


@dataclass
class _Watchdog:
    condition: threading.Condition = field(default_factory=threading.Condition)
    watches: list[Watch] = field(default_factory=list)

    def add(self, watch: Watch) -> None:
        with self.condition:
            self.watches.append(watch)
            self.condition.notify()

    def remove(self, watch: Watch) -> bool:
        """Stop watching; whether the watch fired (its exception may still be pending)."""
        with self.condition:
            watch.active = False
            if watch in self.watches:
                self.watches.remove(watch)
            return watch.fired

    def run(self) -> None:
        with self.condition:
            while True:
                if not self.watches:
                    self.condition.wait()
                    continue
                wake = min(self._check(watch) for watch in self.watches)
                self.condition.wait(max(wake, 0.01))

    def _check(self, watch: Watch) -> float:
        """Fire a watch that made no progress for its limit; seconds until the next check."""
        now = watch.now()
        if watch.ticks != watch.seen:
            watch.seen, watch.since = watch.ticks, now
        elif watch.active and not watch.fired and now - watch.since >= watch.seconds:
            watch.fired = True
            _raise_in(watch.thread_id)
        return watch.seconds / 4


def _raise_in(thread_id: int, exception: type[BaseException] | None = _Expired) -> None:
    import ctypes

    ctypes.pythonapi.PyThreadState_SetAsyncExc(
        ctypes.c_ulong(thread_id), ctypes.py_object(exception) if exception else None
    )


_LOCK = threading.Lock()
_DOG: tuple[int, _Watchdog] | None = None


def _watchdog() -> _Watchdog:
    """This process's watchdog, started on first use (again after a fork)."""
    global _DOG
    import os

    with _LOCK:
        if _DOG is None or _DOG[0] != os.getpid():
            dog = _Watchdog()
            threading.Thread(target=dog.run, name="evalkit-render-limit", daemon=True).start()
            _DOG = (os.getpid(), dog)
        return _DOG[1]


@contextlib.contextmanager
def time_limit(seconds: float, template: str, where: Callable[[int], str]) -> Iterator[Watch]:
    """Renders in the block, each under ``seconds`` of CPU time; ``at(row)`` before each.

    A render over the limit raises :class:`TemplateTimeout` naming
    ``template`` (the file it came from) and ``where(row)``, the conversation
    it was rendering.
    """
    thread_id = threading.get_ident()
    watch = Watch(thread_id, seconds, clock=_cpu_clock(thread_id))
    dog = _watchdog()
    try:
        try:
            dog.add(watch)
            yield watch
        finally:
            if dog.remove(watch):
                # Fired as the block ended: take back the exception if not yet delivered.
                _raise_in(thread_id, None)
    except _Expired:
        raise TemplateTimeout(
            f"{template}: the chat template ran for more than {seconds:g} s of CPU time on "
            f"{where(watch.row)} without finishing (a loop that does not end?); "
            "fix the template"
        ) from None
