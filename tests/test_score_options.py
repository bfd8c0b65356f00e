"""``score`` and ``rescore`` take one options object each (ScoreParams, RescoreParams).

The click commands are built from the same classes, so every option of the
command line is a field (inputs and outputs apart); the library called with
the object or with the keywords that make it gives the same result; what
both commands take (the ledger, the look's purpose, the parsing processes)
is defined once, in LookParams.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import shutil
from pathlib import Path

import polars as pl
import pytest
from ticket_gold import gold_rows

import evalkit
from evalkit.errors import ParameterError
from evalkit.provenance.ledger import LEDGER_NAME
from evalkit.scoring.options import LookParams, RescoreParams, ScoreParams

ROOT = Path(__file__).resolve().parents[1]
CONTRACT = ROOT / "contracts" / "ticket-triage.yaml"


def _names(cls: type[object]) -> set[str]:
    return {field.name for field in dataclasses.fields(cls)}  # type: ignore[arg-type]


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    """A gold file and predictions for it, 12 of 90 with the wrong category."""
    gold = pl.DataFrame(gold_rows(), schema_overrides={"amount": pl.Float64})
    outputs = []
    for index, row in enumerate(gold.iter_rows(named=True)):
        answer = {key: row[key] for key in ("category", "priority", "order_id", "amount")}
        if index < 12:
            answer["category"] = "technical"
        outputs.append(json.dumps(answer))
    paths = {"gold": tmp_path / "data" / "test.jsonl", "pred": tmp_path / "pred.jsonl"}
    paths["gold"].parent.mkdir()
    gold.write_ndjson(paths["gold"])
    pl.DataFrame({"ticket_id": gold["ticket_id"], "output": outputs}).write_ndjson(paths["pred"])
    return paths


def test_every_score_option_is_a_field_of_its_options_object() -> None:
    """The click command declares no score option of its own beyond input and output."""
    from evalkit.cli.score_cmd import score_command

    names = {param.name for param in score_command.params}
    assert names - _names(ScoreParams) == {
        "contract_path", "gold_path", "predictions", "out", "force", "quiet"
    }  # fmt: skip
    assert _names(ScoreParams) <= names


def test_every_rescore_option_is_a_field_of_its_options_object() -> None:
    from evalkit.cli.rescore_cmd import rescore_command

    names = {param.name for param in rescore_command.params}
    assert names - _names(RescoreParams) == {"results", "contract_path", "out", "force", "quiet"}
    assert _names(RescoreParams) <= names


def test_the_ledger_options_are_defined_once_for_both_commands() -> None:
    from evalkit.cli.rescore_cmd import rescore_command
    from evalkit.cli.score_cmd import score_command

    shared = _names(LookParams)
    assert shared == {"workers", "ledger", "no_ledger", "purpose"}
    assert shared <= _names(ScoreParams) and shared <= _names(RescoreParams)

    def described(command: object, name: str) -> tuple[object, ...]:
        (option,) = [p for p in command.params if p.name == name]  # type: ignore[attr-defined]
        return (option.opts, option.help, option.default, option.metavar)

    for name in shared:
        assert described(score_command, name) == described(rescore_command, name), name


def test_evalkit_score_takes_its_options_object_or_keywords(files: dict[str, Path]) -> None:
    keywords = evalkit.score(
        CONTRACT, files["gold"], files["pred"], name="b", id_column="ticket_id", no_ledger=True
    )
    given = ScoreParams(name="b", id_column="ticket_id", no_ledger=True)
    by_object = evalkit.score(CONTRACT, files["gold"], files["pred"], given)
    assert keywords.summary.model_dump() == by_object.summary.model_dump()
    assert keywords.examples.equals(by_object.examples)
    assert keywords.summary.overall.content_correct == 78
    assert keywords.summary.predictions.id_col == "ticket_id"
    # ledger=False, the spelling before no_ledger, is the same call
    before = evalkit.score(CONTRACT, files["gold"], files["pred"], name="b", id_column="ticket_id",
                           ledger=False)  # fmt: skip
    assert before.summary.model_dump() == keywords.summary.model_dump()
    assert not (files["gold"].parent / LEDGER_NAME).exists()
    signature = inspect.signature(evalkit.score)
    assert {"id_column", "on_duplicate", "ledger", "no_ledger", "hf_split", "base"} <= set(
        signature.parameters
    )
    assert signature.parameters["pred_format"].default == "auto"


def test_score_options_name_parameters_in_python() -> None:
    cases = [
        ({"card": "c.json", "adapter": "a"}, r"^card and adapter are both given"),
        ({"base_revision": "abc"}, r"^base_revision needs base_model \(or adapter\)"),
        ({"card": "c.json", "base_revision": "abc"}, r"^base_revision cannot change a card"),
        ({"card": "c.json", "base_model": "org/m"}, r"^base_model is for a prompt-only run"),
        ({"base_model": " "}, r"^base_model is empty"),
        ({"ledger": "l.jsonl", "no_ledger": True}, r"^no_ledger and ledger are both given"),
        ({"on_duplicate": "any"}, r"^on_duplicate must be one of error, first, last"),
        ({"workers": 0}, r"^workers must be a positive number of processes, got 0"),
    ]
    for values, message in cases:
        with pytest.raises(ParameterError, match=message):
            ScoreParams(**values)  # type: ignore[arg-type]
    assert ScoreParams(ledger="l.jsonl").ledger == Path("l.jsonl")  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match=r"^no_ledger and ledger are both given"):
        RescoreParams(ledger=Path("l.jsonl"), no_ledger=True)


def test_the_command_line_names_the_flags(run_cli, files: dict[str, Path], tmp_path) -> None:
    from conftest import assert_one_line_error

    common = ["score", "--contract", CONTRACT, "--gold", files["gold"], "--pred", files["pred"],
              "--out", tmp_path / "x"]  # fmt: skip
    assert_one_line_error(run_cli(*common, "--base-revision", "abc"),
                          "--base-revision needs --base-model (or --adapter)")  # fmt: skip
    assert_one_line_error(run_cli(*common, "--workers", "0"), "--workers", "positive")
    assert_one_line_error(run_cli(*common, "--no-ledger", "--hf-split", "test"),
                          "--hf-split test: neither --gold nor --pred is")  # fmt: skip
    assert not (tmp_path / "x").exists()


def test_evalkit_rescore_takes_its_options_and_records_its_look(
    files: dict[str, Path], tmp_path: Path
) -> None:
    scored = evalkit.score(CONTRACT, files["gold"], files["pred"], id_column="ticket_id")
    folder = scored.write(tmp_path / "runs" / "baseline")
    ledger = files["gold"].parent / LEDGER_NAME
    assert len(ledger.read_text().splitlines()) == 1
    contract = tmp_path / "v1.yaml"
    shutil.copy(CONTRACT, contract)

    keywords = evalkit.rescore(folder, contract, no_ledger=True, workers=1)
    by_object = evalkit.rescore(folder, contract, RescoreParams(no_ledger=True, workers=1))
    assert keywords.summary.model_dump() == by_object.summary.model_dump()
    assert keywords.look is None and keywords.summary.ledger is None
    assert len(ledger.read_text().splitlines()) == 1  # no_ledger: nothing appended

    # By default the look goes to the ledger the result recorded, with what it replaces.
    recorded = evalkit.rescore(folder, contract)
    assert recorded.look is not None and recorded.summary.ledger == str(ledger)
    lines = [json.loads(line) for line in ledger.read_text().splitlines()]
    assert len(lines) == 2 and lines[1]["purpose"].startswith(f"rescore of {folder}")
    assert recorded.summary.rescored_from is not None
    elsewhere = tmp_path / "elsewhere.jsonl"
    evalkit.rescore(folder, contract, ledger=elsewhere, purpose="evaluator upgrade")
    (line,) = [json.loads(raw) for raw in elsewhere.read_text().splitlines()]
    assert line["purpose"] == "evaluator upgrade"
    assert "no_ledger" in inspect.signature(evalkit.rescore).parameters


def test_the_contract_commands_have_only_inputs_and_outputs() -> None:
    """``contract check`` prints FILE's normal form (``--format`` is how it is printed) and
    ``contract schema`` writes the schema: neither takes an option that is a library
    parameter, so neither has an options object; an option added that the library takes
    belongs on one."""
    from evalkit.cli.contract_cmd import check_command, schema_command
    from evalkit.contract import load_contract

    assert {param.name for param in check_command.params} == {"file", "fmt", "quiet"}
    assert {param.name for param in schema_command.params} == {"out", "force", "quiet"}
    assert list(inspect.signature(load_contract).parameters) == ["path"]
