"""``evalkit score`` on the command line: report, files, every bad input, hostile outputs."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from conftest import assert_one_line_error

ROOT = Path(__file__).resolve().parents[1]
TRIAGE = ROOT / "contracts" / "ticket-triage.yaml"
GOOD = {"category": "billing", "priority": "low", "order_id": None, "amount": None}


@pytest.fixture
def files(tmp_path: Path) -> Path:
    gold = pl.DataFrame({
        "ticket_id": [f"T{i}" for i in range(1, 11)],
        "category": ["billing"] * 8 + ["legal_threat"] * 2,
        "priority": ["low"] * 10,
        "order_id": [None] * 10,
        "amount": [None] * 10,
    }, schema_overrides={"order_id": pl.String, "amount": pl.Float64})  # fmt: skip
    gold.write_parquet(tmp_path / "gold.parquet")
    rows = [{"ticket_id": f"T{i}", "output": json.dumps(GOOD)} for i in range(1, 10)]
    (tmp_path / "pred.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return tmp_path


def args(files: Path, *extra: object) -> list[object]:
    return ["score", "--contract", TRIAGE, "--gold", files / "gold.parquet",
            "--pred", files / "pred.jsonl", "--out", files / "out", *extra]  # fmt: skip


def test_score_prints_a_summary_and_writes_both_files(run_cli, files: Path) -> None:
    result = run_cli(*args(files))
    assert result.exit_code == 0, result.stderr
    assert "scored pred: 10 gold items, 9 predictions (jsonl)" in result.stdout
    assert "overall            n=10     format 0.900  accuracy 0.800" in result.stdout
    assert any(
        line.split() == ["missing", "1", "e.g.", "T10"] for line in result.stdout.splitlines()
    )
    assert "legal_threat (rare)" in result.stdout
    assert sorted(p.name for p in (files / "out").iterdir()) == [
        "examples.parquet",
        "report.html",
        "summary.json",
    ]
    summary = json.loads((files / "out" / "summary.json").read_text())
    assert summary["overall"]["content_correct"] == 8
    quiet = run_cli(*args(files, "--force", "--quiet", "--name", "b"))
    assert quiet.exit_code == 0 and quiet.stdout.strip() == str(files / "out")
    assert json.loads((files / "out" / "summary.json").read_text())["name"] == "b"


def test_existing_output_needs_force(run_cli, files: Path) -> None:
    (files / "out").mkdir()
    (files / "out" / "keep.txt").write_text("x")
    assert_one_line_error(run_cli(*args(files)), "exists already; pass --force")
    assert (files / "out" / "keep.txt").exists()


def test_corrupt_predictions_line_is_named(run_cli, files: Path) -> None:
    with (files / "pred.jsonl").open("a") as handle:
        handle.write('{"ticket_id": "T10", "output": \n')
    assert_one_line_error(run_cli(*args(files)), "pred.jsonl:10: not a JSON object")
    assert not (files / "out").exists()


def test_unknown_contract_key_is_named(run_cli, files: Path, tmp_path: Path) -> None:
    contract = tmp_path / "c.yaml"
    contract.write_text(TRIAGE.read_text().replace("rare: {max_support: 10}", "rare: {max: 10}"))
    result = run_cli(*args(files)[:2], contract, *args(files)[3:])
    assert_one_line_error(result, "unknown key 'rare.max'", "allowed there are: max_support")


def test_field_naming_a_missing_gold_column(run_cli, files: Path, tmp_path: Path) -> None:
    contract = tmp_path / "c.yaml"
    contract.write_text(TRIAGE.read_text().replace("{gold: amount,", "{gold: refund_amount,"))
    result = run_cli(*args(files)[:2], contract, *args(files)[3:])
    assert_one_line_error(
        result, "gold.parquet: no column 'refund_amount', named by fields.amount.gold",
        "the columns are: ticket_id, category",
    )  # fmt: skip


def test_invalid_json_schema(run_cli, files: Path, tmp_path: Path) -> None:
    contract = tmp_path / "c.yaml"
    contract.write_text(TRIAGE.read_text().replace("minimum: 0", "minimum: zero"))
    result = run_cli(*args(files)[:2], contract, *args(files)[3:])
    assert_one_line_error(result, "output.schema: at schema.properties.amount.minimum")


def test_missing_id_column(run_cli, files: Path) -> None:
    (files / "pred.jsonl").write_text('{"id": "T1", "output": "{}"}\n')
    assert_one_line_error(run_cli(*args(files)), "pred.jsonl", "'ticket_id'", "--id")
    gold = pl.read_parquet(files / "gold.parquet").rename({"ticket_id": "tid"})
    gold.write_parquet(files / "gold.parquet")
    assert_one_line_error(run_cli(*args(files)), "no column 'ticket_id', named by id")


def test_duplicate_ids_and_other_bad_input(run_cli, files: Path) -> None:
    with (files / "pred.jsonl").open("a") as handle:
        handle.write(json.dumps({"ticket_id": "T1", "output": "{}"}) + "\n")
    assert_one_line_error(run_cli(*args(files)), "id 'T1' has 2 predictions", "--on-duplicate")
    assert run_cli(*args(files, "--on-duplicate", "last")).exit_code == 0
    (files / "pred.txt").write_text("x")
    bad_ext = args(files, "--force")
    bad_ext[6] = files / "pred.txt"
    assert_one_line_error(run_cli(*bad_ext), "cannot tell the predictions format", "--pred-format")
    bad_ext[6] = files / "nope.jsonl"
    assert_one_line_error(run_cli(*bad_ext), "nope.jsonl: no such file")
    gold = pl.read_parquet(files / "gold.parquet")
    pl.concat([gold, gold.head(1)]).write_parquet(files / "gold.parquet")
    result = run_cli(*args(files, "--force", "--on-duplicate", "last"))
    assert_one_line_error(result, "id 'T1' occurs 2 times in the gold")


def test_hostile_outputs_are_scored_not_fatal(run_cli, files: Path) -> None:
    hostile = {
        "T1": ("x" * 10_000_000, "no_json"),
        "T2": ('{"a":' * 100_000 + "1" + "}" * 100_000, "invalid_json"),
        "T3": (None, "invalid_json"),  # raw invalid UTF-8, written below
        "T4": ('{"category": "billing", "priority": "low", "amount": NaN}', "invalid_json"),
        "T5": ('{"category": "billing", "priority": "low", "amount": Infinity}', "invalid_json"),
        "T6": ('[{"category": "billing", "priority": "low"}]', "schema:type"),
        "T7": ("3.5", "schema:type"),
        "T8": ('{"category": "billing", "priority": "low", "priority": "high"}', "invalid_json"),
        "T9": (json.dumps(GOOD), None),
    }
    with (files / "pred.jsonl").open("wb") as handle:
        for key, (text, _) in hostile.items():
            if text is None:
                handle.write(b'{"ticket_id": "T3", "output": "{\\"category\\": \\"\xc3\\"}"}\n')
            else:
                handle.write(json.dumps({"ticket_id": key, "output": text}).encode() + b"\n")
    result = run_cli(*args(files))
    assert result.exit_code == 0, result.stderr
    examples = pl.read_parquet(files / "out" / "examples.parquet")
    verdicts = dict(zip(examples["id"], examples["error"], strict=True))
    for key, (_, expected) in hostile.items():
        assert verdicts[key] == expected, key
    assert verdicts["T10"] == "missing"
