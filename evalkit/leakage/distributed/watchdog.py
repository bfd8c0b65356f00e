"""The watchdog of a Ray cluster that a run starts: it outlives the driver and cleans up.

Ray's node processes are started by the driver (``ray.init``), and the raylet
starts its agents and workers. When the driver dies without shutting Ray
down (SIGKILL, the OOM killer), the GCS and raylet follow it, but the agents
(``ray::DashboardAgent``, ``ray::RuntimeEnvAgent``) live on, ignore SIGTERM,
and the run's temporary folder stays. Neither a process group nor the
process tree finds them reliably: workers put themselves in groups of their
own, and orphans are re-parented to init. So a process of the run is known
by two marks: the driver sets ``EVALKIT_RAY_RUN=<token>`` while ``ray.init``
starts the cluster, and Ray passes its environment on to every process it
starts (the token is random per run); and every Ray process keeps its log
files open in the run's folder (a process that renames itself, as Ray's
agents and workers do, may overwrite its environment as /proc shows it,
never its open files).

This watchdog is a separate process in a session of its own (a Ctrl-C or a
signal to the driver's process group does not reach it), started before the
cluster: it makes the run's folder and prints its path, then waits for its
standard input to close, which happens when the driver ends, however it
ends. It then kills (SIGKILL) every process that carries the token or holds
a file in the run's folder (every Ray process keeps its logs open there),
until none is left, and removes the folder.

It runs as a script (``python -I -S watchdog.py``) and imports the standard
library only, so it starts in milliseconds.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import sys
import tempfile
import time

MARK = "EVALKIT_RAY_RUN"
FOLDER_PREFIX = "evalkit-ray-"
SWEEP_SECONDS = 20.0  # at most this long killing; a scan takes milliseconds


def new_token() -> str:
    """A token that only this run's processes will carry."""
    return secrets.token_hex(16)


def marked_pids(token: str, folder: str, spare: set[int]) -> list[int]:
    """The run's processes (but those in ``spare``): see :func:`_is_marked`."""
    entry = f"{MARK}={token}".encode()
    inside = os.path.join(os.path.realpath(folder), "")
    try:
        names = os.listdir("/proc")
    except OSError:  # no /proc (not Linux): Ray's own shutdown is all there is
        return []
    return [
        int(name)
        for name in names
        if name.isdigit() and int(name) not in spare and _is_marked(name, entry, inside)
    ]


def _is_marked(pid: str, entry: bytes, inside: str) -> bool:
    """Whether process ``pid`` belongs to the run: its environment holds ``entry``, or it
    has a file or its working folder inside the run's folder.

    /proc/PID/environ is the environment a process started with, but a process
    that renames itself (Ray's agents and workers, through setproctitle) may
    overwrite it; every Ray process keeps its log files open in the run's
    folder, though. Processes gone meanwhile (or not readable) are skipped.
    """
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            if entry in handle.read().split(b"\0"):
                return True
        links = [f"/proc/{pid}/cwd"]
        links += [f"/proc/{pid}/fd/{fd}" for fd in os.listdir(f"/proc/{pid}/fd")]
    except OSError:
        return False
    for link in links:
        try:
            if os.path.join(os.readlink(link), "").startswith(inside):
                return True
        except OSError:
            continue
    return False


def sweep(token: str, folder: str, spare: set[int], seconds: float = SWEEP_SECONDS) -> None:
    """SIGKILL the run's processes until two scans in a row find none (or time is up).

    A process killed while it was starting another can leave that one
    behind for the next scan; a killed process is a zombie until reaped, and a
    zombie's environment reads empty, so it is not found again.
    """
    deadline = time.monotonic() + seconds
    quiet_scans = 0
    while quiet_scans < 2 and time.monotonic() < deadline:
        pids = marked_pids(token, folder, spare)
        for pid in pids:
            with contextlib.suppress(OSError):  # gone meanwhile
                os.kill(pid, signal.SIGKILL)
        quiet_scans = 0 if pids else quiet_scans + 1
        time.sleep(0.05)


def main(arguments: list[str]) -> int:
    """``watchdog.py DRIVER_PID TOKEN [PARENT_FOLDER]``: see the module's docstring."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    driver, token = int(arguments[0]), arguments[1]
    parent = arguments[2] if len(arguments) > 2 and arguments[2] else None
    folder = tempfile.mkdtemp(prefix=FOLDER_PREFIX, dir=parent)
    try:
        sys.stdout.write(folder + "\n")
        sys.stdout.flush()
        sys.stdout.close()  # nothing more is written: a dead driver cannot take it
        while sys.stdin.buffer.read(4096):
            pass  # the driver never writes; end of file is the signal
    finally:
        try:
            sweep(token, folder, {os.getpid(), driver})
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
