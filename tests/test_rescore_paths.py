"""Every path a result names is checked as a regular file before it is read or hashed.

``rescore`` reads the gold and predictions files a result recorded. A
hostile or careless ``summary.json`` can name anything there: a FIFO (the
hash would block forever), ``/dev/zero`` (it would never end), or a file
the user may not want hashed into a message (``/etc/passwd``). Issue 32,
H3 and a low finding; each case runs as a process with a deadline, through
the command line and through the library, since a hang is the failure.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

ROOT = Path(__file__).resolve().parents[1]
TRIAGE = ROOT / "contracts" / "ticket-triage.yaml"
GOOD = {"category": "billing", "priority": "low", "order_id": None, "amount": None}
DEADLINE = 60  # seconds: far more than a refusal takes; a hang runs into it


@pytest.fixture
def result(tmp_path: Path, run_cli) -> Path:
    """One result folder scored from a gold split and predictions in ``tmp_path``."""
    gold = pl.DataFrame({
        "ticket_id": [f"T{i}" for i in range(6)], "category": ["billing"] * 6,
        "priority": ["low"] * 6, "order_id": [None] * 6, "amount": [12.0 + i for i in range(6)],
    }, schema_overrides={"order_id": pl.String})  # fmt: skip
    gold.write_parquet(tmp_path / "test.parquet")
    rows = [{"ticket_id": f"T{i}", "output": json.dumps({**GOOD, "amount": 12.0 + i})}
            for i in range(6)]  # fmt: skip
    (tmp_path / "pred.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    folder = tmp_path / "runs" / "r0"
    done = run_cli("score", "--contract", TRIAGE, "--gold", tmp_path / "test.parquet",
                   "--pred", tmp_path / "pred.jsonl", "--out", folder, "--no-ledger")  # fmt: skip
    assert done.exit_code == 0, done.stderr
    return folder


def _name(folder: Path, key: str, path: str) -> None:
    """Edit the result's ``<key>.path`` to ``path`` (the figures stay as they are)."""
    summary = json.loads((folder / "summary.json").read_text())
    summary[key]["path"] = path
    (folder / "summary.json").write_text(json.dumps(summary, indent=2))


LIBRARY = "import evalkit, sys; evalkit.rescore(sys.argv[1], sys.argv[2], out=sys.argv[3])"


def _rescore(folder: Path, how: str) -> subprocess.CompletedProcess[str]:
    out = folder.parent.parent / "rescored"
    command = (
        [sys.executable, "-m", "evalkit", "rescore", str(folder), "--contract", str(TRIAGE),
         "--out", str(out)]
        if how == "cli"
        else [sys.executable, "-c", LIBRARY, str(folder), str(TRIAGE), str(out)]
    )  # fmt: skip
    return subprocess.run(
        command, capture_output=True, text=True, timeout=DEADLINE, cwd=folder.parent.parent
    )


def _special(tmp_path: Path, kind: str) -> str:
    if kind == "fifo":
        fifo = tmp_path / "gold.fifo"
        os.mkfifo(fifo)
        return str(fifo)
    return "/dev/zero"


@pytest.mark.parametrize("how", ["cli", "library"])
@pytest.mark.parametrize("kind", ["fifo", "device"])
@pytest.mark.parametrize("key", ["gold", "predictions"])
def test_a_recorded_fifo_or_device_is_refused_before_it_is_hashed(
    result: Path, tmp_path: Path, how: str, kind: str, key: str
) -> None:
    named = _special(tmp_path, kind)
    _name(result, key, named)
    done = _rescore(result, how)  # before: the gold's hash blocked (FIFO) or never ended
    assert done.returncode == (2 if how == "cli" else 1), done.stderr
    what = "not a regular file"
    if how == "cli":
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
        assert f"{key}.path in summary.json" in lines[0] and named in lines[0], lines[0]
        assert what in lines[0] and str(result) in lines[0], lines[0]
    else:
        assert "evalkit.errors.UnreadableFile" in done.stderr and what in done.stderr
    assert not (tmp_path / "rescored").exists()


@pytest.mark.parametrize("how", ["cli", "library"])
def test_a_recorded_file_that_is_not_the_gold_never_shows_its_hash(
    result: Path, tmp_path: Path, how: str
) -> None:
    secret = tmp_path / "secret.txt"  # what /etc/passwd is in the review's report
    secret.write_text("root:x:0:0:root:/root:/bin/bash\n")
    _name(result, "gold", str(secret))
    done = _rescore(result, how)
    assert done.returncode == (2 if how == "cli" else 1), done.stderr
    if how == "cli":
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and "its sha256 differs" in lines[0], done.stderr
    digest = hashlib.sha256(secret.read_bytes()).hexdigest()
    output = done.stdout + done.stderr
    shown = [digest[i : i + 6] for i in range(len(digest) - 5) if digest[i : i + 6] in output]
    assert shown == [], f"part of the file's sha256 is shown: {shown}"


def test_etc_passwd_as_the_gold_is_one_line_without_its_hash(result: Path) -> None:
    passwd = Path("/etc/passwd")
    if not passwd.is_file():
        pytest.skip("no /etc/passwd on this system")
    _name(result, "gold", str(passwd))
    done = _rescore(result, "cli")
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    digest = hashlib.sha256(passwd.read_bytes()).hexdigest()
    assert not any(digest[i : i + 6] in done.stderr for i in range(len(digest) - 5))
