"""``evalkit`` as a process: exit codes, complete outputs, and profilers that still report.

The console script ends without the interpreter's teardown once a command is
done; these run it as users do (a subprocess) and check what that must keep.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import TICKETS

pytestmark = pytest.mark.slow  # whole evalkit processes, profilers included

SPLIT = ["--group", "conversation_id", "--stratify", "category", "--id", "ticket_id",
         "--sizes", "840,180,180"]  # fmt: skip


def _evalkit(*args: object, **kwargs: object) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "evalkit", *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, **kwargs)  # type: ignore[call-overload,no-any-return]


def test_a_finished_command_has_written_and_printed_everything(tmp_path: Path) -> None:
    done = _evalkit("split", TICKETS, "--out", tmp_path / "out", *SPLIT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("split 1,200 items") and done.stdout.endswith("\n")
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert sum(split["n_items"] for split in manifest["splits"].values()) == 1200
    assert sorted(path.name for path in (tmp_path / "out").iterdir()) == [
        "assignments.parquet", "manifest.json", "test.parquet", "train.parquet", "val.parquet",
    ]  # fmt: skip


def test_exit_codes_and_the_one_line_error(tmp_path: Path) -> None:
    missing = _evalkit("split", tmp_path / "nope.jsonl", "--out", tmp_path / "o", *SPLIT)
    assert missing.returncode == 2
    assert missing.stderr.strip().endswith("no such file") and "Traceback" not in missing.stderr
    assert _evalkit("--version").returncode == 0


def test_a_closed_output_pipe_is_not_an_error(tmp_path: Path) -> None:
    pipeline = f"{sys.executable} -m evalkit contract schema | head -1"
    done = subprocess.run(
        ["bash", "-o", "pipefail", "-c", pipeline], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "{"
    assert done.stderr == ""


def test_a_profiler_still_gets_its_report(tmp_path: Path) -> None:
    profile = tmp_path / "split.prof"
    command = [sys.executable, "-m", "cProfile", "-o", str(profile), "-m", "evalkit", "--version"]
    done = subprocess.run(command, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert profile.stat().st_size > 0
