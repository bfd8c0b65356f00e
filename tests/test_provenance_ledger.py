"""The test-set ledger: looks, states, the hash chain, and ``score`` / ``evalkit ledger``."""

from __future__ import annotations

import json
import math
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace

import polars as pl
import pytest
from conftest import assert_one_line_error

from evalkit.provenance.ledger import LEDGER_NAME, append_look, line_sha256
from evalkit.provenance.ledger_head import head_path
from evalkit.provenance.ledger_state import read_ledger, resolve_ledger, selection_bias_se

ROOT = Path(__file__).resolve().parents[1]
TRIAGE = ROOT / "contracts" / "ticket-triage.yaml"
START = datetime(2026, 1, 1, tzinfo=UTC)
GOLD = "9" * 64


def summary(predictions: str, version: int = 1, gold: str = GOLD, card: object = None):
    normalized = {"name": "c", "version": version, "gate": {"min_content_accuracy": 0.5}}
    return SimpleNamespace(
        gold=SimpleNamespace(sha256=gold, path="split/test.parquet"),
        contract=SimpleNamespace(
            name="c", version=version, fingerprint=f"sha256:{version}", normalized=normalized
        ),
        name=predictions,
        predictions=SimpleNamespace(sha256=predictions),
        card=card,
        evalkit_version="0.1.0",
    )


def look(ledger: Path, predictions: str, minute: int, **options) -> tuple[dict, int, bool]:
    appended = append_look(
        ledger, summary(predictions, **options), now=START + timedelta(minutes=minute)
    )
    return appended.entry, appended.looks, appended.new_look


def state(ledger: Path) -> str:
    return read_ledger(ledger).gold[GOLD].state


def test_states_after_one_two_to_four_and_five_looks(tmp_path) -> None:
    ledger = tmp_path / LEDGER_NAME
    expected = {1: "seen", 2: "reused", 3: "reused", 4: "reused", 5: "burned", 6: "burned"}
    for n, name in expected.items():
        _, looks, new = look(ledger, f"pred{n}", n)
        assert (looks, new) == (n, True)
        report = read_ledger(ledger)
        gold = report.gold[GOLD]
        assert (gold.looks, gold.state) == (n, name), n
        assert gold.selection_bias_se == pytest.approx(
            math.sqrt(2) / math.pi * math.sqrt(n) if n >= 2 else 0.0
        )
    assert report.chain_intact
    assert "6 looks" in report.gold[GOLD].reasons[0]


def test_rescoring_the_same_predictions_adds_a_line_but_no_look(tmp_path) -> None:
    ledger = tmp_path / LEDGER_NAME
    look(ledger, "a", 0)
    _, looks, new = look(ledger, "a", 1)
    assert (looks, new) == (1, False)
    gold = read_ledger(ledger).gold[GOLD]
    assert (gold.lines, gold.looks, gold.state) == (2, 1, "seen")
    entry, _, _ = look(ledger, "a", 2, card=SimpleNamespace(weights_sha256="w"))  # now carded
    assert entry["card_weights_sha256"] == "w"
    assert read_ledger(ledger).gold[GOLD].looks == 1  # the same outputs: no new look


def test_a_contract_change_after_a_look_burns_the_test(tmp_path) -> None:
    ledger = tmp_path / LEDGER_NAME
    look(ledger, "a", 0)
    look(ledger, "a", 1, version=2)
    gold = read_ledger(ledger).gold[GOLD]
    assert gold.state == "burned" and gold.looks == 2
    assert [c.version for c in gold.contracts] == [1, 2]
    assert "the rules changed after the test was seen" in gold.reasons[0]
    assert gold.contracts[1].first_seen == "2026-01-01T00:01:00Z"


@pytest.mark.parametrize("edit", ["value", "delete_first", "delete_middle", "not_json", "last"])
def test_an_edited_or_removed_line_breaks_the_chain_and_burns(tmp_path, edit) -> None:
    ledger = tmp_path / LEDGER_NAME
    for n in range(3):
        look(ledger, f"p{n}", n)
    assert state(ledger) == "reused"
    lines = ledger.read_text().splitlines()
    if edit == "value":
        lines[1] = lines[1].replace('"p1"', '"p9"')
    elif edit == "delete_first":
        del lines[0]
    elif edit == "delete_middle":
        del lines[1]
    elif edit == "not_json":
        lines[1] = lines[1][:-3]
    else:  # the last line: no later line covers it, its own sha256 does
        entry = json.loads(lines[2])
        entry["time"] = "2020-01-01T00:00:00Z"
        lines[2] = json.dumps(entry)
    ledger.write_text("\n".join(lines) + "\n")
    report = read_ledger(ledger)
    assert not report.chain_intact
    assert report.gold[GOLD].state == "burned"
    assert "chain is broken" in report.gold[GOLD].reasons[0]


def test_lines_are_chained_by_the_previous_lines_bytes(tmp_path) -> None:
    ledger = tmp_path / LEDGER_NAME
    first, _, _ = look(ledger, "a", 0)
    second, _, _ = look(ledger, "b", 1)
    raw = ledger.read_bytes().split(b"\n")
    import hashlib

    assert first["prev_sha256"] is None
    assert second["prev_sha256"] == hashlib.sha256(raw[0]).hexdigest()
    assert second["sha256"] == line_sha256(json.loads(raw[1]))
    required = {"time", "gold_sha256", "contract", "name", "predictions_sha256"}
    required |= {"card_weights_sha256", "evalkit_version", "purpose", "prev_sha256"}
    assert set(first) >= required


def test_gold_files_are_kept_apart(tmp_path) -> None:
    ledger = tmp_path / LEDGER_NAME
    look(ledger, "a", 0)
    look(ledger, "b", 1, gold="8" * 64)
    report = read_ledger(ledger)
    assert {sha: g.looks for sha, g in report.gold.items()} == {GOLD: 1, "8" * 64: 1}
    assert read_ledger(ledger, "7" * 64).gold["7" * 64].state == "fresh"


def test_selection_bias_is_zero_below_two_looks() -> None:
    assert selection_bias_se(1) == 0.0
    assert selection_bias_se(4) == pytest.approx(0.9003, abs=1e-4)


def _gold_and_predictions(folder: Path, n_predictions: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    pl.DataFrame({
        "ticket_id": [f"T{i}" for i in range(10)],
        "category": ["billing"] * 10, "priority": ["low"] * 10,
        "order_id": [None] * 10, "amount": [None] * 10,
    }, schema_overrides={"order_id": pl.String, "amount": pl.Float64}).write_parquet(
        folder / "test.parquet")  # fmt: skip
    good = {"category": "billing", "priority": "low", "order_id": None, "amount": None}
    for k in range(n_predictions):
        rows = [{"ticket_id": f"T{i}", "output": json.dumps(good if i >= k else {})}
                for i in range(10)]  # fmt: skip
        (folder / f"p{k}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


def test_score_appends_and_evalkit_ledger_reports(run_cli, tmp_path) -> None:
    data = _gold_and_predictions(tmp_path / "split", 3)
    for k in range(3):
        scored = run_cli("score", "--contract", TRIAGE, "--gold", data / "test.parquet",
                         "--pred", data / f"p{k}.jsonl", "--out", tmp_path / f"r{k}")  # fmt: skip
        assert scored.exit_code == 0, scored.stderr
        assert f"ledger: look {k + 1} at this gold file, recorded in" in scored.stdout
    again = run_cli("score", "--contract", TRIAGE, "--gold", data / "test.parquet", "--pred",
                    data / "p0.jsonl", "--out", tmp_path / "r0", "--force")  # fmt: skip
    assert "so no new look (3 at this gold file, in" in again.stdout
    summary_data = json.loads((tmp_path / "r0" / "summary.json").read_text())
    assert summary_data["ledger"] == str(data / LEDGER_NAME)
    report = run_cli("ledger", data / "test.parquet")
    assert report.exit_code == 0, report.stderr
    assert "state      reused: 3 looks (3 candidates, 4 scores)" in report.stdout
    assert "up to 0.78 standard errors (0.45·√3)" in report.stdout
    as_json = run_cli("ledger", data, "--json", tmp_path / "ledger.json")
    assert as_json.exit_code == 0
    written = json.loads((tmp_path / "ledger.json").read_text())
    (gold,) = written["gold"].values()
    assert (gold["looks"], gold["candidates"], gold["state"]) == (3, 3, "reused")
    assert [c["version"] for c in gold["contracts"]] == [1]


def test_no_ledger_and_an_explicit_ledger(run_cli, tmp_path) -> None:
    data = _gold_and_predictions(tmp_path / "split", 1)
    common = ["score", "--contract", TRIAGE, "--gold", data / "test.parquet",
              "--pred", data / "p0.jsonl"]  # fmt: skip
    assert run_cli(*common, "--out", tmp_path / "a", "--no-ledger").exit_code == 0
    assert not (data / LEDGER_NAME).exists()
    kept = tmp_path / "kept" / "looks.jsonl"
    kept.parent.mkdir()
    assert run_cli(*common, "--out", tmp_path / "b", "--ledger", kept).exit_code == 0
    assert resolve_ledger(kept) == (kept, None) and read_ledger(kept).lines == 1
    assert_one_line_error(
        run_cli(*common, "--out", tmp_path / "c", "--ledger", tmp_path / "no" / "x.jsonl"),
        "cannot write the ledger there",
    )
    assert_one_line_error(
        run_cli(*common, "--out", tmp_path / "d", "--ledger", kept, "--no-ledger"),
        "not both",
    )


def test_an_unwritable_gold_folder_warns_and_scores(run_cli, tmp_path, monkeypatch) -> None:
    data = _gold_and_predictions(tmp_path / "split", 1)
    monkeypatch.setattr("evalkit.provenance.ledger.writable", lambda path: False)
    result = run_cli("score", "--contract", TRIAGE, "--gold", data / "test.parquet",
                     "--pred", data / "p0.jsonl", "--out", tmp_path / "out")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert "is not writable, so this look" in result.stderr and "goes unrecorded" in result.stderr
    assert not (data / LEDGER_NAME).exists()
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["ledger"] is None


def test_ledger_command_errors(run_cli, tmp_path) -> None:
    assert_one_line_error(run_cli("ledger", tmp_path), "no such ledger")
    assert_one_line_error(run_cli("ledger", tmp_path / "x" / LEDGER_NAME), "no such ledger")


def test_two_branches_appends_joined_by_a_union_merge_keep_the_chain(tmp_path) -> None:
    ledger = tmp_path / LEDGER_NAME
    look(ledger, "a", 0)
    common = ledger.read_bytes()
    branch = tmp_path / "branch" / LEDGER_NAME  # the other branch's checkout: both files
    branch.parent.mkdir()
    shutil.copy(ledger, branch)
    shutil.copy(head_path(ledger), head_path(branch))
    look(ledger, "b", 1)  # main appends
    look(branch, "c", 2)  # another branch appends to the same history
    joined = common + ledger.read_bytes()[len(common) :] + branch.read_bytes()[len(common) :]
    ledger.write_bytes(joined)  # what git's merge=union gives
    report = read_ledger(ledger)  # the head is ours (line 2, b): the merged file holds it
    assert report.chain_intact, report.chain_problems
    assert report.gold[GOLD].looks == 3
    shutil.copy(head_path(branch), head_path(ledger))  # theirs: c, now line 3, later is fine
    assert read_ledger(ledger).chain_intact
    ours = head_path(ledger).read_bytes()
    head_path(ledger).write_bytes(ours + head_path(branch).read_bytes())  # merge=union: both
    report = read_ledger(ledger)
    assert report.chain_intact and report.head is not None and report.head.tips == 2
    ledger.write_bytes(joined[: len(joined) - len(branch.read_bytes()) + len(common)])
    assert "were cut" in read_ledger(ledger).chain_problems[0]  # their look lost: seen
    ledger.write_bytes(joined)
    look(ledger, "d", 3)
    report = read_ledger(ledger)
    assert report.chain_intact and report.head is not None and report.head.lines == 4


def test_scoring_under_a_new_contract_version_burns_the_test(run_cli, tmp_path) -> None:
    data = _gold_and_predictions(tmp_path / "split", 1)
    version_two = tmp_path / "v2.yaml"
    version_two.write_text(TRIAGE.read_text().replace("version: 1", "version: 2", 1))
    for contract, out in ((TRIAGE, "a"), (version_two, "b")):
        result = run_cli("score", "--contract", contract, "--gold", data / "test.parquet",
                         "--pred", data / "p0.jsonl", "--out", tmp_path / out)  # fmt: skip
        assert result.exit_code == 0, result.stderr
    report = run_cli("ledger", data / "test.parquet")
    assert "state      burned: 2 looks (1 candidate, 2 scores); contract ticket-triage v2" in (
        report.stdout
    )
    assert "to do      freeze a new test split" in report.stdout


@pytest.mark.parametrize(
    "content",
    [
        b"hello world\nnot json\n",
        b"a,b\n1,2\n",
        b"[1, 2]\n",
        b'{"gold_sha256": 5}\n',
        b"\xff\xfe\n",
    ],
)
def test_a_file_with_no_ledger_line_is_not_a_ledger(run_cli, tmp_path, content) -> None:
    ledger = tmp_path / LEDGER_NAME
    ledger.write_bytes(content)
    assert_one_line_error(
        run_cli("ledger", tmp_path), f"{ledger}: not a test-set ledger: no line of it is one"
    )


@pytest.mark.parametrize(
    "field",
    [("contract", "c"), ("contract", {"version": "1"}), ("predictions_sha256", 5),
     ("contract", {"version": 1, "fingerprint": {"a": 1}}), ("prev_sha256", [1])],
)  # fmt: skip
def test_a_line_of_the_wrong_shape_breaks_the_chain_without_a_crash(tmp_path, field) -> None:
    ledger = tmp_path / LEDGER_NAME
    for n in range(3):
        look(ledger, f"p{n}", n)
    lines = ledger.read_text().splitlines()
    entry = json.loads(lines[1])
    entry[field[0]] = field[1]
    lines[1] = json.dumps(entry)
    ledger.write_text("\n".join(lines) + "\n")
    report = read_ledger(ledger)
    assert "line 2 is not a ledger line" in report.chain_problems
    assert report.gold[GOLD].state == "burned"
    _, looks, new = look(ledger, "p9", 9)  # appending reads the lines too
    assert new and looks == 3
    from evalkit.provenance.ledger_read import scan_ledger

    readable = {entry["predictions_sha256"] for entry in scan_ledger(ledger).valid}
    assert "p9" in readable and "p1" not in readable


def test_score_never_appends_to_a_file_that_is_not_a_ledger(run_cli, tmp_path) -> None:
    data = _gold_and_predictions(tmp_path / "split", 1)
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    result = run_cli("score", "--contract", TRIAGE, "--gold", data / "test.parquet", "--pred",
                     data / "p0.jsonl", "--out", tmp_path / "out", "--ledger", notes)  # fmt: skip
    assert_one_line_error(result, f"{notes}: not a test-set ledger", "--no-ledger")
    assert notes.read_text() == "my notes\n" and not (tmp_path / "out").exists()
    (data / LEDGER_NAME).write_text("not a ledger\n")  # the default place, taken by something else
    result = run_cli("score", "--contract", TRIAGE, "--gold", data / "test.parquet", "--pred",
                     data / "p0.jsonl", "--out", tmp_path / "out")  # fmt: skip
    assert_one_line_error(result, f"{data / LEDGER_NAME}: not a test-set ledger")
    assert (data / LEDGER_NAME).read_text() == "not a ledger\n"


def test_a_file_that_is_neither_ledger_nor_scored_gold_is_named(run_cli, tmp_path) -> None:
    other = tmp_path / "table.csv"
    other.write_text("a,b\n1,2\n")
    assert_one_line_error(
        run_cli("ledger", other), f"{other}: not a ledger, and as a gold file it has no"
    )
