"""What the HTML report shows beyond the statistics, checked against independent computations.

Confusion matrices against scikit-learn's ``confusion_matrix``; error counts
against ``collections.Counter``; flips and their selection against Python
sets built from each side's ``examples.parquet``; outputs against the
predictions file read with ``json``.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from simulated_runs import scored_run
from sklearn.metrics import confusion_matrix

from evalkit import CandidateReport, gate
from evalkit.comparison.breakdown import NEGATIVE_FLIPS_PER_CLASS, POSITIVE_FLIPS_PER_CLASS
from evalkit.comparison.outputs import flip_outputs

NONE = "\0none"  # stands for "no class predicted" in the reference matrices


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("runs")
    return {
        "baseline": scored_run(folder, "baseline", seed=1, error_rate=0.4),
        "candidate": scored_run(folder, "candidate", seed=2, error_rate=0.25),
    }


@pytest.fixture(scope="module")
def report(runs: dict[str, Path]) -> CandidateReport:
    return gate(runs["baseline"], runs["candidate"], resamples=200)


def examples(folder: Path) -> pl.DataFrame:
    return pl.read_parquet(folder / "examples.parquet").sort("id")


def reference_matrix(frame: pl.DataFrame, labels: list[str]) -> np.ndarray:
    gold = frame["class"].to_list()
    predicted = [NONE if p is None else p for p in frame["predicted_class"].to_list()]
    return confusion_matrix(gold, predicted, labels=[*labels, NONE])


def matrix_of(cells: list[tuple[str, str | None, int]], labels: list[str]) -> np.ndarray:
    index = {label: i for i, label in enumerate([*labels, NONE])}
    matrix = np.zeros((len(index), len(index)), dtype=int)
    for gold, predicted, count in cells:
        matrix[index[gold], index[NONE if predicted is None else predicted]] += count
    return matrix


def test_score_summary_confusion_matches_scikit_learn(runs: dict[str, Path]) -> None:
    summary = json.loads((runs["baseline"] / "summary.json").read_text())
    confusion = summary["confusion"]
    frame = examples(runs["baseline"])
    labels = confusion["labels"]
    assert labels == sorted(set(frame["class"]) | set(frame["predicted_class"].drop_nulls()))
    cells = [(c["gold"], c["predicted"], c["count"]) for c in confusion["cells"]]
    assert all(count > 0 for _, _, count in cells)
    np.testing.assert_array_equal(matrix_of(cells, labels), reference_matrix(frame, labels))
    # A class no gold item has is a column of its own.
    assert "product_question" in labels and "product_question" not in set(frame["class"])


def test_score_error_examples_carry_their_reason(runs: dict[str, Path]) -> None:
    summary = json.loads((runs["baseline"] / "summary.json").read_text())
    frame = examples(runs["baseline"])
    for category, stats in summary["errors"].items():
        rows = frame.filter(pl.col("error") == category)
        first = rows.row(0, named=True)
        assert stats["example_id"] == first["id"]
        assert stats["example_detail"] == first["error_detail"] is not None
        assert stats["count"] == rows.height
    assert {"missing", "invalid_json", "no_json", "empty"} <= set(summary["errors"])


def test_comparison_confusion_matches_scikit_learn_on_both_sides(
    report: CandidateReport, runs: dict[str, Path]
) -> None:
    confusion = report.confusion
    assert confusion is not None
    for side in ("baseline", "candidate"):
        frame = examples(runs[side])
        cells = [(c.gold, c.predicted, getattr(c, side)) for c in confusion.cells]
        np.testing.assert_array_equal(
            matrix_of(cells, confusion.labels), reference_matrix(frame, confusion.labels)
        )
    assert all(c.change == c.candidate - c.baseline for c in confusion.cells)
    assert all(c.baseline or c.candidate for c in confusion.cells)


def test_format_errors_count_each_side_with_one_example(
    report: CandidateReport, runs: dict[str, Path]
) -> None:
    base, cand = examples(runs["baseline"]), examples(runs["candidate"])
    base_counts = Counter(base["error"].drop_nulls().to_list())
    cand_counts = Counter(cand["error"].drop_nulls().to_list())
    shown = {e.category: e for e in report.format_errors}
    assert set(shown) == set(base_counts) | set(cand_counts)
    for category, error in shown.items():
        assert (error.baseline, error.candidate) == (base_counts[category], cand_counts[category])
        frame = cand if error.example_side == "candidate" else base
        rows = frame.filter(pl.col("error") == category)
        assert error.example_id == rows["id"][0]
        assert error.detail == rows["error_detail"][0]
        assert (error.example_side == "candidate") == (error.candidate > 0)
    counts = [e.candidate for e in report.format_errors]
    assert counts == sorted(counts, reverse=True)


def test_flips_are_flips_a_few_of_every_class(
    report: CandidateReport, runs: dict[str, Path]
) -> None:
    base, cand = examples(runs["baseline"]), examples(runs["candidate"])
    right_before = dict(zip(base["id"], base["content_correct"], strict=True))
    right_after = dict(zip(cand["id"], cand["content_correct"], strict=True))
    gold = dict(zip(base["id"], base["class"], strict=True))
    negative = {i for i in right_before if right_before[i] and not right_after[i]}
    positive = {i for i in right_before if not right_before[i] and right_after[i]}
    for direction, truth, per_class in (
        ("negative", negative, NEGATIVE_FLIPS_PER_CLASS),
        ("positive", positive, POSITIVE_FLIPS_PER_CLASS),
    ):
        shown = [f for f in report.flips if f.direction == direction]
        assert shown and {f.id for f in shown} <= truth
        for label in {gold[i] for i in truth}:
            expected = sorted(i for i in truth if gold[i] == label)[:per_class]
            assert [f.id for f in shown if f.gold_class == label] == expected
    for flip in report.flips:
        assert flip.rare == report.classes[flip.gold_class].rare
        before = base.filter(pl.col("id") == flip.id).row(0, named=True)
        assert flip.baseline_predicted_class == before["predicted_class"]
        assert (flip.baseline_category is None) == before["content_correct"]


def test_outputs_are_read_back_from_the_predictions_file(
    report: CandidateReport, runs: dict[str, Path]
) -> None:
    found = flip_outputs([report])[report.candidate.name]
    assert found.baseline.note is None and found.candidate.note is None
    summary = json.loads((runs["candidate"] / "summary.json").read_text())
    lines = Path(summary["predictions"]["path"]).read_text().splitlines()
    truth = {r["ticket_id"]: r["output"] for r in map(json.loads, lines)}
    assert {f.id for f in report.flips} <= set(found.candidate.outputs)
    for example_id, text in found.candidate.outputs.items():
        assert text == truth.get(example_id)


def test_outputs_are_not_shown_when_the_predictions_changed(tmp_path: Path) -> None:
    folder = tmp_path / "copy"
    for side in ("baseline", "candidate"):
        scored_run(folder, side, seed={"baseline": 1, "candidate": 2}[side], error_rate=0.3)
    report = gate(folder / "baseline", folder / "candidate", resamples=200)
    (folder / "baseline.jsonl").write_text((folder / "baseline.jsonl").read_text() + "\n")
    (folder / "candidate.jsonl").unlink()
    found = flip_outputs([report])["candidate"]
    assert found.baseline.outputs == {} and "changed since it was scored" in found.baseline.note
    assert found.candidate.outputs == {} and "not found" in found.candidate.note
