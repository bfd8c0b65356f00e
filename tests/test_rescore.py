"""``evalkit rescore``: the walkthrough's results under a contract v2, equal to scoring anew.

The three results are made as the walkthrough makes them (split, simulated
predictions, ``evalkit score``), from a temporary folder so that every path
is recorded relative, as in the demo. Contract v2 renames a class and makes
the parser strict, so verdicts really change.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import orjson
import pytest
import yaml
from conftest import CliResult, assert_one_line_error

from evalkit.provenance.ledger_state import gold_state
from evalkit.records._summary import ScoreSummary, summary_json

ROOT = Path(__file__).resolve().parents[1]
TICKETS = ROOT / "examples" / "tickets" / "tickets.jsonl"
TRIAGE = ROOT / "contracts" / "ticket-triage.yaml"
TRIAGE_V2 = ROOT / "contracts" / "ticket-triage-v2.yaml"
MODELS = ("baseline", "candidate-a", "candidate-b")
RESULT_FILES = ("summary.json", "examples.parquet", "report.html")


def _simulator() -> ModuleType:
    path = ROOT / "examples" / "tickets" / "simulate_predictions.py"
    spec = importlib.util.spec_from_file_location("simulate_predictions", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def contract_v2(folder: Path) -> Path:
    """The shipped v2: ``product_question`` renamed ``product_inquiry``, strict extraction."""
    v1, v2 = (yaml.safe_load(path.read_text()) for path in (TRIAGE, TRIAGE_V2))
    assert v2["output"]["extract"] == "strict" != v1["output"]["extract"]
    assert "product_inquiry" in v2["output"]["schema"]["properties"]["category"]["enum"]
    path = folder / "contracts" / "ticket-triage-v2.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(TRIAGE_V2, path)
    return path.relative_to(folder)


@pytest.fixture
def walkthrough(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run_cli: Callable[..., CliResult]
) -> Path:
    """The walkthrough's split, predictions and three v1 results, in a temporary folder."""
    import polars as pl

    monkeypatch.chdir(tmp_path)
    shutil.copy(TRIAGE, tmp_path / "ticket-triage.yaml")
    split = run_cli(
        "split", TICKETS, "--out", "split", "--group", "conversation_id", "--stratify",
        "category", "--id", "ticket_id", "--text", "text", "--sizes", "840,180,180",
        "--seed", "7", "--near-dup", "0.8", "--quiet",
    )  # fmt: skip
    assert split.exit_code == 0, split.stderr
    records = _simulator().simulate(pl.read_parquet("split/test.parquet"), seed=11)
    Path("predictions").mkdir()
    for model in MODELS:
        lines = "".join(json.dumps(row) + "\n" for row in records[model])
        Path(f"predictions/{model}.jsonl").write_text(lines)
        scored = run_cli(
            "score", "--contract", "ticket-triage.yaml", "--gold", "split/test.parquet",
            "--pred", f"predictions/{model}.jsonl", "--out", f"score/{model}", "--name", model,
        )  # fmt: skip
        assert scored.exit_code == 0, scored.stderr
    return tmp_path


def _rescore(run_cli: Callable[..., CliResult], *extra: object) -> CliResult:
    v2 = "contracts/ticket-triage-v2.yaml"
    results = [f"score/{model}" for model in MODELS]
    return run_cli("rescore", *results, "--contract", v2, "--out", "rescore", *extra)


def test_rescore_equals_scoring_from_scratch_byte_for_byte(
    walkthrough: Path, run_cli: Callable[..., CliResult]
) -> None:
    v2 = contract_v2(walkthrough)
    done = _rescore(run_cli)
    assert done.exit_code == 0, done.stderr
    for model in MODELS:
        scratch = run_cli(
            "score", "--contract", v2, "--gold", "split/test.parquet",
            "--pred", f"predictions/{model}.jsonl", "--out", f"scratch/{model}", "--name", model,
        )  # fmt: skip
        assert scratch.exit_code == 0, scratch.stderr
        new, fresh = Path("rescore") / model, Path("scratch") / model
        assert sorted(p.name for p in new.iterdir()) == sorted(RESULT_FILES)
        for name in ("examples.parquet", "report.html"):
            assert (new / name).read_bytes() == (fresh / name).read_bytes(), (model, name)
        summary = ScoreSummary.model_validate_json((new / "summary.json").read_bytes())
        replaced = summary.rescored_from
        assert replaced is not None
        assert (replaced.name, replaced.version, replaced.result) == (
            "ticket-triage",
            1,
            f"score/{model}",
        )
        old = orjson.loads(Path(f"score/{model}/summary.json").read_bytes())
        assert replaced.fingerprint == old["contract"]["fingerprint"]
        # Everything but the record of what it replaces, and the ledger line each
        # look was appended as (two looks, two lines), is what scoring anew writes.
        scratch_summary = ScoreSummary.model_validate_json((fresh / "summary.json").read_bytes())
        assert summary.look is not None and scratch_summary.look is not None
        assert summary.look != scratch_summary.look
        unmarked = summary.model_copy(update={"rescored_from": None, "look": scratch_summary.look})
        assert summary_json(unmarked) == (fresh / "summary.json").read_bytes()
    # The verdicts did change: strict extraction and the renamed class.
    before = orjson.loads(Path("score/baseline/summary.json").read_bytes())
    after = orjson.loads(Path("rescore/baseline/summary.json").read_bytes())
    assert after["overall"]["format_valid"] < before["overall"]["format_valid"]
    assert after["classes"]["product_question"]["content_correct"] == 0
    assert before["classes"]["product_question"]["content_correct"] > 0


def test_changed_rules_are_a_new_look_that_burns_the_test(
    walkthrough: Path, run_cli: Callable[..., CliResult]
) -> None:
    contract_v2(walkthrough)
    gold_sha = orjson.loads(Path("score/baseline/summary.json").read_bytes())["gold"]["sha256"]
    ledger = Path("split/evalkit-ledger.jsonl")
    assert gold_state(ledger, gold_sha).state == "reused"
    done = _rescore(run_cli)
    assert done.exit_code == 0, done.stderr
    said = [line for line in done.stdout.splitlines() if line.startswith("ledger:")]
    assert len(said) == 3
    assert all("the rules changed (ticket-triage v1 -> ticket-triage v2)" in s for s in said)
    assert said[-1].endswith(f"now burned (see evalkit ledger {ledger})")
    state = gold_state(ledger, gold_sha)
    assert (state.state, state.looks, state.lines) == ("burned", 6, 6)
    assert any("the rules changed after the test was seen" in r for r in state.reasons)
    assert "re-scored baseline under ticket-triage v2 (was v1)" in done.stdout


def test_an_evaluator_change_under_the_same_rules_is_no_new_look(
    walkthrough: Path, run_cli: Callable[..., CliResult], monkeypatch: pytest.MonkeyPatch
) -> None:
    import evalkit.contract.validation as validation
    import evalkit.scoring.engine as engine

    semantics = validation.evaluator_semantics()
    upgraded = {**semantics, "validator": semantics["validator"] + "+upgrade"}
    for module in (engine, validation):  # the summary's evaluator and the fingerprint
        monkeypatch.setattr(module, "evaluator_semantics", lambda: upgraded)
    done = run_cli(
        "rescore", "score/baseline", "--contract", "ticket-triage.yaml", "--out", "rescore"
    )
    assert done.exit_code == 0, done.stderr
    assert "ledger: a re-score under the same rules, so no new look (3 at this gold" in done.stdout
    old = orjson.loads(Path("score/baseline/summary.json").read_bytes())
    new = orjson.loads(Path("rescore/baseline/summary.json").read_bytes())
    assert new["contract"]["fingerprint"] != old["contract"]["fingerprint"]
    state = gold_state(Path("split/evalkit-ledger.jsonl"), old["gold"]["sha256"])
    assert (state.state, state.looks, state.lines) == ("reused", 3, 4)


def test_compare_across_versions_is_refused_and_names_rescore(
    walkthrough: Path, run_cli: Callable[..., CliResult]
) -> None:
    contract_v2(walkthrough)
    assert _rescore(run_cli, "--quiet").exit_code == 0
    refused = run_cli("compare", "score/baseline", "rescore/candidate-a")
    assert_one_line_error(refused, "different contracts", "evalkit rescore RESULT...")
    compared = run_cli("compare", *(f"rescore/{model}" for model in MODELS))
    assert compared.exit_code == 0, compared.stderr
    assert "ticket-triage v2" in compared.stdout


def test_quiet_prints_the_new_folders(walkthrough: Path, run_cli: Callable[..., CliResult]) -> None:
    contract_v2(walkthrough)
    done = _rescore(run_cli, "--quiet", "--no-ledger")
    assert done.exit_code == 0, done.stderr
    assert done.stdout.splitlines() == [f"rescore/{model}" for model in MODELS]


def _edit_summary(path: Path, change: Callable[[dict], None]) -> None:
    data = orjson.loads(path.read_bytes())
    change(data)
    path.write_bytes(orjson.dumps(data, option=orjson.OPT_INDENT_2))


def test_a_result_without_a_recorded_predictions_path_is_refused(
    walkthrough: Path, run_cli: Callable[..., CliResult]
) -> None:
    contract_v2(walkthrough)
    # Null, as for predictions scored from a frame (a missing key is the model's error).
    _edit_summary(
        Path("score/candidate-a/summary.json"), lambda d: d["predictions"].update(path=None)
    )
    refused = _rescore(run_cli)
    assert_one_line_error(
        refused, "score/candidate-a: summary.json records no predictions file (predictions.path)"
    )
    assert not Path("rescore").exists()  # nothing written for the other two either


def test_changed_predictions_or_gold_are_refused(
    walkthrough: Path, run_cli: Callable[..., CliResult]
) -> None:
    contract_v2(walkthrough)
    with Path("predictions/candidate-b.jsonl").open("a") as handle:
        handle.write('{"ticket_id": "T99999", "output": "{}"}\n')
    refused = _rescore(run_cli)
    assert_one_line_error(
        refused, "predictions/candidate-b.jsonl: its sha256", "the predictions changed"
    )
    Path("predictions/candidate-b.jsonl").unlink()
    missing = _rescore(run_cli)
    assert_one_line_error(missing, "its predictions file predictions/candidate-b.jsonl")
    import polars as pl

    pl.read_parquet("split/test.parquet").head(100).write_parquet("split/test.parquet")
    gold = run_cli("rescore", "score/baseline", "--contract", TRIAGE, "--out", "rescore")
    assert_one_line_error(gold, "split/test.parquet: its sha256", "the gold file changed")


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ({"id": "ticket_no"}, "no column 'ticket_no', named by id"),
        ({"class": "team", "fields": {"team": {"gold": "team"}}}, "no column 'team'"),
    ],
)
def test_a_contract_naming_a_column_the_results_lack_is_refused(
    walkthrough: Path, run_cli: Callable[..., CliResult], change: dict, fragment: str
) -> None:
    data = yaml.safe_load(TRIAGE.read_text())
    data.update(version=2, **change)
    if "fields" in change:
        data["correct"] = "all"
    Path("bad.yaml").write_text(yaml.safe_dump(data))
    refused = run_cli("rescore", "score/baseline", "--contract", "bad.yaml", "--out", "rescore")
    assert_one_line_error(refused, "re-scoring score/baseline:", fragment)


def test_outputs_are_checked_before_anything_is_written(
    walkthrough: Path, run_cli: Callable[..., CliResult]
) -> None:
    contract_v2(walkthrough)
    Path("rescore/candidate-b").mkdir(parents=True)
    (Path("rescore/candidate-b") / "summary.json").write_text("{}")
    refused = _rescore(run_cli)
    assert_one_line_error(refused, "rescore/candidate-b: folder exists already")
    assert not Path("rescore/baseline").exists()
    into_itself = run_cli(
        "rescore", "score/baseline", "--contract", "ticket-triage.yaml", "--out", "score"
    )
    assert_one_line_error(into_itself, "would replace the input")
    Path("other/baseline").mkdir(parents=True)
    shutil.copytree("score/baseline", "other/baseline", dirs_exist_ok=True)
    twice = run_cli(
        "rescore", "score/baseline", "other/baseline", "--contract", TRIAGE, "--out", "x"
    )
    assert_one_line_error(twice, "would both be re-scored into x/baseline")
