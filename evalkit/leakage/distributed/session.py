"""The Ray side of a run: which cluster, what evalkit started, and how a stage fails.

- **Which cluster:** ``--ray-address ADDR`` connects to that cluster. Without
  it, Ray's own resolution: ``RAY_ADDRESS``, else a cluster running on this
  machine (``ray start``), else a local one that evalkit starts, with Ray's
  temporary files in a folder of the run's own (not ``/tmp/ray``), and shuts
  down when the run ends, Ctrl-C included. When Ray is already initialised in
  this process (a notebook), that connection is used and left as it was.
- **Failures:** Ray retries a task whose worker died (``max_retries``); a
  stage that still cannot finish is exit 2 naming the stage. An evalkit
  error raised inside a task (bad input in a block) is re-raised as itself.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from evalkit.errors import EngineFailure, EvalkitError, ParameterError, UsageError
from evalkit.leakage.progress import Progress

TASK_RETRIES = 3  # Ray's default for tasks whose worker process died
CONNECT_SECONDS = 5.0


@dataclass(frozen=True)
class RayOptions:
    """How the Ray engine runs (the command line sets ``address`` only)."""

    address: str | None = None
    """Cluster to connect to; None: ``RAY_ADDRESS``, a running local cluster, else a new one."""
    partitions: int | None = None
    """Partitions of each shuffle (at least 2); None: from the cluster's CPUs and the data."""
    bands_per_round: int = 5
    """LSH bands shuffled together: the memory of a band task is its share of
    texts × bands_per_round records (32 bytes each)."""
    block_bytes: int = 64 << 20
    """JSONL input is read in blocks of about this many bytes, one task each."""
    num_cpus: int | None = None
    """CPUs of a local cluster that evalkit starts (None: Ray's choice, every core)."""


def with_address(ray: RayOptions | None, address: str) -> RayOptions:
    """``ray`` (or the defaults) on the cluster at ``address`` (``ray_address``)."""
    if ray is not None and ray.address not in (None, address):
        raise ParameterError(
            "ray_address",
            f"{address}: {{ray}} names another cluster, {ray.address}; give one address",
            refs=["ray"],
        )
    return replace(ray or RayOptions(), address=address)


@dataclass
class RaySession:
    """A connection to a Ray cluster for one run, and the remote functions it uses."""

    ray: Any
    progress: Progress
    started_here: bool
    cpus: int
    _remotes: dict[tuple[str, int], Any] = field(default_factory=dict)

    def remote(self, function: Any, num_returns: int = 1) -> Any:
        """``function`` as a Ray remote function returning ``num_returns`` objects."""
        key = (f"{function.__module__}.{function.__qualname__}", num_returns)
        if key not in self._remotes:
            self._remotes[key] = self.ray.remote(num_returns=num_returns, max_retries=TASK_RETRIES)(
                function
            )
        return self._remotes[key]

    def put(self, value: Any) -> Any:
        """Store a value in the cluster's object store."""
        return self.ray.put(value)

    def run(self, stage: str, markers: Sequence[Any]) -> list[Any]:
        """Wait for a stage's tasks (one marker object each) with a progress bar; their values.

        A task that fails for good ends the run: exit 2 naming the stage.
        """
        ray = self.ray
        values: dict[Any, Any] = {}
        pending = list(markers)
        with self.progress.stage(stage, len(pending), "tasks") as tick:
            while pending:
                done, pending = ray.wait(pending, num_returns=1, timeout=None)
                for ref in done:
                    values[ref] = self.get(stage, ref)
                tick(len(done))
        return [values[ref] for ref in markers]

    def get(self, stage: str, refs: Any) -> Any:
        """``ray.get`` whose failures say which stage could not finish."""
        ray = self.ray
        try:
            return ray.get(refs)
        except ray.exceptions.RayTaskError as error:
            cause = getattr(error, "cause", None)
            if isinstance(cause, EvalkitError):
                raise cause from None
            raise EngineFailure(_failure(stage, cause or error)) from error
        except ray.exceptions.RayError as error:
            raise EngineFailure(_failure(stage, error)) from error


def _failure(stage: str, error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    reason = f"{type(error).__name__}: {lines[-1] if lines else ''}".rstrip(": ")
    return (
        f"the Ray engine: stage {stage!r} could not finish ({reason}); Ray retried lost "
        "workers; check the cluster's memory and logs, or run with the local engine"
    )


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise UsageError(
            "the Ray engine needs Ray: pip install 'evalkit[ray]' (or use the local engine)"
        ) from None
    return ray


@contextlib.contextmanager
def ray_session(options: RayOptions, progress: Progress) -> Iterator[RaySession]:
    """Connect to (or start) a cluster for the run; shut down only what this started."""
    ray = _import_ray()
    # evalkit reports a failed stage itself; Ray's own "unhandled error" print of the
    # stage's other results would add tracebacks after the one-line message.
    os.environ.setdefault("RAY_IGNORE_UNHANDLED_ERRORS", "1")
    # Ray replaces builtins.print in the driver once a worker's message is shown there;
    # evalkit's process keeps its own print (a notebook's too).
    os.environ.setdefault("RAY_TQDM_PATCH_PRINT", "0")
    if ray.is_initialized():
        yield RaySession(ray, progress, False, _cpus(ray))
        return
    quiet = {"logging_level": logging.ERROR, "log_to_driver": False}
    temporary: str | None = None
    started = False
    try:
        if options.address is not None:
            _connect(ray, options.address, quiet)
        else:
            try:
                ray.init(address="auto", **quiet)  # RAY_ADDRESS, or a cluster on this machine
            except ConnectionError:
                # Short: Ray's socket paths must fit in 107 bytes.
                temporary = tempfile.mkdtemp(prefix="evalkit-ray-")
                started = True
                ray.init(
                    num_cpus=options.num_cpus,
                    include_dashboard=False,
                    _temp_dir=temporary,
                    **quiet,
                )
        yield RaySession(ray, progress, temporary is not None, _cpus(ray))
    finally:
        # Also after a Ctrl-C inside ray.init: shutdown stops what was started so far.
        if started or ray.is_initialized():
            _shutdown(ray)
        if temporary is not None:
            shutil.rmtree(temporary, ignore_errors=True)


def _shutdown(ray: Any) -> None:
    """Disconnect, and stop the processes of a cluster this run started.

    A second Ctrl-C during the shutdown must not leave Ray's processes behind.
    """
    import signal

    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        ray.shutdown()
    finally:
        signal.signal(signal.SIGINT, previous)


def _unreachable(address: str) -> str | None:
    """Why ``host:port`` cannot be reached (None when it can, or is not host:port).

    Ray retries an unreachable address for minutes, logging as it goes; a
    plain connection tried first fails in seconds, with one line.
    """
    import socket

    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        return None
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_SECONDS):
            return None
    except OSError as error:
        return error.strerror or type(error).__name__


def _connect(ray: Any, address: str, quiet: dict[str, Any]) -> None:
    reason = _unreachable(address)
    if reason is not None:
        raise UsageError(
            f"Ray address {address}: nothing answers there ({reason}); start a cluster "
            "with `ray start --head`, or leave the address out for a local one"
        )
    try:
        ray.init(address=address, **quiet)
    except (ConnectionError, ValueError, RuntimeError) as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise UsageError(
            f"Ray address {address}: cannot connect to a Ray cluster there ({first}); "
            "start one with `ray start --head`, or leave the address out for a local one"
        ) from error


def _cpus(ray: Any) -> int:
    return max(1, int(ray.cluster_resources().get("CPU", os.cpu_count() or 1)))
