"""The simulated predictions of the walkthrough have the promised shape when scored."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import polars as pl
import pytest

from evalkit import score

ROOT = Path(__file__).resolve().parents[1]
TICKETS = ROOT / "examples" / "tickets" / "tickets.jsonl"
TRIAGE = ROOT / "contracts" / "ticket-triage.yaml"


def _simulator() -> ModuleType:
    path = ROOT / "examples" / "tickets" / "simulate_predictions.py"
    spec = importlib.util.spec_from_file_location("simulate_predictions", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def summaries(tmp_path_factory: pytest.TempPathFactory) -> dict:
    folder = tmp_path_factory.mktemp("simulated")
    gold = pl.read_ndjson(TICKETS)
    gold.write_parquet(folder / "gold.parquet")
    records = _simulator().simulate(gold, seed=11)
    result = {}
    for model, rows in records.items():
        path = folder / f"{model}.jsonl"
        path.write_text("".join(json.dumps(row) + "\n" for row in rows))
        result[model] = score(TRIAGE, folder / "gold.parquet", path).summary
    return result


def test_baseline_shows_every_kind_of_format_failure(summaries: dict) -> None:
    baseline = summaries["baseline"]
    assert set(baseline.errors) == {
        "missing", "empty", "no_json", "invalid_json", "schema:enum", "schema:required",
    }  # fmt: skip
    assert 0.75 < (baseline.overall.format_validity or 0) < 0.92
    assert 0.55 < (baseline.overall.content_accuracy or 0) < 0.75


def test_candidate_a_hides_a_rare_class_regression_behind_a_better_average(summaries) -> None:
    baseline, candidate = summaries["baseline"], summaries["candidate-a"]
    assert candidate.overall.content_accuracy > baseline.overall.content_accuracy + 0.1
    assert candidate.overall.format_validity > baseline.overall.format_validity
    assert candidate.classes["legal_threat"].content_accuracy == 0.0
    assert baseline.classes["legal_threat"].content_accuracy > 0.4
    assert candidate.overall.missing == 0


def test_candidate_b_improves_without_breaking_anything(summaries: dict) -> None:
    baseline, candidate = summaries["baseline"], summaries["candidate-b"]
    assert candidate.overall.content_accuracy >= 0.8
    assert candidate.overall.format_validity >= 0.95
    assert candidate.overall.missing == 0
    for label, stats in baseline.classes.items():
        assert candidate.classes[label].content_accuracy >= stats.content_accuracy, label
    for name, stats in baseline.slices.items():
        assert candidate.slices[name].content_accuracy >= stats.content_accuracy, name


def test_simulation_is_seeded_and_order_free() -> None:
    simulator = _simulator()
    gold = pl.read_ndjson(TICKETS).head(300)
    first = simulator.simulate(gold, seed=3)
    assert simulator.simulate(gold.reverse(), seed=3) == first
    assert simulator.simulate(gold, seed=4) != first
