"""Function calling through compare and the gate: a rare tool a candidate stops calling.

The walkthrough's data end to end, on the command line: the tickets' first
moves (``generate.py --format calls``), ``evalkit prompts``, SIMULATED answers
of a baseline (structured calls in a Batch output) and two candidates (raw
Qwen-syntax text, as ``evalkit generate`` writes it), ``score``, ``compare`` and
``gate``. The figures the gate judges by are recomputed here from the two
``examples.parquet`` files: the flips and statsmodels' exact McNemar test.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import polars as pl
import pytest
from conftest import CliResult
from statsmodels.stats.contingency_tables import mcnemar

ROOT = Path(__file__).resolve().parents[1]
CONTRACT = ROOT / "contracts" / "ticket-tool-calls.yaml"
sys.path.insert(0, str(ROOT / "examples" / "tickets"))

from generate import call_conversations, generate  # noqa: E402


def _module(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        name, ROOT / "examples" / "tickets" / f"{name}.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three scored results of the first-move tickets (every 7th of 1,200: 172 items)."""
    from click.testing import CliRunner

    from evalkit.cli import cli

    folder = tmp_path_factory.mktemp("calls")
    rows = call_conversations(generate(1200, 7), 7)[::7]
    gold = folder / "test.jsonl"
    gold.write_text("".join(json.dumps(row) + "\n" for row in rows))
    runner = CliRunner()

    def run(*args: object) -> None:
        result = runner.invoke(cli, [str(arg) for arg in args], catch_exceptions=False)
        assert result.exit_code == 0, result.output

    requests = folder / "requests.jsonl"
    run("prompts", gold, "--id", "ticket_id", "--text", "messages", "--out", requests,
        "--model", "ticket-tools", "--quiet")  # fmt: skip
    simulate = _module("simulate_tool_calls")
    lines = [json.loads(line) for line in gold.read_text().splitlines()]
    asked = [json.loads(line) for line in requests.read_text().splitlines()]
    for name, records in simulate.simulate(lines, asked, 11).items():
        (folder / name).write_text("".join(json.dumps(r) + "\n" for r in records))
    for model, file in (
        ("baseline", "baseline.batch-output.jsonl"),
        ("candidate-a", "candidate-a.jsonl"),
        ("candidate-b", "candidate-b.jsonl"),
    ):
        run("score", "--contract", CONTRACT, "--gold", gold, "--pred", folder / file,
            "--out", folder / model, "--name", model, "--quiet")  # fmt: skip
    return folder


def _examples(folder: Path) -> pl.DataFrame:
    return pl.read_parquet(folder / "examples.parquet")


def test_the_rare_tool_is_a_rare_class_and_the_baseline_calls_it(scored: Path) -> None:
    summary = json.loads((scored / "baseline" / "summary.json").read_text())
    legal = summary["classes"]["escalate_to_legal"]
    assert legal["rare"] and 1 <= legal["support"] <= 10
    assert legal["content_accuracy"] >= 0.5
    assert summary["predictions"]["format"] == "openai-batch"
    assert summary["contract"]["evaluator"]["tool_calls"]["semantics_version"] == 1
    syntax = _examples(scored / "baseline")["syntax"].drop_nulls().unique().to_list()
    assert syntax == ["structured"]
    assert set(_examples(scored / "candidate-a")["syntax"].drop_nulls().to_list()) == {"qwen"}


def test_gate_blocks_the_candidate_that_stops_calling_the_rare_tool(
    scored: Path, run_cli: Callable[..., CliResult]
) -> None:
    result = run_cli("gate", scored / "baseline", scored / "candidate-a")
    assert result.exit_code == 1, result.stdout + result.stderr
    assert "max_rare_class_drop @ class:escalate_to_legal" in result.stdout
    compared = run_cli(
        "compare", scored / "baseline", scored / "candidate-a", "--out", scored / "cmp-a"
    )
    assert compared.exit_code == 0
    report = json.loads((scored / "cmp-a" / "report.json").read_text())
    comparison = report["comparisons"][0] if "comparisons" in report else report
    failures = [(f["rule"], f["scope"]) for f in comparison["failures"]]
    assert failures == [("max_rare_class_drop", "class:escalate_to_legal")]
    base, cand = _examples(scored / "baseline"), _examples(scored / "candidate-a")
    paired = base.join(cand, on="id", suffix="_c").filter(pl.col("class") == "escalate_to_legal")
    negative = paired.filter(pl.col("content_correct") & ~pl.col("content_correct_c"))
    positive = paired.filter(~pl.col("content_correct") & pl.col("content_correct_c"))
    legal = comparison["classes"]["escalate_to_legal"]
    assert legal["negative_flips"] == negative.height == paired["content_correct"].sum() > 0
    assert legal["positive_flips"] == positive.height == 0
    both = paired.filter(pl.col("content_correct") & pl.col("content_correct_c")).height
    neither = paired.filter(~pl.col("content_correct") & ~pl.col("content_correct_c")).height
    table = [[both, negative.height], [positive.height, neither]]
    assert legal["mcnemar_p"] == pytest.approx(mcnemar(table, exact=True).pvalue, rel=1e-12)
    assert set(cand.filter(pl.col("class") == "escalate_to_legal")["error"]) == {"no_call"}


def test_gate_passes_the_candidate_that_does_not_regress(
    scored: Path, run_cli: Callable[..., CliResult]
) -> None:
    result = run_cli("gate", scored / "baseline", scored / "candidate-b")
    assert result.exit_code == 0, result.stdout + result.stderr
    assert result.stdout.startswith("PASS")


def test_compare_lists_suspects_and_writes_the_html_report(
    scored: Path, run_cli: Callable[..., CliResult]
) -> None:
    folders = [scored / name for name in ("baseline", "candidate-a", "candidate-b")]
    result = run_cli("compare", *folders, "--out", scored / "cmp")
    assert result.exit_code == 0, result.stderr
    report = json.loads((scored / "cmp" / "report.json").read_text())
    assert report["suspect_labels"] == [] or isinstance(report["suspect_labels"], list)
    html = (scored / "cmp" / "report.html").read_text()
    assert "escalate_to_legal" in html
    assert "escalate_to_legal" in (scored / "baseline" / "report.html").read_text()


def test_rescore_under_a_new_contract_equals_scoring_from_scratch(
    scored: Path, run_cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    strict = tmp_path / "strict.yaml"
    strict.write_text(
        CONTRACT.read_text()
        .replace("version: 1", "version: 2")
        .replace("arguments.order_id: {match: normalized}", "arguments.order_id: {match: exact}")
    )
    result = run_cli(
        "rescore", scored / "candidate-b", "--contract", strict, "--out", tmp_path / "re",
        "--no-ledger", "--quiet",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    fresh = run_cli(
        "score", "--contract", strict, "--gold", scored / "test.jsonl", "--pred",
        scored / "candidate-b.jsonl", "--out", tmp_path / "fresh", "--name", "candidate-b",
        "--no-ledger", "--quiet",
    )  # fmt: skip
    assert fresh.exit_code == 0, fresh.stderr
    again = (tmp_path / "re" / "candidate-b" / "examples.parquet").read_bytes()
    assert again == (tmp_path / "fresh" / "examples.parquet").read_bytes()
    before = _examples(scored / "candidate-b")["content_correct"].sum()
    after = pl.read_parquet(tmp_path / "fresh" / "examples.parquet")["content_correct"].sum()
    assert after < before  # lower-cased order ids no longer match
