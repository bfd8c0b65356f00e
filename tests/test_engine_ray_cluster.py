"""Which cluster a distributed run uses, and what it leaves behind (marker ``ray``).

Each run here is a separate process, as a user runs it: an address that does
not answer as Ray (``--ray-address`` or ``RAY_ADDRESS``) is exit 2 within
seconds; a run without an address starts a cluster of its own, even while
another cluster runs on this machine (this session's, which every run could
otherwise join), so two runs at once do not meet; a driver killed with
SIGKILL leaves no process and no folder of its cluster; Ray's own messages
never reach stdout, and ``-q`` drops them.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalkit import audit

# The Ray tests run on one pytest worker (see conftest.py): this session's cluster is up.
pytestmark = [pytest.mark.ray, pytest.mark.xdist_group("ray")]
ray = pytest.importorskip("ray")

ROOT = Path(__file__).resolve().parents[1]
ANSWER_SECONDS = 45  # "within seconds": the CLI's start and Ray's import on a busy machine
KILLED_SECONDS = 30


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    """A private TMPDIR short enough for Ray's socket paths (107 bytes)."""
    folder = Path(tempfile.mkdtemp(prefix="ek-t-"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def environment(tmp: Path, **extra: str) -> dict[str, str]:
    """This process's environment without an address, with ``tmp`` as TMPDIR."""
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    return env | {"TMPDIR": str(tmp), "PYTHONPATH": str(ROOT)} | extra


@pytest.fixture(scope="module")
def splits(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Two small splits with one copied text (a leak: exit 1)."""
    folder = tmp_path_factory.mktemp("cluster-splits")
    words = [f"w{i}" for i in range(500)]
    rows = [" ".join(words[(7 * i + j) % 500] for j in range(12)) for i in range(300)]
    paths = []
    for name, part in (("train", rows[:200]), ("test", [*rows[200:], rows[0]])):
        path = folder / f"{name}.jsonl"
        path.write_text("".join(json.dumps({"id": f"{name}{k}", "text": t}) + "\n"
                                for k, t in enumerate(part)))  # fmt: skip
        paths.append(path)
    return paths


def evalkit(*args: object) -> list[str]:
    return [sys.executable, "-m", "evalkit", *map(str, args)]


def one_line(result: subprocess.CompletedProcess[str], *fragments: str) -> None:
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def silent_listener() -> Iterator[int]:
    """A TCP port that accepts connections and never says a word (not Ray)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    accepted: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                accepted.append(server.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    yield int(server.getsockname()[1])
    server.close()
    for connection in accepted:
        connection.close()


def test_ray_address_in_the_environment_that_nobody_answers_is_one_line(
    splits: list[Path], short_tmp: Path
) -> None:
    """RAY_ADDRESS was used without the pre-check: Ray retried for 10 minutes."""
    address = f"127.0.0.1:{free_port()}"
    command = evalkit("audit", *splits, "--id", "id", "--text", "text", "--engine", "ray")
    env = environment(short_tmp, RAY_ADDRESS=address)
    result = subprocess.run(command, env=env, capture_output=True, text=True,
                            timeout=ANSWER_SECONDS)  # fmt: skip
    one_line(result, f"RAY_ADDRESS={address}: nothing answers there", "unset RAY_ADDRESS")


@pytest.mark.parametrize("given", ["--ray-address", "RAY_ADDRESS"])
def test_an_address_that_does_not_answer_as_ray_is_one_line(
    splits: list[Path], short_tmp: Path, silent_listener: int, given: str
) -> None:
    """A plain TCP listener passed the connection check, and Ray then hung past 5 minutes."""
    address = f"127.0.0.1:{silent_listener}"
    command = evalkit("audit", *splits, "--id", "id", "--text", "text", "--engine", "ray")
    env = environment(short_tmp)
    if given == "RAY_ADDRESS":
        env["RAY_ADDRESS"] = address
    else:
        command += ["--ray-address", address]
    started = time.monotonic()
    result = subprocess.run(command, env=env, capture_output=True, text=True,
                            timeout=ANSWER_SECONDS)  # fmt: skip
    one_line(result, address, "does not answer as a Ray cluster (GCS) within 5 s")
    assert time.monotonic() - started < ANSWER_SECONDS


@pytest.mark.parametrize(
    ("address", "problem"),
    [
        ("auto", "joins only a cluster named by host:port"),
        ("head-node", "is not host:port or ray://host:port"),
        ("ray://127.0.0.1:{closed}", "nothing answers there"),
    ],
)
def test_addresses_refused_before_ray_is_asked(address: str, problem: str) -> None:
    from evalkit.errors import UsageError
    from evalkit.leakage.distributed.cluster import Address, check_address

    address = address.format(closed=free_port())
    with pytest.raises(UsageError, match=problem):
        check_address(Address(address))


def test_a_ray_client_address_without_ray_client_is_one_line(silent_listener: int) -> None:
    """``ray://`` needs Ray Client (grpcio), which the ``ray`` extra does not install."""
    from evalkit.errors import UsageError
    from evalkit.leakage.distributed.cluster import Address, check_address

    address = f"ray://127.0.0.1:{silent_listener}"
    with pytest.raises(UsageError) as refused:
        check_address(Address(address))
    message = str(refused.value)
    assert address in message
    # Without Ray Client installed, say how to get it; with it, the listener is not Ray.
    assert "pip install 'ray[client]'" in message or "does not answer as a Ray Client" in message


def _jobs() -> int:
    from ray._private import state

    return len(state.jobs())


def test_an_address_given_is_used(
    ray_cluster: None, splits: list[Path], short_tmp: Path, tmp_path: Path
) -> None:
    """This session's cluster, named by RAY_ADDRESS: the run joins it (one more job)."""
    before = _jobs()
    out = tmp_path / "joined.json"
    command = evalkit("audit", *splits, "--id", "id", "--text", "text", "--engine", "ray",
                      "-q", "--json", out)  # fmt: skip
    env = environment(short_tmp, RAY_ADDRESS=ray.get_runtime_context().gcs_address)
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 1, result.stderr  # the copied text
    local = audit(splits, id_column="id", text="text")
    assert json.loads(out.read_text())["counts"] == local.model_dump(mode="json")["counts"]
    assert _jobs() == before + 1
    assert not list(short_tmp.glob("evalkit-ray-*"))  # nothing started here, nothing left


def test_two_runs_at_once_each_start_a_cluster_of_their_own(
    ray_cluster: None, splits: list[Path], short_tmp: Path, tmp_path: Path
) -> None:
    """Runs joined any cluster on the machine (``address="auto"``): a second run joined
    the first's and died with exit 1 and no JSON when the first shut it down."""
    before = _jobs()
    runs = []
    for number in range(2):
        command = evalkit("audit", *splits, "--id", "id", "--text", "text", "--engine",
                          "ray", "-q", "--json", tmp_path / f"{number}.json")  # fmt: skip
        runs.append(subprocess.Popen(command, env=environment(short_tmp), text=True,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE))  # fmt: skip
    outputs = [run.communicate(timeout=400) for run in runs]
    assert [run.returncode for run in runs] == [1, 1], outputs
    local = audit(splits, id_column="id", text="text").model_dump(mode="json")
    for number in range(2):
        report = json.loads((tmp_path / f"{number}.json").read_text())
        assert report["options"]["engine"] == "ray"
        assert {k: v for k, v in report.items() if k != "options"} == {
            k: v for k, v in local.items() if k != "options"
        }
    assert _jobs() == before  # this session's cluster, running all along, was not joined
    assert not list(short_tmp.glob("evalkit-ray-*"))  # each run's folder is gone


DRIVER = """
import sys, time
from evalkit.leakage.distributed.session import RayOptions, ray_session
from evalkit.leakage.progress import Progress

def die_once(marker):
    import os
    from pathlib import Path
    if not os.path.exists(marker):
        Path(marker).write_text("x")
        os._exit(1)  # a worker dies: Ray retries, and its raylet says so
    return "second try"

with ray_session(RayOptions(num_cpus=1), Progress(sys.argv[1] == "progress")) as session:
    print(session.run("a stage", [session.remote(die_once).remote(sys.argv[2])]), flush=True)
    print("ready", flush=True)
    if sys.argv[3] == "wait":
        time.sleep(600)
"""


def driver(tmp: Path, *, progress: bool, wait: bool) -> subprocess.Popen[str]:
    """A driver process on a cluster of its own: a worker dies once, then it ends or waits."""
    arguments = ["progress" if progress else "quiet", str(tmp / "died"), "wait" if wait else "end"]
    return subprocess.Popen(
        [sys.executable, "-c", DRIVER, *arguments],
        env=environment(tmp),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # the test kills this process alone
    )


def test_ray_messages_never_reach_stdout_and_quiet_drops_them(short_tmp: Path) -> None:
    """``(raylet) A worker died …`` was printed on stdout, with -q too."""
    (short_tmp / "quiet").mkdir()
    (short_tmp / "shown").mkdir()
    quiet = driver(short_tmp / "quiet", progress=False, wait=False)
    shown = driver(short_tmp / "shown", progress=True, wait=False)
    quiet_out, quiet_err = quiet.communicate(timeout=300)
    shown_out, shown_err = shown.communicate(timeout=300)
    assert quiet_out == shown_out == "['second try']\nready\n", (quiet_err, shown_err)
    assert "(raylet)" not in quiet_err
    assert "(raylet)" in shown_err and "A worker died" in shown_err  # on stderr only
    assert not list(short_tmp.glob("*/evalkit-ray-*"))  # each run's folder is removed


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return found


def _descendants(pid: int) -> set[int]:
    seen: set[int] = set()
    pending = _children(pid)
    while pending:
        child = pending.pop()
        if child not in seen:
            seen.add(child)
            pending += _children(child)
    return seen


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"  # a zombie has exited; only its parent has yet to reap it


def _name(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return "?"


def test_a_killed_driver_leaves_no_process_and_no_folder(short_tmp: Path) -> None:
    """After SIGKILL of the driver, ray::DashboardAgent and ray::RuntimeEnvAgent lived on
    (66 s and more, ignoring SIGTERM), and so did the run's evalkit-ray-* folder."""
    run = driver(short_tmp, progress=False, wait=True)
    recorded: dict[int, str] = {}
    try:
        assert run.stdout is not None
        lines = [run.stdout.readline() for _ in range(2)]
        while lines[-1] not in ("ready\n", ""):  # Ray's messages came first (checked above)
            lines.append(run.stdout.readline())
        assert lines[-1] == "ready\n", lines
        recorded = {pid: _name(pid) for pid in _descendants(run.pid)}
        names = set(recorded.values())
        assert {"raylet", "gcs_server"} <= names, names
        assert any(name.startswith("ray::") for name in names), names  # agents, workers
        assert [p.name for p in short_tmp.iterdir() if p.name.startswith("evalkit-ray-")]
        os.kill(run.pid, signal.SIGKILL)
        run.wait(timeout=30)
        deadline = time.monotonic() + KILLED_SECONDS
        while time.monotonic() < deadline and any(_alive(pid) for pid in recorded):
            time.sleep(0.2)
        left = sorted((pid, _name(pid)) for pid in recorded if _alive(pid))
        assert not left, left
        while time.monotonic() < deadline and any(short_tmp.glob("evalkit-ray-*")):
            time.sleep(0.2)
        assert not list(short_tmp.glob("evalkit-ray-*"))
    finally:
        for pid, name in recorded.items():  # what this test started, if the check failed
            if _alive(pid) and _name(pid) == name:
                os.kill(pid, signal.SIGKILL)
        if run.poll() is None:
            run.kill()
        run.communicate(timeout=30)
