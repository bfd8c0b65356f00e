"""Which Ray cluster a run uses, and the cluster a run starts and owns.

- **An address is used only when given:** ``--ray-address`` (``RayOptions.address``),
  else ``RAY_ADDRESS`` when set (Ray's own variable, which ``ray job submit``
  sets for its drivers). ``auto`` is refused: it joins whatever cluster runs
  on this machine. Before ``ray.init``, the address must answer *as Ray*
  within seconds: a TCP connection first (a refused port fails at once), then
  one request to Ray's GCS (or, for ``ray://``, a Ray Client ping) in a
  child process that is killed when the time is up. Ray itself retries an
  address that does not answer for minutes, and a plain TCP listener there
  would hold it for good.
- **Else the run starts a cluster of its own** (``ray.init(address="local")``:
  never one found on the machine, so two runs at once each have their own)
  in a temporary folder of its own, watched by :mod:`watchdog`, which kills
  every process of that cluster and removes the folder when the driver
  ends, even by SIGKILL.
- **Ray's own messages** (``(raylet) A worker died …``) are printed by the
  driver on stdout, where ``--json -`` writes; during a run they go to
  stderr, and ``-q`` drops them.
"""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from evalkit.errors import UsageError
from evalkit.leakage.distributed import watchdog

CONNECT_SECONDS = 5.0  # for the address to answer, once the probe has imported Ray
IMPORT_SECONDS = 60.0  # for the probe process to import Ray (a busy machine is slow)
ADDRESS_VARIABLE = "RAY_ADDRESS"

_PROBE = """
import sys
kind, address, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
try:
    if kind == "gcs":
        from ray._raylet import GcsClient
    else:
        import grpc
        from ray._private.grpc_utils import init_grpc_channel
        from ray.core.generated import ray_client_pb2, ray_client_pb2_grpc
except ImportError as error:
    print("missing", error.name, flush=True)
    sys.exit(0)
print("imported", flush=True)
try:
    if kind == "gcs":
        GcsClient(address=address).internal_kv_get(b"evalkit-probe", None, timeout=seconds)
    else:
        channel = init_grpc_channel(address)
        grpc.channel_ready_future(channel).result(timeout=seconds)
        request = ray_client_pb2.ClusterInfoRequest()
        request.type = ray_client_pb2.ClusterInfoType.PING
        ray_client_pb2_grpc.RayletDriverStub(channel).ClusterInfo(request, timeout=seconds)
except Exception as error:
    text = str(error).strip()
    print("refused", type(error).__name__ + (": " + text.splitlines()[0] if text else ""))
else:
    print("answered")
"""


@dataclass(frozen=True)
class Address:
    """A cluster address the run was given, and where: ``--ray-address`` or ``RAY_ADDRESS``."""

    value: str
    from_environment: bool = False

    @property
    def named(self) -> str:
        """How a message names it."""
        if self.from_environment:
            return f"{ADDRESS_VARIABLE}={self.value}"
        return f"Ray address {self.value}"

    def refused(self, problem: str) -> UsageError:
        """Exit 2: ``problem`` with this address, and what to do instead."""
        instead = f"unset {ADDRESS_VARIABLE}" if self.from_environment else "leave it out"
        return UsageError(
            f"{self.named}: {problem}; start a cluster with `ray start --head`, or {instead} "
            "for a cluster of the run's own"
        )


def chosen_address(given: str | None) -> Address | None:
    """The address to connect to: ``given``, else ``RAY_ADDRESS``; None: start a cluster."""
    if given is not None:
        return Address(given)
    from_environment = os.environ.get(ADDRESS_VARIABLE, "").strip()
    if from_environment and from_environment != "local":  # "local": Ray's "start one"
        return Address(from_environment, from_environment=True)
    return None


def check_address(address: Address) -> None:
    """Exit 2 unless ``address`` answers as a Ray cluster within seconds."""
    value = address.value
    if value.strip().lower() == "auto":
        raise address.refused("evalkit joins only a cluster named by host:port or ray://host:port")
    client = value.startswith("ray://")
    host, _, port = value.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        raise address.refused("is not host:port or ray://host:port")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_SECONDS):
            pass
    except OSError as error:
        raise address.refused(
            f"nothing answers there ({error.strerror or type(error).__name__})"
        ) from None
    verdict = _probe("client" if client else "gcs", value.removeprefix("ray://"))
    if verdict == "answered":
        return
    if verdict.startswith("missing"):
        raise UsageError(
            f"{address.named}: a ray:// address needs Ray Client: pip install 'ray[client]' "
            "(or give the cluster's GCS host:port)"
        )
    if verdict.startswith("refused"):
        reason = verdict.removeprefix("refused ")
        raise address.refused(f"a Ray cluster there refused the connection ({reason})")
    what = "a Ray Client server" if client else "a Ray cluster (GCS)"
    raise address.refused(f"does not answer as {what} within {CONNECT_SECONDS:g} s")


def _probe(kind: str, address: str) -> str:
    """The probe's verdict: ``answered``, ``refused …``, ``missing …``, or ``silent``."""
    command = [sys.executable, "-c", _PROBE, kind, address, str(CONNECT_SECONDS)]
    process = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,  # Ray's C++ client logs its retries there
        start_new_session=True,
    )
    assert process.stdout is not None
    lines = _Lines(process.stdout.fileno())
    try:
        first = lines.next(IMPORT_SECONDS)
        if first != "imported":
            return first or "silent"
        return lines.next(CONNECT_SECONDS + 1) or "silent"
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()
        process.stdout.close()


class _Lines:
    """Lines read from a pipe, each waited for at most a given time."""

    def __init__(self, descriptor: int) -> None:
        self.descriptor = descriptor
        self.buffered = b""

    def next(self, seconds: float) -> str:
        """The next line ('' when none came in ``seconds``, or the pipe closed first)."""
        deadline = time.monotonic() + seconds
        while b"\n" not in self.buffered:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.descriptor], [], [], left)[0]:
                return ""
            chunk = os.read(self.descriptor, 4096)
            if not chunk:
                return ""
            self.buffered += chunk
        line, _, self.buffered = self.buffered.partition(b"\n")
        return line.decode(errors="replace").strip()


class Watchdog:
    """The watchdog process of a cluster this run starts (see :mod:`watchdog`)."""

    def __init__(self) -> None:
        self.token = watchdog.new_token()
        environment = {k: v for k, v in os.environ.items() if k != watchdog.MARK}
        command = [sys.executable, "-I", "-S", watchdog.__file__]
        command += [str(os.getpid()), self.token, tempfile.gettempdir()]
        try:
            self.process = subprocess.Popen(
                command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=environment,
                start_new_session=True,  # out of reach of the driver's Ctrl-C and process group
            )
        except OSError as error:
            raise UsageError(
                f"the Ray engine could not start its watchdog process ({error.strerror})"
            ) from None
        assert self.process.stdout is not None
        self.folder = _Lines(self.process.stdout.fileno()).next(IMPORT_SECONDS)
        self.process.stdout.close()
        if not self.folder or not os.path.isdir(self.folder):
            self.finish()
            raise UsageError("the Ray engine could not start its watchdog process")

    @contextlib.contextmanager
    def marking(self) -> Iterator[None]:
        """While Ray starts its processes, they inherit the run's mark."""
        before = os.environ.get(watchdog.MARK)
        os.environ[watchdog.MARK] = self.token
        try:
            yield
        finally:
            if before is None:
                os.environ.pop(watchdog.MARK, None)
            else:
                os.environ[watchdog.MARK] = before

    def finish(self) -> None:
        """Let the watchdog kill what is left of the cluster and remove the folder; wait."""
        if self.process.stdin is not None and not self.process.stdin.closed:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=watchdog.SWEEP_SECONDS + 10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self.folder:
            shutil.rmtree(self.folder, ignore_errors=True)


@contextlib.contextmanager
def own_cluster(ray: Any, num_cpus: int | None, quiet: dict[str, Any]) -> Iterator[None]:
    """Start a local cluster that only this run uses; stop it and remove its files after."""
    guard = Watchdog()
    try:
        with guard.marking():
            # Short folder: Ray's socket paths must fit in 107 bytes.
            ray.init(
                address="local",  # never a cluster found on this machine, never RAY_ADDRESS
                num_cpus=num_cpus,
                include_dashboard=False,
                _temp_dir=guard.folder,
                **quiet,
            )
        yield
    finally:
        try:
            if ray.is_initialized():
                shutdown(ray)
        finally:
            guard.finish()


def shutdown(ray: Any) -> None:
    """Disconnect (and stop what this run started); a second Ctrl-C must not cut it short."""
    import signal

    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        ray.shutdown()
    finally:
        signal.signal(signal.SIGINT, previous)


@contextlib.contextmanager
def ray_messages(shown: bool) -> Iterator[None]:
    """Ray's driver-side messages on stderr (never stdout), or none when not ``shown``."""
    try:
        from ray._private import worker as ray_worker
    except ImportError:
        yield
        return
    original = getattr(ray_worker, "print_to_stdstream", None)
    if original is None:
        yield
        return

    def to_stderr(data: dict[str, Any], ignore_prefix: bool) -> None:
        if shown:
            original({**data, "is_err": True}, ignore_prefix)

    ray_worker.print_to_stdstream = to_stderr
    try:
        yield
    finally:
        ray_worker.print_to_stdstream = original
