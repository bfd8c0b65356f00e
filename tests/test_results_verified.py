"""Results are verified when read: a summary that disagrees with its examples is refused.

``compare`` and ``gate`` recompute what they use (per-class support and
rarity, accuracy, validity, slices) from ``examples.parquet`` and the
contract, and check ``examples.parquet`` against the sha256 ``summary.json``
records. Each edit below changed a verdict or a figure before, silently.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pytest
from conftest import assert_one_line_error

ROOT = Path(__file__).resolve().parents[1]
TRIAGE = ROOT / "contracts" / "ticket-triage.yaml"


def _answer(category: str) -> str:
    return json.dumps({"category": category, "priority": "low", "order_id": None, "amount": None})


@pytest.fixture
def runs(tmp_path, run_cli) -> tuple[Path, Path]:
    """A baseline and a candidate that improves overall but files every rare legal_threat wrong.

    55 billing and 5 legal_threat tickets (rare: at most 10). The candidate
    fails ``max_rare_class_drop`` on legal_threat; judged as a common class,
    5 flips are not significant (McNemar p = 0.0625) and it would pass.
    """
    classes = ["billing"] * 55 + ["legal_threat"] * 5
    ids = [f"T{i:02d}" for i in range(60)]
    pl.DataFrame({
        "ticket_id": ids, "category": classes, "priority": ["low"] * 60,
        "order_id": [None] * 60, "amount": [None] * 60,
    }, schema_overrides={"order_id": pl.String, "amount": pl.Float64}).write_parquet(
        tmp_path / "test.parquet")  # fmt: skip
    baseline = [c if c == "legal_threat" or i % 4 else "account" for i, c in enumerate(classes)]
    candidate = ["billing"] * 60
    for name, answers in (("baseline", baseline), ("candidate", candidate)):
        rows = [{"ticket_id": i, "output": _answer(a)} for i, a in zip(ids, answers, strict=True)]
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        done = run_cli("score", "--contract", TRIAGE, "--gold", tmp_path / "test.parquet",
                       "--pred", tmp_path / f"{name}.jsonl", "--out", tmp_path / name)  # fmt: skip
        assert done.exit_code == 0, done.stderr
    return tmp_path / "baseline", tmp_path / "candidate"


def edit(folder: Path, change: Callable[[dict], None]) -> None:
    summary = json.loads((folder / "summary.json").read_text())
    change(summary)
    (folder / "summary.json").write_text(json.dumps(summary, indent=2))


def test_the_candidate_fails_on_its_rare_class(run_cli, runs) -> None:
    gate = run_cli("gate", *runs)
    assert gate.exit_code == 1
    assert "✗ max_rare_class_drop @ class:legal_threat" in gate.stdout


def test_a_rare_flag_turned_off_in_the_baseline_is_refused(run_cli, runs) -> None:
    baseline, candidate = runs
    edit(baseline, lambda s: s["classes"]["legal_threat"].update(rare=False))
    assert_one_line_error(
        run_cli("gate", baseline, candidate),
        f"{baseline / 'summary.json'}: classes.legal_threat.rare is false, but examples.parquet "
        "and the contract give true",
        "re-run evalkit score",
    )
    assert_one_line_error(run_cli("compare", baseline, candidate), "classes.legal_threat.rare")


@pytest.mark.parametrize(
    ("change", "key"),
    [
        (lambda s: s["classes"]["legal_threat"].update(support=11), "legal_threat.support"),
        (lambda s: s["classes"].pop("legal_threat"), "classes.legal_threat is missing"),
        (lambda s: s["classes"].update(fraud=s["classes"]["billing"]), "classes.fraud is there"),
        (lambda s: s["overall"].update(content_accuracy=0.99), "overall.content_accuracy is"),
        (lambda s: s["overall"].update(format_valid=59), "overall.format_valid is 59"),
        (lambda s: s["slices"]["no-order-id"].update(n=3), "slices.no-order-id.n is 3"),
        (lambda s: s.pop("classes"), "missing key 'classes'"),  # the model's own check
    ],
)  # fmt: skip
def test_an_edited_figure_is_refused_naming_it(run_cli, runs, change, key) -> None:
    baseline, candidate = runs
    edit(candidate, change)
    assert_one_line_error(run_cli("gate", baseline, candidate), str(candidate), key)


def test_a_swapped_examples_file_is_refused(run_cli, runs) -> None:
    baseline, candidate = runs
    shutil.copy(baseline / "examples.parquet", candidate / "examples.parquet")
    assert_one_line_error(
        run_cli("gate", baseline, candidate),
        f"{candidate / 'examples.parquet'}: its sha256",
        "is not the", "that summary.json records",
    )  # fmt: skip


def test_without_the_recorded_hash_the_figures_still_decide(run_cli, runs) -> None:
    baseline, candidate = runs
    shutil.copy(baseline / "examples.parquet", candidate / "examples.parquet")
    edit(candidate, lambda s: s.pop("examples_sha256"))
    assert_one_line_error(run_cli("gate", baseline, candidate), "overall.content_correct")


def test_a_result_as_written_is_read_with_its_hash(runs) -> None:
    from evalkit import load_result
    from evalkit.io import sha256_file

    result = load_result(runs[1])
    summary = json.loads((runs[1] / "summary.json").read_text())
    assert result.examples_sha256 == summary["examples_sha256"]
    assert result.examples_sha256 == sha256_file(runs[1] / "examples.parquet")
    assert summary["look"]["line"] == 2 and summary["classes"]["legal_threat"]["rare"] is True
