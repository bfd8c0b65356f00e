"""The ledger is the record: attacks on it, each as a user or a crash would make it.

Every test here reproduces a way the count of looks was lost or bypassed
(it failed before the ledger had a head, recorded looks and content
identity) through the commands people run: ``score``, ``gate``, ``ledger``.
The statistical rules pass for every result (the predictions are the same
good outputs written with different whitespace), so only the test set's
state decides the gate.
"""

from __future__ import annotations

import json
import resource
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from conftest import assert_one_line_error

ROOT = Path(__file__).resolve().parents[1]
TRIAGE = ROOT / "contracts" / "ticket-triage.yaml"
GOOD = {"category": "billing", "priority": "low", "order_id": None, "amount": None}
LEDGER, HEAD = "evalkit-ledger.jsonl", "evalkit-ledger.head"


@pytest.fixture
def data(tmp_path) -> Path:
    """A gold split, eight prediction files that differ in bytes only, a fresh-test contract."""
    folder = tmp_path / "split"
    folder.mkdir()
    pl.DataFrame({
        "ticket_id": [f"T{i}" for i in range(12)], "category": ["billing"] * 12,
        "priority": ["low"] * 12, "order_id": [None] * 12, "amount": [12.0 + i for i in range(12)],
    }, schema_overrides={"order_id": pl.String}).write_parquet(folder / "test.parquet")  # fmt: skip
    for k in range(8):
        rows = [{"ticket_id": f"T{i}", "output": json.dumps({**GOOD, "amount": 12.0 + i}) + " " * k}
                for i in range(12)]  # fmt: skip
        (folder / f"p{k}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    text = TRIAGE.read_text().replace("gate:\n", "gate:\n  require_fresh_test: true\n")
    (tmp_path / "fresh.yaml").write_text(text)
    return folder


def score(run_cli, data: Path, k: int, *extra: object, gold: str = "test.parquet") -> Path:
    out = data.parent / "runs" / f"r{k}-{gold}"
    result = run_cli("score", "--contract", data.parent / "fresh.yaml", "--gold", data / gold,
                     "--pred", data / f"p{k}.jsonl", "--out", out, "--name", f"r{k}",
                     *extra)  # fmt: skip
    assert result.exit_code == 0, result.stderr
    return out


def cut_last_lines(ledger: Path, n: int) -> None:
    lines = ledger.read_bytes().splitlines(keepends=True)
    ledger.write_bytes(b"".join(lines[:-n]))


def test_cutting_the_last_lines_still_reads_burned(run_cli, data) -> None:
    runs = [score(run_cli, data, k) for k in range(5)]
    assert run_cli("gate", runs[0], runs[1]).exit_code == 1  # 5 looks: burned
    cut_last_lines(data / LEDGER, 3)  # the looks of r2..r4 removed: "2 looks, reused"
    # The results gated still find their own looks (lines 1 and 2), and yet:
    gate = run_cli("gate", runs[0], runs[1])
    assert gate.exit_code == 1, gate.stdout
    assert "the ledger has 2 lines but its head evalkit-ledger.head records 5" in gate.stdout
    report = run_cli("ledger", data / "test.parquet")
    assert "CHAIN BROKEN" in report.stdout and "state      burned" in report.stdout
    # Scoring again does not heal it: the new line records what it found.
    again = run_cli("score", "--contract", data.parent / "fresh.yaml", "--gold",
                    data / "test.parquet", "--pred", data / "p5.jsonl", "--out",
                    data.parent / "runs" / "r5")  # fmt: skip
    assert again.exit_code == 0, again.stderr
    assert "the last 3 were cut; this look is recorded, and every test set" in again.stderr
    assert "state      burned" in run_cli("ledger", data / "test.parquet").stdout
    assert "appended to a damaged ledger" in run_cli("ledger", data).stdout


def test_cutting_lines_and_rewriting_the_head_is_caught_by_a_later_result(run_cli, data) -> None:
    runs = [score(run_cli, data, k) for k in range(5)]
    ledger = data / LEDGER
    kept = ledger.read_bytes().splitlines(keepends=True)[:2]
    ledger.write_bytes(b"".join(kept))
    import hashlib

    last = hashlib.sha256(kept[-1].rstrip(b"\n")).hexdigest()
    head = {"format": 1, "lines": 2, "last_sha256": last}
    (data / HEAD).write_text(json.dumps(head) + "\n")  # a forger who also rewrites the head
    # Out of reach for the ledger alone (docs/provenance.md says so) ...
    assert "state      reused" in run_cli("ledger", data / "test.parquet").stdout
    # ... but a result whose recorded look is gone reads the test as burned.
    gate = run_cli("gate", runs[0], runs[4])
    assert gate.exit_code == 1, gate.stdout
    assert "the ledger lacks the look of r4 (line 5)" in gate.stdout


@pytest.mark.parametrize("removed", [LEDGER, HEAD])
def test_a_removed_ledger_or_head_reads_burned(run_cli, data, removed) -> None:
    runs = [score(run_cli, data, k) for k in range(2)]
    (data / removed).unlink()
    gate = run_cli("gate", runs[0], runs[1])
    assert gate.exit_code == 1, gate.stdout
    assert "burned" in gate.stdout
    assert "state      burned" in run_cli("ledger", data / "test.parquet").stdout
    assert "CHAIN BROKEN" in run_cli("ledger", data).stdout


def test_a_result_scored_against_another_ledger_is_refused(run_cli, data, tmp_path) -> None:
    runs = [score(run_cli, data, k) for k in range(5)]  # burned
    fresh = tmp_path / "fresh-ledger.jsonl"
    candidate = score(run_cli, data, 6, "--ledger", fresh)  # looks fresh on its own ledger
    refused = run_cli("gate", runs[0], candidate)
    assert_one_line_error(
        refused, "r6-test.parquet/summary.json: its look was recorded in", str(fresh),
        f"but the ledger of its gold file {data / 'test.parquet'} is {data / LEDGER}",
    )  # fmt: skip
    # Editing a result's ledger path is the same attack.
    summary = json.loads((runs[4] / "summary.json").read_text())
    summary["ledger"] = str(fresh)
    (runs[4] / "summary.json").write_text(json.dumps(summary, indent=2))
    assert_one_line_error(run_cli("gate", runs[0], runs[4]), "its look was recorded in")
    # ... and so is --ledger at the gate.
    assert_one_line_error(run_cli("gate", runs[0], runs[1], "--ledger", fresh), f"--ledger {fresh}")


def test_results_that_all_agree_on_a_ledger_elsewhere_are_read_there(run_cli, data, tmp_path):
    kept = tmp_path / "ci-cache" / "looks.jsonl"  # the gold folder has no ledger
    kept.parent.mkdir()
    runs = [score(run_cli, data, k, "--ledger", kept) for k in range(2)]
    assert not (data / LEDGER).exists() and (kept.parent / "looks.head").is_file()
    gate = run_cli("gate", runs[0], runs[1], "--json", tmp_path / "g.json")
    assert gate.exit_code == 0, gate.stdout
    state = json.loads((tmp_path / "g.json").read_text())["test_set"]
    assert (state["ledger"], state["state"], state["looks"]) == (str(kept), "reused", 2)
    other = tmp_path / "other.jsonl"
    runs.append(score(run_cli, data, 2, "--ledger", other))
    assert_one_line_error(run_cli("gate", runs[0], runs[2]), "in different ledgers")


def test_the_same_rows_re_encoded_add_to_the_same_count(run_cli, data) -> None:
    runs = [score(run_cli, data, k) for k in range(3)]
    pl.read_parquet(data / "test.parquet").sample(fraction=1.0, shuffle=True, seed=1).write_ndjson(
        data / "test.jsonl"
    )  # the same rows, another encoding and order
    again = [score(run_cli, data, k, gold="test.jsonl") for k in range(3, 5)]
    report = run_cli("ledger", data / "test.jsonl")
    assert "state      burned: 5 looks (5 candidates, 5 scores)" in report.stdout, report.stdout
    assert "same rows  as gold sha256" in report.stdout
    gate = run_cli("gate", again[0], again[1])
    assert gate.exit_code == 1 and "the test set is burned (5 looks" in gate.stdout
    assert run_cli("gate", runs[0], runs[1]).exit_code == 1  # the Parquet side too
    # Scoring the JSONL copy with predictions already looked at adds no look.
    repeat = run_cli("score", "--contract", data.parent / "fresh.yaml", "--gold",
                     data / "test.jsonl", "--pred", data / "p0.jsonl", "--out",
                     data.parent / "again")  # fmt: skip
    assert "so no new look (5 at this gold file" in repeat.stdout


def test_a_look_is_recorded_before_its_result_is_published(run_cli, data, monkeypatch) -> None:
    from evalkit.io import _writes

    publish = _writes._publish

    def killed(temporary, path, directory=False):  # the process dies renaming the folder
        if directory:
            raise KeyboardInterrupt
        publish(temporary, path, directory)  # a file inside the staging folder

    monkeypatch.setattr("evalkit.io._writes._publish", killed)
    result = run_cli("score", "--contract", TRIAGE, "--gold", data / "test.parquet",
                     "--pred", data / "p0.jsonl", "--out", data.parent / "out")  # fmt: skip
    assert result.exit_code == 130
    assert not (data.parent / "out").exists()
    lines = (data / LEDGER).read_text().splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["name"] == "p0"


def _padded_ledger(run_cli, data: Path) -> int:
    """A ledger larger than every file of one result (so a file-size limit hits the ledger)."""
    padding = "x" * 400_000
    run_cli("score", "--contract", TRIAGE, "--gold", data / "test.parquet", "--pred",
            data / "p0.jsonl", "--out", data.parent / "first", "--purpose", padding)  # fmt: skip
    return (data / LEDGER).stat().st_size


def test_a_short_write_on_a_full_disk_leaves_the_ledger_as_it_was(run_cli, data) -> None:
    size = _padded_ledger(run_cli, data)
    before = [(data / name).read_bytes() for name in (LEDGER, HEAD) if (data / name).exists()]

    def limited() -> None:  # the disk fills 100 bytes into the append
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (size + 100, size + 100))

    command = [sys.executable, "-m", "evalkit", "score", "--contract", str(TRIAGE), "--gold",
               str(data / "test.parquet"), "--pred", str(data / "p1.jsonl"), "--out",
               str(data.parent / "second")]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, preexec_fn=limited)
    assert done.returncode == 2, done.stderr
    assert "cannot append the look" in done.stderr and "was not written" in done.stderr
    assert [(data / name).read_bytes() for name in (LEDGER, HEAD) if (data / name).exists()] == (
        before
    )
    assert not (data.parent / "second").exists()
    report = run_cli("ledger", data / "test.parquet")
    assert "chain intact" in report.stdout and "state      seen" in report.stdout


@pytest.mark.slow
def test_twenty_concurrent_scores_give_twenty_chained_lines(data) -> None:
    commands = [
        [sys.executable, "-m", "evalkit", "score", "--contract", str(TRIAGE), "--gold",
         str(data / "test.parquet"), "--pred", str(data / f"p{k % 8}.jsonl"), "--out",
         str(data.parent / "runs" / f"c{k}"), "--quiet"]
        for k in range(20)
    ]  # fmt: skip
    processes = [
        subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for c in commands
    ]
    for process in processes:
        _, stderr = process.communicate(timeout=300)
        assert process.returncode == 0, stderr.decode()
    from evalkit.provenance.ledger_state import read_ledger

    report = read_ledger(data / LEDGER)
    assert report.lines == 20 and report.chain_intact, report.chain_problems
    assert report.head is not None and report.head.lines == 20
    (gold,) = report.gold.values()
    assert (gold.lines, gold.looks) == (20, 8)
    lines = (data / LEDGER).read_text().splitlines()
    looks = [json.loads((data.parent / "runs" / f"c{k}" / "summary.json").read_text())["look"]
             for k in range(20)]  # fmt: skip
    assert sorted(look["line"] for look in looks) == list(range(1, 21))
    for look in looks:
        assert json.loads(lines[look["line"] - 1])["sha256"] == look["sha256"]


def test_a_result_changed_consistently_does_not_match_its_look(run_cli, data) -> None:
    runs = [score(run_cli, data, k) for k in range(2)]
    forged = runs[1]
    examples = pl.read_parquet(forged / "examples.parquet")
    flipped = pl.int_range(pl.len()) == 0  # any change to the verdicts will do
    examples = examples.with_columns(
        pl.when(flipped).then(False).otherwise(pl.col("content_correct")).alias("content_correct")
    )
    examples.write_parquet(forged / "examples.parquet")
    from evalkit.contract.model import Contract
    from evalkit.io import sha256_file
    from evalkit.scoring import aggregate

    summary = json.loads((forged / "summary.json").read_text())
    contract = Contract.model_validate(summary["contract"]["normalized"])
    summary["overall"] = aggregate.rates(examples).model_dump(mode="json")  # a careful forger
    summary["classes"] = {
        label: stats.model_dump(mode="json")
        for label, stats in aggregate.class_stats(examples, contract).items()
    }
    summary["slices"] = {
        name: rates.model_dump(mode="json")
        for name, rates in aggregate.slice_stats(examples, contract).items()
    }
    summary["examples_sha256"] = sha256_file(forged / "examples.parquet")
    (forged / "summary.json").write_text(json.dumps(summary, indent=2))
    assert_one_line_error(
        run_cli("gate", runs[0], forged), f"{forged}: its look (line 2 of",
        "records another examples.parquet", "the result was changed after it was scored",
    )  # fmt: skip


def test_the_ledger_can_be_restored_with_its_head(run_cli, data, tmp_path) -> None:
    # What CI does with a cache or a commit: both files saved and restored together.
    score(run_cli, data, 0)
    saved = tmp_path / "saved"
    saved.mkdir()
    for name in (LEDGER, HEAD):
        shutil.copy(data / name, saved / name)
    score(run_cli, data, 1)
    for name in (LEDGER, HEAD):  # an older state, restored whole: one look fewer, intact
        shutil.copy(saved / name, data / name)
    report = run_cli("ledger", data / "test.parquet")
    assert "chain intact" in report.stdout and "state      seen" in report.stdout
