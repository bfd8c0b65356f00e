"""score / compare / gate from frames and result objects, and looks from Python in the ledger.

Scoring frames must give the rows and figures of the same data in files;
compare and gate on what ``score`` returns must give the report of the
written folders. A look from Python at a gold file is in its ledger before
the result is returned, once, however often the result is then written.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from ticket_gold import gold_rows

import evalkit
from evalkit.errors import ArtifactChanged, DuplicateIds, UnknownColumn, UsageError
from evalkit.io import frame_sha256, read_table, sha256_file
from evalkit.provenance.ledger import LEDGER_NAME

ROOT = Path(__file__).resolve().parents[1]
CONTRACT = ROOT / "contracts" / "ticket-triage.yaml"


def _gold() -> pl.DataFrame:
    return pl.DataFrame(gold_rows(), schema_overrides={"amount": pl.Float64})


def _predictions(gold: pl.DataFrame, wrong: range) -> pl.DataFrame:
    outputs = []
    for index, row in enumerate(gold.iter_rows(named=True)):
        answer = {key: row[key] for key in ("category", "priority", "order_id", "amount")}
        if index in wrong:
            answer["category"] = "technical"
        outputs.append("```json\n" + json.dumps(answer) + "\n```")
    return pl.DataFrame({"ticket_id": gold["ticket_id"], "output": outputs})


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    gold = _gold()
    paths = {"gold": tmp_path / "data" / "test.jsonl"}
    paths["gold"].parent.mkdir()
    gold.write_ndjson(paths["gold"])
    for name, wrong in (("baseline", range(0, 12)), ("candidate", range(0, 3))):
        paths[name] = tmp_path / f"{name}.jsonl"
        _predictions(gold, wrong).write_ndjson(paths[name])
    return paths


def _figures(result: evalkit.ScoreResult) -> dict[str, object]:
    """The summary without what says where the inputs came from."""
    data = result.summary.model_dump(mode="json")
    for side in ("gold", "predictions"):
        for key in ("path", "sha256", "source", "format"):
            data[side].pop(key, None)
    for key in ("ledger", "look", "examples_sha256"):
        data.pop(key)
    return data


@pytest.mark.parametrize("kind", ["polars", "pandas", "pyarrow"])
def test_frames_score_as_the_files_do(files: dict[str, Path], kind: str) -> None:
    convert = {
        "polars": lambda f: f,
        "pandas": pl.DataFrame.to_pandas,
        "pyarrow": pl.DataFrame.to_arrow,
    }[kind]
    gold, predictions = pl.read_ndjson(files["gold"]), pl.read_ndjson(files["baseline"])
    from_files = evalkit.score(CONTRACT, files["gold"], files["baseline"], name="b", ledger=False)
    from_frames = evalkit.score(CONTRACT, convert(gold), convert(predictions), name="b")
    assert from_frames.examples.equals(from_files.examples)
    assert _figures(from_frames) == _figures(from_files)
    assert from_frames.summary.overall.content_correct == 78  # 90 items, 12 wrong
    recorded = from_frames.summary.model_dump(mode="json")
    assert recorded["gold"]["path"] is None and recorded["gold"]["source"] == "frame"
    # The hash of the frame as evalkit reads it (pandas has no all-null column type).
    assert recorded["gold"]["sha256"] == read_table(convert(gold), name="gold").sha256
    # The test set's identity is its content: the same whether a file or a frame.
    assert recorded["gold"]["content_sha256"] == from_files.summary.gold.content_sha256
    assert recorded["predictions"]["format"] == "frame"
    assert recorded["predictions"]["sha256"] == frame_sha256(predictions)
    if kind == "polars":
        assert recorded["gold"]["sha256"] == frame_sha256(gold)
    # A gold frame has no ledger unless one is named.
    assert from_frames.summary.ledger is None and from_frames.look is None
    assert "source" not in from_files.summary.model_dump(mode="json")["gold"]


def test_a_frame_result_writes_and_is_read_back(files: dict[str, Path], tmp_path: Path) -> None:
    gold, predictions = pl.read_ndjson(files["gold"]), pl.read_ndjson(files["baseline"])
    folder = evalkit.score(CONTRACT, gold, predictions, name="b").write(tmp_path / "out")
    loaded = evalkit.load_result(folder)  # every check of a folder read passes
    assert loaded.summary.gold.path is None
    assert json.loads((folder / "summary.json").read_text())["gold"]["source"] == "frame"


def test_bad_frames_name_the_parameter(files: dict[str, Path]) -> None:
    gold = pl.read_ndjson(files["gold"])
    with pytest.raises(UnknownColumn, match=r"^predictions frame: no output"):
        evalkit.score(CONTRACT, gold, gold, ledger=False)
    with pytest.raises(UsageError, match=r"pred_format 'jsonl' names a file format"):
        evalkit.score(CONTRACT, gold, gold, pred_format="jsonl", ledger=False)
    with pytest.raises(DuplicateIds, match=r"^gold frame: id 'T0001' occurs 2"):
        evalkit.score(CONTRACT, pl.concat([gold, gold.head(1)]), files["baseline"], ledger=False)


def test_compare_and_gate_take_what_score_returns(files: dict[str, Path], tmp_path: Path) -> None:
    baseline = evalkit.score(CONTRACT, files["gold"], files["baseline"], name="baseline")
    candidate = evalkit.score(CONTRACT, files["gold"], files["candidate"], name="candidate")
    in_memory = evalkit.compare(baseline, candidate)
    written = evalkit.compare(
        baseline.write(tmp_path / "baseline"), candidate.write(tmp_path / "candidate")
    )
    left, right = in_memory.model_dump(mode="json"), written.model_dump(mode="json")
    for report in (left, right, *left["candidates"], *right["candidates"]):
        for side in ("baseline", "candidate"):
            if isinstance(report.get(side), dict):
                report[side].pop("path"), report[side].pop("summary_sha256")
    assert left == right
    assert in_memory.candidates[0].baseline.path is None
    assert in_memory.decision.candidate == "candidate"
    gated = evalkit.gate(baseline, candidate)
    assert gated.verdict == written.verdict == "pass"
    with pytest.raises(UsageError, match=r"expected a result folder or what evalkit\.score"):
        evalkit.gate(baseline, 3)  # type: ignore[arg-type]


def _ledger_lines(folder: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (folder / LEDGER_NAME).read_text().splitlines()]


def test_a_look_from_python_is_in_the_ledger_before_the_result_returns(
    files: dict[str, Path], tmp_path: Path
) -> None:
    result = evalkit.score(
        CONTRACT, files["gold"], files["baseline"], name="b", purpose="final check"
    )
    ledger = files["gold"].parent / LEDGER_NAME
    (line,) = _ledger_lines(files["gold"].parent)
    assert line["purpose"] == "final check" and line["name"] == "b"
    assert result.summary.ledger == str(ledger)
    assert result.look is not None and result.look.looks == 1
    assert result.summary.look is not None and result.summary.look.line == 1
    assert line["sha256"] == result.summary.look.sha256
    # Written twice: no second look; the examples are those the line records.
    first = result.write(tmp_path / "one")
    result.write(tmp_path / "two")
    assert len(_ledger_lines(files["gold"].parent)) == 1
    assert sha256_file(first / "examples.parquet") == line["examples_sha256"]
    assert (first / "summary.json").read_bytes() == (tmp_path / "two" / "summary.json").read_bytes()
    # What the ledger command reads back.
    (state,) = evalkit.read_ledger(ledger).gold.values()
    assert state.looks == 1
    # gate finds the look in the ledger, as for a result scored from the command line.
    gated = evalkit.gate(first, first)
    assert gated.test_set is not None and gated.test_set.looks == 1


def test_purpose_is_given_when_scoring_and_changed_examples_are_refused(
    files: dict[str, Path], tmp_path: Path
) -> None:
    result = evalkit.score(CONTRACT, files["gold"], files["baseline"])
    with pytest.raises(UsageError, match=r"^purpose: this result's look was recorded"):
        result.write(tmp_path / "out", purpose="later")
    edited = evalkit.ScoreResult(
        summary=result.summary, examples=result.examples.head(10), look=result.look
    )
    with pytest.raises(ArtifactChanged, match="not those whose look was recorded"):
        edited.write(tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_no_ledger_and_a_named_ledger(files: dict[str, Path], tmp_path: Path) -> None:
    evalkit.score(CONTRACT, files["gold"], files["baseline"], ledger=False)
    assert not (files["gold"].parent / LEDGER_NAME).exists()
    elsewhere = tmp_path / "elsewhere.jsonl"
    gold = pl.read_ndjson(files["gold"])
    named = evalkit.score(CONTRACT, gold, files["baseline"], ledger=elsewhere)
    (line,) = [json.loads(raw) for raw in elsewhere.read_text().splitlines()]
    assert line["gold_path"] is None and line["gold_sha256"] == frame_sha256(gold)
    assert named.look is not None
    # The same rows from the file are the same test set: the look counts against it.
    from_file = evalkit.score(CONTRACT, files["gold"], files["candidate"], ledger=elsewhere)
    assert from_file.look is not None and from_file.look.looks == 2


def test_a_gold_folder_not_writable_warns_and_records_nothing(
    files: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    import evalkit.provenance.ledger as ledger

    # As a read-only folder reads to a user who is not root (CI runs as root).
    monkeypatch.setattr(ledger, "writable", lambda path: False)
    folder = files["gold"].parent
    with pytest.warns(UserWarning, match="is not writable, so this look at"):
        result = evalkit.score(CONTRACT, files["gold"], files["baseline"])
    assert result.look is None and not (folder / LEDGER_NAME).exists()


def test_a_rescore_from_python_is_in_the_ledger_before_it_returns(
    files: dict[str, Path], tmp_path: Path
) -> None:
    """As ``evalkit rescore`` records it: a line in the ledger the result recorded its look in."""
    folder = evalkit.score(CONTRACT, files["gold"], files["baseline"], name="b").write(
        tmp_path / "b"
    )
    v2 = ROOT / "contracts" / "ticket-triage-v2.yaml"
    rescored = evalkit.rescore(folder, v2)
    first, second = _ledger_lines(files["gold"].parent)
    assert second["purpose"] == f"rescore of {folder} (ticket-triage v1)"
    assert (first["contract"]["version"], second["contract"]["version"]) == (1, 2)
    assert rescored.look is not None and rescored.look.new_look  # the rules changed: a look
    assert rescored.summary.look is not None and rescored.summary.look.line == 2
    assert rescored.summary.rescored_from is not None
    # Written: no second line, and gate finds the look.
    written = rescored.write(tmp_path / "b-v2")
    assert len(_ledger_lines(files["gold"].parent)) == 2
    assert evalkit.gate(written, written).test_set is not None
    # The same rules again: a line but no new look; purpose says why; False records nothing.
    again = evalkit.rescore(folder, v2, purpose="after the fix")
    assert again.look is not None and not again.look.new_look
    assert _ledger_lines(files["gold"].parent)[-1]["purpose"] == "after the fix"
    unrecorded = evalkit.rescore(folder, v2, ledger=False)
    assert unrecorded.look is None and unrecorded.summary.ledger is None
    assert len(_ledger_lines(files["gold"].parent)) == 3


def test_a_rescore_of_a_result_scored_without_a_ledger_records_none(
    files: dict[str, Path], tmp_path: Path
) -> None:
    result = evalkit.score(CONTRACT, files["gold"], files["baseline"], ledger=False)
    folder = result.write(tmp_path / "b")
    rescored = evalkit.rescore(folder, ROOT / "contracts" / "ticket-triage-v2.yaml")
    assert rescored.look is None and rescored.summary.ledger is None
    assert not (files["gold"].parent / LEDGER_NAME).exists()
    elsewhere = tmp_path / "elsewhere.jsonl"
    named = evalkit.rescore(folder, ROOT / "contracts" / "ticket-triage-v2.yaml", ledger=elsewhere)
    assert named.look is not None and elsewhere.is_file()
