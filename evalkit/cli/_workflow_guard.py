"""Under GitHub Actions, nothing evalkit prints can act as a workflow command by accident.

Every line of stdout and stderr passes through :class:`WorkflowGuard`, which
makes it inert (:func:`evalkit.report.github.inert_line`) unless evalkit
itself emits it as a command through :func:`emit_command`. Guarding the
streams, not each message, covers every command and every value: a
candidate's name with a line break, an id, a path in an error message.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections.abc import Iterator
from typing import Any, TextIO

import click

from evalkit.report.github import inert_line

# Where the runner (and anything else reading lines) starts a new line.
_LINE_END = re.compile(r"\r\n|[\r\n\u2028\u2029\x0b\x0c\x1c\x1d\x1e\x85]")
# A line start that might still become "::" (only spaces and one ':' so far), or a
# tail that might still become "##[" - held back until the line goes on.
_UNDECIDED_HEAD = re.compile(r"\s*:?")
_UNDECIDED_TAIL = re.compile(r"#{1,2}$")


def under_github_actions() -> bool:
    """Whether this process runs as a GitHub Actions step."""
    return os.environ.get("GITHUB_ACTIONS") == "true"


class WorkflowGuard:
    """A text stream wrapper: each line written reaches the stream made inert.

    Text is written line by line; the unfinished end of a line is held
    until the line goes on or the stream is flushed (then written, except a
    start or an end that could still become a command with what follows).
    """

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._pending = ""
        self._at_line_start = True

    def write(self, text: str) -> int:
        self._pending += text
        self._drain(final=False)
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        self._drain(final=True)
        self._stream.flush()

    def command(self, line: str) -> None:
        """Write ``line`` as a workflow command evalkit means (its values escaped already)."""
        self.flush()
        if not self._at_line_start:
            self._stream.write("\n")
        self._stream.write(line + "\n")
        self._at_line_start = True
        self._stream.flush()

    def close_guard(self) -> None:
        """Write whatever is held back, as it is now."""
        self._drain(final=True, everything=True)
        self._stream.flush()

    def _drain(self, *, final: bool, everything: bool = False) -> None:
        while (found := _LINE_END.search(self._pending)) is not None:
            self._emit(self._pending[: found.start()])
            self._stream.write(found.group())
            self._at_line_start = True
            self._pending = self._pending[found.end() :]
        if not final or not self._pending:
            return
        if everything:
            self._emit(self._pending)
            self._pending = ""
            return
        head_undecided = self._at_line_start and _UNDECIDED_HEAD.fullmatch(self._pending)
        if head_undecided:
            return
        held = _UNDECIDED_TAIL.search(self._pending)
        cut = held.start() if held else len(self._pending)
        self._emit(self._pending[:cut])
        self._pending = self._pending[cut:]

    def _emit(self, part: str) -> None:
        if not part:
            return
        if self._at_line_start:
            self._stream.write(inert_line(part))
        else:  # the rest of a line whose start was written: only ##[ can act here
            self._stream.write(inert_line("x" + part)[1:])
        self._at_line_start = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def emit_command(line: str) -> None:
    """Print a workflow command (``::error …``) that evalkit means to give the runner."""
    stream = sys.stdout
    if isinstance(stream, WorkflowGuard):
        stream.command(line)
    else:
        click.echo(line)


@contextlib.contextmanager
def guarded_streams() -> Iterator[None]:
    """Guard stdout and stderr for the block when running under GitHub Actions."""
    if not under_github_actions():
        yield
        return
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = WorkflowGuard(saved[0]), WorkflowGuard(saved[1])
    try:
        yield
    finally:
        for guard in (sys.stdout, sys.stderr):
            if isinstance(guard, WorkflowGuard):
                with contextlib.suppress(OSError, ValueError):
                    guard.close_guard()
        sys.stdout, sys.stderr = saved
