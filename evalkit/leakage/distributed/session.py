"""The Ray side of a run: which cluster, what evalkit started, and how a stage fails.

- **Which cluster** (:mod:`evalkit.leakage.distributed.cluster`): ``--ray-address
  ADDR``, else ``RAY_ADDRESS``, connects to that cluster once it answers as
  Ray (exit 2 within seconds otherwise). Without an address the run starts a
  local cluster of its own (never one it finds on the machine), with Ray's
  temporary files in a folder of its own (not ``/tmp/ray``), and a watchdog
  process that stops every process of it and removes the folder when the
  run ends, Ctrl-C and SIGKILL of the driver included. When Ray is already
  initialised in this process (a notebook), that connection is used and
  left as it was.
- **Failures:** Ray retries a task whose worker died (``max_retries``); a
  stage that still cannot finish is exit 2 naming the stage. An evalkit
  error raised inside a task (bad input in a block) is re-raised as itself.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from evalkit.errors import EngineFailure, EvalkitError, ParameterError, UsageError
from evalkit.leakage.distributed.cluster import (
    Address,
    check_address,
    chosen_address,
    own_cluster,
    ray_messages,
    shutdown,
)
from evalkit.leakage.progress import Progress

TASK_RETRIES = 3  # Ray's default for tasks whose worker process died


# What a run may be asked for: every shuffle makes partitions x partitions parts, and a
# block is one task's read. The bounds are wide; they only keep a typo from starting work
# no cluster could finish.
BOUNDS = (
    ("partitions", 2, 4096),
    ("bands_per_round", 1, 1024),
    ("block_bytes", 4096, 1 << 32),
    ("num_cpus", 1, 1 << 16),
)


@dataclass(frozen=True)
class RayOptions:
    """How the Ray engine runs (the command line sets ``address`` only)."""

    address: str | None = None
    """Cluster to connect to; None: ``RAY_ADDRESS`` when set, else a new one of the run's own."""
    partitions: int | None = None
    """Partitions of each shuffle (at least 2); None: from the cluster's CPUs and the data."""
    bands_per_round: int = 5
    """LSH bands shuffled together: the memory of a band task is its share of
    texts × bands_per_round records (32 bytes each)."""
    block_bytes: int = 64 << 20
    """JSONL input is read in blocks of about this many bytes, one task each."""
    num_cpus: int | None = None
    """CPUs of a local cluster that evalkit starts (None: Ray's choice, every core)."""

    def __post_init__(self) -> None:
        if self.address is not None and not isinstance(self.address, str):
            raise ParameterError("ray.address", f"must be host:port text, got {self.address!r}")
        for name, low, high in BOUNDS:
            value = getattr(self, name)
            if value is None and name in ("partitions", "num_cpus"):
                continue
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise ParameterError(
                    f"ray.{name}", f"must be a whole number from {low:,} to {high:,}, got {value!r}"
                )


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
    """Connect to the cluster given, or start one of the run's own; stop only what it started."""
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
    address = chosen_address(options.address)
    with ray_messages(shown=not progress.quiet):
        if address is None:
            with own_cluster(ray, options.num_cpus, quiet):
                yield RaySession(ray, progress, True, _cpus(ray))
            return
        check_address(address)
        try:
            _connect(ray, address, quiet)
            yield RaySession(ray, progress, False, _cpus(ray))
        finally:
            # Also after a Ctrl-C inside ray.init: disconnect what was connected so far.
            if ray.is_initialized():
                shutdown(ray)


def _connect(ray: Any, address: Address, quiet: dict[str, Any]) -> None:
    try:
        ray.init(address=address.value, **quiet)
    except (ConnectionError, ValueError, RuntimeError, ImportError) as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise address.refused(f"cannot connect to a Ray cluster there ({first})") from error


def _cpus(ray: Any) -> int:
    return max(1, int(ray.cluster_resources().get("CPU", os.cpu_count() or 1)))
