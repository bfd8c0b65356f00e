"""Outputs never replace inputs: the cases found by trying it, on real command runs.

Each test reproduces one way an output once overwrote an input (the split,
the ledger, a run's pins, a base model's config, a ledger inside a result
folder, two reports on one path) and checks that the input keeps its bytes.
The rules themselves are walked over every command in test_output_paths_walk.py.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from conftest import assert_one_line_error

from evalkit.errors import OutputExists, UsageError
from evalkit.io import CommandFiles, check_new_output
from evalkit.provenance.ledger import LEDGER_NAME

ROOT = Path(__file__).resolve().parents[1]
CONTRACT = ROOT / "contracts" / "ticket-triage.yaml"
MODEL = ROOT / "examples" / "model"


def _write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def _gold(folder: Path) -> Path:
    rows = [
        {"ticket_id": f"t{i}", "category": ["billing", "shipping"][i % 2],
         "priority": "low", "order_id": None, "amount": None}
        for i in range(6)
    ]  # fmt: skip
    return _write_jsonl(folder / "test.jsonl", rows)


def _predictions(path: Path, right: int) -> Path:
    rows = []
    for i in range(6):
        category = ["billing", "shipping"][i % 2] if i < right else "account"
        answer = {"category": category, "priority": "low"}
        rows.append({"ticket_id": f"t{i}", "output": json.dumps(answer)})
    return _write_jsonl(path, rows)


@pytest.fixture
def scored(run_cli, tmp_path: Path) -> dict[str, Path]:
    """A gold file with its ledger and two results scored against it."""
    gold = _gold(tmp_path / "split")
    paths = {"gold": gold, "ledger": gold.parent / LEDGER_NAME}
    for name, right in (("baseline", 5), ("candidate", 6)):
        pred = _predictions(tmp_path / f"{name}.jsonl", right)
        out = tmp_path / "runs" / name
        result = run_cli("score", "--contract", CONTRACT, "--gold", gold, "--pred", pred,
                         "--out", out, "--quiet")  # fmt: skip
        assert result.exit_code == 0, result.stderr
        paths[name] = out
    assert len(paths["ledger"].read_text().splitlines()) == 2
    return paths


def _unchanged(path: Path):
    before = path.read_bytes()
    return lambda: path.read_bytes() == before


def test_audit_json_never_replaces_a_split_file(run_cli, tmp_path: Path) -> None:
    rows = [{"id": i, "g": i, "text": f"ticket number {i}"} for i in range(30)]
    data = _write_jsonl(tmp_path / "data.jsonl", rows)
    split = tmp_path / "split"
    made = run_cli("split", data, "--out", split, "--group", "g", "--id", "id",
                   "--sizes", "20,10", "--names", "train,test", "--quiet")  # fmt: skip
    assert made.exit_code == 0
    train = split / "train.parquet"
    kept = _unchanged(train)
    result = run_cli("audit", split, "--id", "id", "--text", "text", "--json", train, "--force")
    assert_one_line_error(result, str(train), "inside the input folder")
    assert kept()
    result = run_cli("audit", train, split / "test.parquet", "--id", "id", "--text", "text",
                     "--json", train, "--force")  # fmt: skip
    assert_one_line_error(result, "would replace the input")
    assert kept()


def test_ledger_json_never_replaces_the_ledger(run_cli, scored) -> None:
    ledger = scored["ledger"]
    kept = _unchanged(ledger)
    for given in (ledger, ledger.parent, scored["gold"]):
        result = run_cli("ledger", given, "--json", ledger, "--force")
        assert_one_line_error(result, "would replace the input", LEDGER_NAME)
        assert kept()


def test_gate_never_writes_over_the_ledger_or_a_result(run_cli, scored) -> None:
    ledger = scored["ledger"]
    kept = _unchanged(ledger)
    base, cand = scored["baseline"], scored["candidate"]
    for option in ("--markdown", "--junit", "--json", "--html"):
        result = run_cli("gate", base, cand, option, ledger, "--force")
        assert_one_line_error(result, "would replace the input", LEDGER_NAME)
        assert kept()
    summary = _unchanged(cand / "summary.json")
    result = run_cli("gate", base, cand, "--markdown", cand / "summary.json", "--force")
    assert_one_line_error(result, "would replace the input")
    assert summary()
    # The gold file and the predictions a result recorded are inputs too.
    result = run_cli("compare", base, cand, "--out", scored["gold"].parent, "--force")
    assert_one_line_error(result, "would replace the input")
    assert kept()


def test_gate_refuses_two_reports_on_one_path(run_cli, scored, tmp_path: Path) -> None:
    target = tmp_path / "report"
    result = run_cli("gate", scored["baseline"], scored["candidate"],
                     "--junit", target, "--markdown", target)  # fmt: skip
    assert_one_line_error(result, "--junit and --markdown name the same path")
    assert not target.exists()
    target.write_text("mine")
    same = tmp_path / "." / "report"
    result = run_cli("gate", scored["baseline"], scored["candidate"],
                     "--junit", target, "--markdown", same, "--force")  # fmt: skip
    assert_one_line_error(result, "name the same path")
    assert target.read_text() == "mine"


def test_score_never_wipes_a_ledger_inside_its_output(run_cli, scored, tmp_path: Path) -> None:
    gold, out = scored["gold"], tmp_path / "result"
    ledger = out / "looks.jsonl"
    score = ["score", "--contract", CONTRACT, "--gold", gold, "--quiet"]
    baseline, candidate = tmp_path / "baseline.jsonl", tmp_path / "candidate.jsonl"
    assert run_cli(*score, "--pred", baseline, "--out", out, "--no-ledger").exit_code == 0
    # A look recorded in a ledger kept inside that result folder (from another run).
    elsewhere = tmp_path / "elsewhere"
    assert (
        run_cli(*score, "--pred", baseline, "--out", elsewhere, "--ledger", ledger).exit_code == 0
    )
    kept = _unchanged(ledger)
    again = run_cli(*score, "--pred", candidate, "--out", out, "--ledger", ledger, "--force")
    assert_one_line_error(again, "would replace the input", "looks.jsonl", "lies inside it")
    assert kept()
    # A new output folder is refused too: the ledger would be appended inside it.
    fresh = run_cli(*score, "--pred", candidate, "--out", tmp_path / "new",
                    "--ledger", tmp_path / "new" / "looks.jsonl")  # fmt: skip
    assert_one_line_error(fresh, "would replace the input", "lies inside it")
    # The default ledger (beside the gold) inside the output: the gold is inside too.
    inside = run_cli(*score, "--pred", candidate, "--out", gold.parent, "--force")
    assert_one_line_error(inside, "would replace the input")
    assert scored["ledger"].exists()


def test_force_never_replaces_a_folder_holding_a_ledger(run_cli, scored, tmp_path: Path) -> None:
    out = scored["candidate"]
    (out / LEDGER_NAME).write_bytes(scored["ledger"].read_bytes())  # a ledger kept with a result
    pred = tmp_path / "candidate.jsonl"
    result = run_cli("score", "--contract", CONTRACT, "--gold", scored["gold"], "--pred", pred,
                     "--out", out, "--force", "--no-ledger")  # fmt: skip
    assert_one_line_error(result, "holds the test-set ledger", "even with --force")
    assert (out / LEDGER_NAME).exists()


def test_split_freeze_inside_the_output_is_refused(run_cli, tmp_path: Path) -> None:
    data = _write_jsonl(tmp_path / "data.jsonl", [{"id": i, "g": i} for i in range(20)])
    out = tmp_path / "split"
    args = ["split", data, "--group", "g", "--id", "id", "--sizes", "10,10", "--names", "a,b"]
    assert run_cli(*args, "--out", out, "--quiet").exit_code == 0
    frozen = out / "assignments.parquet"
    kept = _unchanged(frozen)
    result = run_cli(*args, "--out", out, "--freeze", frozen, "--force")
    assert_one_line_error(result, "would replace the input", "assignments.parquet")
    assert kept()


def test_reload_check_json_never_replaces_a_pinned_file(run_cli, tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    base = tmp_path / "base"
    shutil.copytree(MODEL / "base", base)
    record = {"base": {"path": str(base)}, "data": {"path": str(tmp_path / "test.jsonl")}}
    (run / "run.json").write_text(json.dumps(record))
    for target in (run / "run.json", base / "config.json"):
        kept = _unchanged(target)
        result = run_cli("reload-check", run, "--json", target, "--force")
        assert_one_line_error(result, str(target))
        assert kept()


def test_card_out_never_replaces_a_file_of_the_base(run_cli, tmp_path: Path) -> None:
    base, adapter = tmp_path / "base", tmp_path / "adapter"
    shutil.copytree(MODEL / "base", base)
    shutil.copytree(MODEL / "adapter", adapter)
    for target in (base / "config.json", adapter / "adapter_config.json"):
        kept = _unchanged(target)
        result = run_cli("card", adapter, "--base", base, "--json", target, "--force")
        assert_one_line_error(result, "inside the input folder")
        assert kept()


def test_links_do_not_hide_an_input(tmp_path: Path) -> None:
    gold = tmp_path / "gold.jsonl"
    gold.write_text("{}\n")
    (tmp_path / "sym.json").symlink_to(gold)
    os.link(gold, tmp_path / "hard.json")
    (tmp_path / "folder-link").symlink_to(tmp_path, target_is_directory=True)
    for output in (
        tmp_path / "sym.json",
        tmp_path / "hard.json",
        tmp_path / "folder-link" / "gold.jsonl",
    ):
        with pytest.raises(UsageError, match="would replace the input"):
            check_new_output(output, True, inputs=[gold])


def test_an_output_folder_holding_another_output_is_refused(tmp_path: Path) -> None:
    files = CommandFiles().writes(tmp_path / "o", option="--out", folder=True)
    files.writes(tmp_path / "o" / "x.json", option="--json")
    with pytest.raises(UsageError, match="--json lies inside --out"):
        files.check()


def test_a_file_output_on_a_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(OutputExists, match="is a folder; give a file path for --json"):
        CommandFiles(force=True).writes(tmp_path, option="--json").check()
