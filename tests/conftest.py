"""Shared test helpers: run the real CLI entry point in-process."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from evalkit.cli import main


def examples(n: int) -> int:
    """``n`` hypothesis examples, or a few in the edit-test loop (``make unit-fast`` sets
    ``EVALKIT_FEW_EXAMPLES``): the invariants run on every edit, in full under ``make test``."""
    return min(n, 6) if os.environ.get("EVALKIT_FEW_EXAMPLES") else n


# No test asserts a wall time: hypothesis' default 200 ms deadline per example
# fails on a loaded machine (the suite shares its cores), so it is off everywhere.
settings.register_profile("evalkit", deadline=None)
settings.load_profile("evalkit")

# Session-scoped tiny models for the model commands (built only when a test asks).
pytest_plugins = ["model_fixtures"]

ROOT = Path(__file__).resolve().parents[1]
TICKETS = ROOT / "examples" / "tickets" / "tickets.jsonl"


@dataclass(frozen=True)
class CliResult:
    """Exit code and captured output of one ``evalkit`` run."""

    exit_code: int
    stdout: str
    stderr: str


@pytest.fixture
def run_cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., CliResult]:
    """Call ``evalkit`` like the console script does (error handling, exit codes)."""

    def run(*args: object) -> CliResult:
        capsys.readouterr()
        with pytest.raises(SystemExit) as done:
            main([str(arg) for arg in args])
        captured = capsys.readouterr()
        code = done.value.code
        return CliResult(code if isinstance(code, int) else 0, captured.out, captured.err)

    return run


def assert_one_line_error(result: CliResult, *fragments: str) -> None:
    """A bad-input failure: exit 2, one line on stderr, no traceback, naming the fragments."""
    assert result.exit_code == 2, (result.exit_code, result.stdout, result.stderr)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])


@pytest.fixture(scope="session")
def peft_adapters(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Adapter folders written once per session by peft itself (see tests/peft_adapters.py)."""
    from peft_adapters import build_adapters

    return build_adapters(tmp_path_factory.mktemp("peft"))


RAY_TESTS = ("test_engine_ray.py::", "test_engine_ray_cluster.py::")


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist, when it is installed
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Under ``--dist loadgroup`` (make test), run the Ray tests on one worker: one cluster.

    pytest-xdist groups ``xdist_group`` tests by renaming their node ids, which
    pytest 9 ignores (each worker would start its own cluster), so the Ray
    tests' scope is given here by their file; every other test is scheduled as
    loadgroup schedules it.
    """
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    class RayTogether(LoadGroupScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            ray = any(name in nodeid for name in RAY_TESTS)
            return "ray" if ray else str(super()._split_scope(nodeid))

    return RayTogether(config, log)


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[None]:
    """One local Ray cluster for the test session (tests marked ``ray`` use it)."""
    import logging
    import shutil
    import tempfile

    ray = pytest.importorskip("ray")
    # Ray would replace builtins.print in this process once a worker's message shows here
    # (a worker killed on purpose does), and tests that pickle print would see Ray's.
    os.environ["RAY_TQDM_PATCH_PRINT"] = "0"
    if ray.is_initialized():
        yield
        return
    folder = tempfile.mkdtemp(prefix="ek-ray-")  # short: Ray's socket paths are limited
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        object_store_memory=400 << 20,
        logging_level=logging.ERROR,
        log_to_driver=False,
        _temp_dir=folder,
    )
    try:
        yield
    finally:
        ray.shutdown()
        shutil.rmtree(folder, ignore_errors=True)
