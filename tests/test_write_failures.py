"""A write the operating system refuses: exit 2, one line, nothing half-written.

Real refusals come from a child process with a file-size limit
(RLIMIT_FSIZE, SIGXFSZ ignored, so a write past it fails with EFBIG as a
full disk fails with ENOSPC): every writer path is exercised as it runs,
Python's own writes and polars' Rust writers alike. Other errors (no space
left, a failed fsync or rename) are injected in-process.
"""

from __future__ import annotations

import errno
import json
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from evalkit.errors import WriteFailed
from evalkit.io import _writes as evalkit_io
from evalkit.io import atomic_directory, atomic_write_bytes, write_table

ROOT = Path(__file__).resolve().parents[1]
CONTRACT = ROOT / "contracts" / "ticket-triage.yaml"


def _limited(limit_bytes: int):
    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit_bytes, limit_bytes))

    return apply


def _evalkit(*args: object, limit_bytes: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evalkit", *map(str, args)],
        capture_output=True,
        text=True,
        preexec_fn=_limited(limit_bytes),
        cwd=ROOT,
        check=False,
    )


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def _one_line_write_error(completed: subprocess.CompletedProcess[str], *fragments: str) -> None:
    assert completed.returncode == 2, (completed.returncode, completed.stderr)
    lines = [line for line in completed.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, completed.stderr
    assert "Traceback" not in completed.stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])


def _gold_and_predictions(folder: Path) -> tuple[Path, Path]:
    gold, pred = folder / "gold" / "test.jsonl", folder / "pred.jsonl"
    gold.parent.mkdir(parents=True)
    rows = [{"ticket_id": f"t{i:03d}", "category": "billing", "priority": "low",
             "order_id": None, "amount": None} for i in range(200)]  # fmt: skip
    gold.write_text("".join(json.dumps(row) + "\n" for row in rows))
    answer = json.dumps({"category": "billing", "priority": "low"})
    pred.write_text("".join(json.dumps({"ticket_id": r["ticket_id"], "output": answer}) + "\n"
                            for r in rows))  # fmt: skip
    return gold, pred


def test_score_on_a_full_disk_leaves_no_result_and_keeps_the_old_one(tmp_path: Path) -> None:
    gold, pred = _gold_and_predictions(tmp_path)
    out = tmp_path / "result"
    score = ["score", "--contract", CONTRACT, "--gold", gold, "--pred", pred, "--out", out,
             "--no-ledger", "--quiet"]  # fmt: skip
    completed = _evalkit(*score, limit_bytes=4096)
    _one_line_write_error(
        completed, str(out), "cannot write (File too large)", "nothing was written"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gold", "pred.jsonl"]
    # An earlier result replaced with --force survives a failed write as it was.
    assert _evalkit(*score, limit_bytes=resource.RLIM_INFINITY).returncode == 0
    before = _tree(out)
    completed = _evalkit(*score, "--force", limit_bytes=4096)
    _one_line_write_error(completed, "cannot write (File too large)")
    assert _tree(out) == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_split_on_a_full_disk_names_the_output_not_a_temporary(tmp_path: Path) -> None:
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps({"id": i, "g": i % 40, "text": "word " * 30}) + "\n"
                            for i in range(400)))  # fmt: skip
    out = tmp_path / "split"
    completed = _evalkit("split", data, "--out", out, "--group", "g", "--id", "id",
                         "--sizes", "300,100", "--names", "a,b", limit_bytes=1500)  # fmt: skip
    _one_line_write_error(completed, "cannot write (File too large)", str(out))
    assert ".tmp" not in completed.stderr
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.jsonl"]


def test_a_report_file_on_a_full_disk(tmp_path: Path) -> None:
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps({"id": i, "text": f"ticket {i} " * 20}) + "\n"
                            for i in range(200)))  # fmt: skip
    report = tmp_path / "audit.json"
    completed = _evalkit("audit", data, data.with_name("other.jsonl"), "--id", "id",
                         "--text", "text", "--json", report, limit_bytes=20_000)  # fmt: skip
    # other.jsonl does not exist: bad input, and still nothing written
    assert completed.returncode == 2 and not report.exists()
    data.with_name("other.jsonl").write_text(data.read_text().replace('"id": ', '"id": 1000'))
    completed = _evalkit("audit", data, data.with_name("other.jsonl"), "--id", "id",
                         "--text", "text", "--json", report, limit_bytes=20_000)  # fmt: skip
    _one_line_write_error(completed, str(report), "cannot write")
    assert not report.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


class _FullDisk:
    """A file object that takes ``room`` bytes, then fails as a full disk does."""

    def __init__(self, stream, room: int) -> None:
        self._stream, self._room = stream, room

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self._stream.close()

    def write(self, data: bytes) -> int:
        self._stream.write(data[: self._room])
        self._stream.flush()
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


def test_no_space_left_is_one_line_and_leaves_nothing(tmp_path: Path, monkeypatch) -> None:
    real_fdopen = os.fdopen
    monkeypatch.setattr(
        evalkit_io.os, "fdopen", lambda fd, mode: _FullDisk(real_fdopen(fd, mode), 5)
    )
    target = tmp_path / "report.json"
    with pytest.raises(WriteFailed) as raised:
        atomic_write_bytes(target, b'{"a": "half of this is written"}')
    assert raised.value.message == (
        f"{target}: cannot write (No space left on device); nothing was written: "
        "free some space or write elsewhere"
    )
    assert list(tmp_path.iterdir()) == []


def test_an_existing_file_survives_a_failed_rewrite(tmp_path: Path, monkeypatch) -> None:
    target = tmp_path / "report.json"
    target.write_bytes(b"old")

    def failing_fsync(descriptor: int) -> None:
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    monkeypatch.setattr(evalkit_io.os, "fsync", failing_fsync)
    with pytest.raises(WriteFailed, match="Input/output error"):
        atomic_write_bytes(target, b"new")
    with pytest.raises(WriteFailed, match="Input/output error"):
        write_table(pl.DataFrame({"a": [1]}), tmp_path / "t.parquet")
    assert target.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json"]


def test_a_failed_rename_puts_the_old_folder_back(tmp_path: Path, monkeypatch) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "manifest.json").write_text("old")
    real_replace = os.replace

    def replace(source, destination) -> None:
        if Path(source).name.endswith(".tmp") and Path(destination) == out:
            raise OSError(errno.EACCES, os.strerror(errno.EACCES))
        real_replace(source, destination)

    monkeypatch.setattr(evalkit_io.os, "replace", replace)
    refused = pytest.raises(WriteFailed, match="the folder is not writable")
    with refused, atomic_directory(out, True, marker="manifest.json") as staging:
        (staging / "manifest.json").write_text("new")
    assert (out / "manifest.json").read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_outputs_reach_the_disk_before_they_are_renamed(tmp_path: Path, monkeypatch) -> None:
    events: list[str] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(descriptor: int) -> None:
        events.append("fsync")
        real_fsync(descriptor)

    def replace(source, destination) -> None:
        events.append(f"replace {Path(destination).name}")
        real_replace(source, destination)

    monkeypatch.setattr(evalkit_io.os, "fsync", fsync)
    monkeypatch.setattr(evalkit_io.os, "replace", replace)
    atomic_write_bytes(tmp_path / "a.json", b"{}")
    assert events[:2] == ["fsync", "replace a.json"]
    events.clear()
    write_table(pl.DataFrame({"a": [1]}), tmp_path / "t.parquet")
    assert events[:2] == ["fsync", "replace t.parquet"]
    events.clear()
    with atomic_directory(tmp_path / "folder", False) as staging:
        (staging / "x.json").write_text("{}")
        (staging / "y.json").write_text("{}")
    published = events.index("replace folder")
    assert events[:published].count("fsync") >= 3  # both files, then the folder


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs Linux's /dev/full")
@pytest.mark.parametrize("args", [["contract", "schema"], ["contract", "check", CONTRACT]])
def test_stdout_on_a_full_disk_is_exit_2(args: list[object]) -> None:
    with open("/dev/full", "w") as full:
        completed = subprocess.run(
            [sys.executable, "-m", "evalkit", *map(str, args)],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            check=False,
        )
    _one_line_write_error(completed, "No space left on device")
