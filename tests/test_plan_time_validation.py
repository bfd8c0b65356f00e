"""The time bounds against published measured runs (bench/plan_time_measurements.csv).

Every row is a published run with its source file, commit and row, its
GPU, settings and work; the plan's lower bound of its time must never exceed
the shortest time its printed figure can stand for. The median measured /
bound is the share of the peak people really get (recorded in docs/plan.md
and bench/RESULTS.md), not a target: this test only keeps it a bound.
"""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest

from evalkit.plan.measured_time import check_time_measurements, shortest_seconds

ROOT = Path(__file__).resolve().parents[1]
MEASUREMENTS = ROOT / "bench" / "plan_time_measurements.csv"
CONFIGS = ROOT / "examples" / "plan"


@pytest.fixture(scope="module")
def checked():
    return check_time_measurements(MEASUREMENTS, CONFIGS)


def test_enough_runs_from_enough_sources(checked) -> None:
    train = [row for row in checked if row.row["phase"] == "train"]
    assert len(train) >= 20
    assert len({row.row["source"] for row in train}) >= 2
    assert {row.row["gpu"] for row in checked} >= {"A100 SXM 80GB", "L40S", "A100 SXM 40GB"}
    assert any(row.row["phase"] == "eval" for row in checked)
    for row in checked:
        assert row.row["file"] and row.row["row"] and len(row.row["commit"]) == 40


def test_the_bound_never_exceeds_a_measured_time(checked) -> None:
    over = [(row.row["id"], row.bound_seconds, row.measured_seconds) for row in checked
            if row.bound_seconds > row.measured_seconds]  # fmt: skip
    assert over == []


def test_the_recorded_median_utilisation(checked) -> None:
    """docs/plan.md records the median measured/bound of the training rows: 1.98."""
    ratios = [row.ratio for row in checked if row.row["phase"] == "train"]
    assert round(statistics.median(ratios), 2) == 1.98


def test_mlperf_lora_on_eight_cards_of_four_kinds(checked) -> None:
    """MLPerf Training's Llama-2-70B LoRA on 8 H100, H200, MI300X and MI325X: one run each,
    3,072 samples of 8,192 tokens to the target; the bound stays below every one."""
    mlperf = {row.row["gpu"]: row for row in checked if row.row["id"].startswith("mlperf-")}
    assert set(mlperf) == {"H100 SXM 80GB", "H200 SXM 141GB", "MI300X", "MI325X"}
    for row in mlperf.values():
        assert row.row["gpus"] == "8" and int(row.row["tokens"]) == 3072 * 8192
        assert 1 < row.ratio < 3, row.row["id"]
    # The same work on the same peak: MI300X and MI325X share a bound; so do H100 and H200.
    assert mlperf["MI300X"].bound_seconds == mlperf["MI325X"].bound_seconds
    assert mlperf["H100 SXM 80GB"].bound_seconds == mlperf["H200 SXM 141GB"].bound_seconds


@pytest.mark.parametrize(
    ("value", "unit", "tokens", "expected"),
    [
        ("534.9538", "seconds", 0, 534.95375),
        ("30.97", "tokens_per_second", 50, 50 / 30.975),
        ("3062.694", "tokens_per_second", 1_638_400, 1_638_400 / 3062.6945),
        ("1812.9714026906222", "seconds", 0, 1812.97140269062215),
    ],
)
def test_a_printed_figure_stands_for_its_shortest_time(value, unit, tokens, expected) -> None:
    assert shortest_seconds(value, unit, tokens) == pytest.approx(expected, rel=1e-12)
