"""The bounds against published measured peaks (bench/plan_measurements.csv).

Every row is a run that succeeded, with its source file, commit and row; the
bound of its phase must never exceed the smallest value its printed figure
can stand for, and the bounds must stay close enough to plan with: the
median bound/measured of the train rows is at least 0.80.
"""

from __future__ import annotations

import statistics
from decimal import Decimal
from pathlib import Path

import pytest

from evalkit.plan.measured import check_measurements, measured_lower_end

ROOT = Path(__file__).resolve().parents[1]
MEASUREMENTS = ROOT / "bench" / "plan_measurements.csv"
CONFIGS = ROOT / "examples" / "plan"


@pytest.fixture(scope="module")
def checked():
    return check_measurements(MEASUREMENTS, CONFIGS)


def test_enough_measurements_from_enough_sources(checked) -> None:
    train = [row for row in checked if row.row["phase"] == "train"]
    assert len(train) >= 10
    assert len({row.row["source"] for row in train}) >= 2
    for row in checked:
        assert row.row["file"] and row.row["row"] and len(row.row["commit"]) == 40


def test_the_bound_never_exceeds_a_measured_peak(checked) -> None:
    over = [
        (row.row["id"], row.bound_bytes, row.measured_bytes)
        for row in checked
        if row.bound_bytes > row.measured_bytes
    ]
    assert over == []


def test_the_median_train_ratio_is_at_least_080(checked) -> None:
    ratios = [row.ratio for row in checked if row.row["phase"] == "train"]
    assert statistics.median(ratios) >= 0.80


def test_trainable_counts_in_the_sources_match_the_formula(checked) -> None:
    from evalkit.plan.config import load_model_shape
    from evalkit.plan.counts import lora_parameters

    # litgpt's table prints 4,194,304 (7B) and 6,553,600 (13B) for r=8 on q and v;
    # PEFT's results print 9,175,040 and 9,461,760 for Llama-3.2-3B.
    published = {
        ("llama-2-7b", "q_proj,v_proj", 8): 4_194_304,
        ("llama-2-13b", "q_proj,v_proj", 8): 6_553_600,
        ("llama-3.2-3b", "q_proj,v_proj", 32): 9_175_040,
        ("llama-3.2-3b", "gate_proj,up_proj,down_proj", 10): 9_461_760,
    }
    for (config, targets, rank), count in published.items():
        shape = load_model_shape(CONFIGS / config)
        assert lora_parameters(shape, tuple(targets.split(",")), rank) == count


@pytest.mark.parametrize(
    ("value", "unit", "expected"),
    [
        ("21.30", "GB", 21_295_000_000),
        ("60.0", "GiB", int(Decimal("59.95") * 2**30)),
        ("72434837504", "bytes", 72_434_837_504),
    ],
)
def test_a_printed_figure_stands_for_its_smallest_rounding(value, unit, expected) -> None:
    assert measured_lower_end(value, unit) == expected
