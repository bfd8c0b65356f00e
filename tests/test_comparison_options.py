"""compare's and gate's options: one object each, the shared fields defined once."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import CliResult, assert_one_line_error
from scored_results import write_result

import evalkit
from evalkit.comparison.api import compare, gate
from evalkit.comparison.options import CompareParams, ComparisonParams, GateParams
from evalkit.errors import ParameterError
from evalkit.records._compare import ComparisonOptions
from evalkit.report.json_report import render_json

CLASSES = ["billing"] * 40 + ["shipping"] * 30 + ["account"] * 24 + ["legal_threat"] * 6
IDS = [f"T{i:04d}" for i in range(len(CLASSES))]
BASE_WRONG = set(range(0, 8)) | set(range(40, 46)) | set(range(70, 75))


def _write(folder: Path, wrong: set[int]) -> Path:
    correct = [i not in wrong for i in range(len(IDS))]
    return write_result(folder, ids=IDS, classes=CLASSES, correct=correct)


@pytest.fixture
def runs(tmp_path: Path) -> list[Path]:
    return [
        _write(tmp_path / "baseline", BASE_WRONG),
        _write(tmp_path / "candidate-a", {0, 1, 40, 41, 70, 95, 96, 97, 98}),
        _write(tmp_path / "candidate-b", BASE_WRONG - {2, 3, 4}),
    ]


def _names(cls: type) -> list[str]:
    return [field.name for field in dataclasses.fields(cls)]


def test_every_compare_and_gate_option_is_a_field_of_its_options_object() -> None:
    """The click commands declare no option of their own beyond inputs and outputs."""
    from evalkit.cli.compare_cmd import compare_command
    from evalkit.cli.gate_cmd import gate_command

    compare_names = {param.name for param in compare_command.params}
    assert compare_names - set(_names(CompareParams)) == {
        "baseline", "candidates", "out", "json_path", "force", "quiet",
    }  # fmt: skip
    gate_names = {param.name for param in gate_command.params}
    assert gate_names - set(_names(GateParams)) == {
        "baseline", "candidate", "junit", "markdown", "html", "json_path", "force", "quiet",
    }  # fmt: skip
    # every field is an option (none is Python-only)
    assert set(_names(CompareParams)) <= compare_names
    assert set(_names(GateParams)) <= gate_names


def test_the_shared_options_are_defined_once() -> None:
    shared = _names(ComparisonParams)
    assert shared == ["seed", "resamples", "factors", "allow_base_change", "ledger"]
    assert _names(GateParams) == shared
    assert _names(CompareParams) == [*shared, "min_gain", "suspect_min_agree", "text"]
    for name in shared:  # the very same field objects, not copies
        inherited = CompareParams.__dataclass_fields__[name].metadata
        assert inherited is ComparisonParams.__dataclass_fields__[name].metadata
        assert GateParams.__dataclass_fields__[name].metadata is inherited


def test_gate_with_the_object_or_keywords_gives_the_same_report(runs: list[Path]) -> None:
    baseline, _, candidate = runs
    by_keywords = gate(baseline, candidate, seed=3, resamples=500, factors=[])
    by_object = gate(baseline, candidate, GateParams(seed=3, resamples=500))
    assert by_keywords.model_dump() == by_object.model_dump()
    # keywords change the object's fields
    changed = gate(baseline, candidate, GateParams(seed=9), seed=3, resamples=500)
    assert changed.model_dump() == gate(baseline, candidate, seed=3, resamples=500).model_dump()
    assert by_object.options == ComparisonOptions(seed=3, resamples=500, confidence=0.95)


def test_compare_with_the_object_or_keywords_gives_the_same_report(runs: list[Path]) -> None:
    options = {"seed": 2, "resamples": 300, "min_gain": 0.01, "suspect_min_agree": 2}
    by_keywords = compare(*runs, **options)
    by_object = compare(*runs, CompareParams(**options))  # type: ignore[arg-type]
    by_name = compare(*runs, params=CompareParams(**options))  # type: ignore[arg-type]
    assert by_keywords.model_dump() == by_object.model_dump() == by_name.model_dump()
    assert by_keywords.options == ComparisonOptions(seed=2, resamples=300, confidence=0.95)
    assert by_keywords.suspect_label_check is not None
    assert by_keywords.suspect_label_check.min_agree == 2
    default = compare(*runs).model_dump()
    assert compare(*runs, CompareParams()).model_dump() == default
    with pytest.raises(TypeError, match="two CompareParams"):
        compare(*runs, CompareParams(), params=CompareParams())
    with pytest.raises(TypeError, match="expected CompareParams, got GateParams"):
        compare(*runs, params=GateParams())  # type: ignore[arg-type]


def test_the_entries_show_their_options() -> None:
    for entry, cls in ((gate, GateParams), (compare, CompareParams)):
        parameters = inspect.signature(entry).parameters
        for field in dataclasses.fields(cls):
            assert parameters[field.name].kind is inspect.Parameter.KEYWORD_ONLY
            assert parameters[field.name].default == field.default
    assert list(inspect.signature(gate).parameters)[:3] == ["baseline", "candidate", "params"]
    assert inspect.signature(evalkit.compare) == inspect.signature(compare)
    with pytest.raises(TypeError, match="unexpected keyword argument 'factor'"):
        gate("b", "c", factor=["r"])


@pytest.mark.parametrize(
    ("cls", "values", "message"),
    [
        (GateParams, {"seed": -1}, "seed must be a whole number >= 0, got -1"),
        (GateParams, {"resamples": 10}, "resamples must be >= 100 for a 95% interval, got 10"),
        (GateParams, {"resamples": 2_000_000}, "resamples must be <= 1,000,000, got 2000000"),
        (CompareParams, {"min_gain": 1.5}, "min_gain must be an accuracy gain in [0, 1], got 1.5"),
        (
            CompareParams,
            {"min_gain": True},
            "min_gain must be an accuracy gain in [0, 1], got True",
        ),
        (CompareParams, {"suspect_min_agree": 1}, "suspect_min_agree must be >= 2 results, got 1"),
    ],
)
def test_a_refused_value_names_the_parameter(
    cls: type[ComparisonParams], values: dict[str, object], message: str
) -> None:
    with pytest.raises(ParameterError) as error:
        cls(**values)  # type: ignore[arg-type]
    assert str(error.value) == message


def test_python_values_are_kept_as_the_fields_type() -> None:
    given = CompareParams(factors=["r", "lora_alpha"], ledger="a/ledger.jsonl", min_gain=0)  # type: ignore[arg-type]
    assert given.factors == ("r", "lora_alpha")
    assert given.ledger == Path("a/ledger.jsonl")
    assert given.min_gain == 0.0 and isinstance(given.min_gain, float)
    assert GateParams(factors="r").factors == ("r",)  # type: ignore[arg-type]


def test_the_command_line_names_the_flag(
    runs: list[Path], run_cli: Callable[..., CliResult]
) -> None:
    baseline, _, candidate = runs
    result = run_cli("gate", baseline, candidate, "--resamples", "10")
    assert_one_line_error(result, "'--resamples': must be >= 100 for a 95% interval, got 10")
    result = run_cli("compare", baseline, candidate, "--min-gain", "2")
    assert_one_line_error(result, "'--min-gain': must be an accuracy gain in [0, 1], got 2.0")
    result = run_cli("compare", baseline, candidate, "--suspect-min-agree", "1")
    assert_one_line_error(result, "'--suspect-min-agree': must be >= 2 results, got 1")
    result = run_cli("gate", baseline, candidate, "--ledger", str(baseline))
    assert_one_line_error(result, "is a directory")


def test_the_command_passes_its_options_to_the_library(
    runs: list[Path], run_cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    baseline, cand_a, cand_b = runs
    out = tmp_path / "cli.json"
    args = ["--seed", 4, "--resamples", 200, "--min-gain", 0.5, "--suspect-min-agree", 2]
    result = run_cli("compare", baseline, cand_a, cand_b, *args, "--json", out)
    assert result.exit_code == 0, result.stderr
    expected = compare(
        baseline, cand_a, cand_b, seed=4, resamples=200, min_gain=0.5, suspect_min_agree=2
    )
    assert out.read_text() == render_json(expected)
    assert expected.decision.outcome == "no_sufficient_gain"  # min_gain reached the decision
    gate_out = tmp_path / "gate.json"
    result = run_cli("gate", baseline, cand_b, "--seed", 4, "--resamples", 200, "--json", gate_out)
    assert result.exit_code == 0, result.stderr
    assert gate_out.read_text() == render_json(gate(baseline, cand_b, seed=4, resamples=200))
