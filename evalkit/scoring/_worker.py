"""Entry point of a parsing worker process, started by ``evalkit.scoring.workers.ParsePool``."""

import contextlib
import signal
import sys

from evalkit.scoring.workers import serve

if __name__ == "__main__":
    # Ctrl-C is the parent's to handle (it closes the pipes, which ends this
    # process); a parent that went away ends it quietly too.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with contextlib.suppress(BrokenPipeError, OSError, KeyboardInterrupt):
        serve(sys.stdin.buffer, sys.stdout.buffer)
