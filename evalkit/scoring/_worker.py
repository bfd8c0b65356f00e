"""Entry point of a parsing worker process, started by ``evalkit.scoring.processes``."""

import contextlib
import os
import signal
import sys

from evalkit.scoring.workers import serve

if __name__ == "__main__":
    # Ctrl-C is the parent's to handle (it closes the pipes, which ends this
    # process); a parent that went away ends it quietly too.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with contextlib.suppress(BrokenPipeError, OSError, KeyboardInterrupt):
        serve(sys.stdin.buffer, sys.stdout.buffer)
    # Every result is sent and flushed, and the parent waits for this exit:
    # skip the interpreter's teardown (freeing every module and polars' thread
    # pool took ~0.1 s, on the parent's critical path).
    os._exit(0)
