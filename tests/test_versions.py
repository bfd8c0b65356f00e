"""Format versions of persisted files: one check when read, room for migrations."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import assert_one_line_error

from evalkit.errors import MalformedFile
from evalkit.records._versions import FileFormat

ROOT = Path(__file__).resolve().parents[1]
MODEL = ROOT / "examples" / "model"


def test_a_newer_version_is_refused_in_one_line() -> None:
    fmt = FileFormat("thing", 2)
    with pytest.raises(MalformedFile) as raised:
        fmt.upgrade({"format_version": 3}, "t.json")
    assert str(raised.value) == (
        "t.json: format_version 3 is newer than this evalkit reads (thing 2); upgrade evalkit"
    )


@pytest.mark.parametrize("version", [None, 0, -1, "1", True, 1.0])
def test_a_version_that_is_no_version_is_refused(version: object) -> None:
    with pytest.raises(MalformedFile, match=r"t.json: format_version must be a whole number >= 1"):
        FileFormat("thing", 1).upgrade({"format_version": version}, "t.json", "write it again")


def test_older_versions_are_migrated_step_by_step() -> None:
    steps: list[int] = []

    def one_to_two(data: dict) -> dict:
        steps.append(1)
        value = data.pop("a")
        return {**data, "b": value}

    def two_to_three(data: dict) -> dict:
        steps.append(2)
        return {**data, "c": data["b"] * 2}

    fmt = FileFormat("thing", 3, migrations={1: one_to_two, 2: two_to_three})
    original = {"format_version": 1, "a": 5}
    assert fmt.upgrade(original, "t.json") == {"format_version": 3, "b": 5, "c": 10}
    assert original == {"format_version": 1, "a": 5}  # the document read is not changed
    assert steps == [1, 2]
    assert fmt.upgrade({"format_version": 2, "b": 1}, "t.json") == {
        "format_version": 3, "b": 1, "c": 2
    }  # fmt: skip
    current = {"format_version": 3, "b": 1, "c": 2}
    assert fmt.upgrade(current, "t.json") == current


def test_an_older_version_no_migration_reaches_is_refused() -> None:
    with pytest.raises(MalformedFile, match=r"format_version 1 of thing is no longer read"):
        FileFormat("thing", 2).upgrade({"format_version": 1}, "t.json")


def test_a_newer_card_is_refused_by_its_reader(tmp_path: Path) -> None:
    from evalkit.provenance.card import adapter_card, card_json, load_card

    path = tmp_path / "card.json"
    card = json.loads(card_json(adapter_card(MODEL / "adapter")))
    path.write_text(json.dumps({**card, "card_version": card["card_version"] + 1}))
    with pytest.raises(MalformedFile, match=r"card_version 3 is newer than this evalkit reads"):
        load_card(path)
    path.write_text(json.dumps(card))
    assert load_card(path).card_version == 2


def test_a_newer_run_record_is_refused(tmp_path: Path) -> None:
    from evalkit.records._run import read_run

    (tmp_path / "run.json").write_text(json.dumps({"format_version": 3}))
    with pytest.raises(MalformedFile, match=r"run.json: format_version 3 is newer"):
        read_run(tmp_path)


def test_a_newer_smoke_report_is_refused_by_plan(run_cli, tmp_path: Path) -> None:
    smoke = tmp_path / "smoke.json"
    smoke.write_text(json.dumps({"format_version": 9, "verdict": "pass", "settings": {}}))
    result = run_cli("plan", "--config", MODEL / "base", "--train-tokens", "1000",
                     "--eval-examples", "10", "--eval-new-tokens", "8",
                     "--measured", smoke, "--runs", "2", "--window", "1d")  # fmt: skip
    assert_one_line_error(result, f"{smoke}: format_version 9 is newer than this evalkit reads")


def test_a_newer_score_summary_is_refused_by_compare(tmp_path: Path) -> None:
    from evalkit.records._summary import read_summary

    path = tmp_path / "summary.json"
    path.write_text(json.dumps({"format_version": 2}))
    with pytest.raises(MalformedFile, match=r"format_version 2 is newer.*\(score summary 1\)"):
        read_summary(path)
