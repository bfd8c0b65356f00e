"""Entry point of a parsing worker process, started by ``evalkit.scoring.workers.ParsePool``."""

import sys

from evalkit.scoring.workers import serve

if __name__ == "__main__":
    serve(sys.stdin.buffer, sys.stdout.buffer)
