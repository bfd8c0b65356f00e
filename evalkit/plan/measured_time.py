"""Published training and generation times, and the plan's lower bound for each one's work.

A measurements CSV (``bench/plan_time_measurements.csv``) has one row per
published run: where it is (source repository, file, commit, row), the
model config, the GPU class of the table it ran on, the settings as ``evalkit
plan`` options, the work (training tokens, or the generation's examples,
prompt and new tokens) and the measured figure as printed, in seconds or in
tokens per second. A printed figure was rounded, so the bound is compared
with the shortest time it can stand for: the check never relies on rounding.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from evalkit.errors import MalformedFile
from evalkit.plan.config import load_model_shape
from evalkit.plan.flops import train_flops
from evalkit.plan.gpus import find
from evalkit.plan.options import resolve_options
from evalkit.plan.timing import SECONDS_PER_HOUR, eval_bound, train_hours
from evalkit.plan.work import EvalWork

UNITS = ("seconds", "tokens_per_second")
_OPTIONS = ("method", "r", "targets", "seq_len", "grad_checkpointing", "gpus", "eval_batch")
_INTEGER = {"r", "seq_len", "gpus", "eval_batch"}
_PARAMETER = {"eval_batch": "eval_batch_size"}  # the table's column -> the plan's parameter


@dataclass(frozen=True)
class CheckedTime:
    """One published run beside the plan's lower bound of its time."""

    row: dict[str, str]
    measured_seconds: float  # the shortest time the printed figure can stand for
    bound_seconds: float

    @property
    def ratio(self) -> float:
        """measured / bound: at least 1 when the bound holds; the inverse of the utilisation."""
        return self.measured_seconds / self.bound_seconds


def _half_step(text: str) -> Decimal:
    exponent = Decimal(text).as_tuple().exponent
    return Decimal(5) * Decimal(10) ** (exponent - 1) if isinstance(exponent, int) else Decimal(0)


def shortest_seconds(value: str, unit: str, work_tokens: int) -> float:
    """The least seconds a printed figure stands for: a time rounded down, a rate rounded up."""
    if unit not in UNITS:
        raise MalformedFile(f"unit {unit!r}: use one of {', '.join(UNITS)}")
    if unit == "seconds":
        return float(Decimal(value) - _half_step(value))
    return float(Decimal(work_tokens) / (Decimal(value) + _half_step(value)))


def _options(row: dict[str, str]) -> dict[str, Any]:
    options: dict[str, Any] = {}
    for column in _OPTIONS:
        text = row[column].strip()
        if not text:
            continue
        parameter = _PARAMETER.get(column, column)
        if column in _INTEGER:
            options[parameter] = int(text)
        elif column == "grad_checkpointing":
            options[parameter] = text.lower() == "true"
        else:
            options[parameter] = text
    return options


def _work_tokens(row: dict[str, str]) -> int:
    if row["phase"] == "train":
        return int(row["tokens"])
    return int(row["eval_examples"]) * int(row["eval_new_tokens"])


def check_time_row(row: dict[str, str], configs: Path) -> CheckedTime:
    """The plan's lower bound of the row's work on its GPU, beside the measured time."""
    shape = load_model_shape(configs / row["config"])
    options = resolve_options(shape, **_options(row))
    gpu = find(row["gpu"])
    if row["phase"] == "train":
        per_token = train_flops(shape, options).per_token
        hours = train_hours(int(row["tokens"]), per_token, gpu, options.gpus)
    else:
        work = EvalWork(
            examples=int(row["eval_examples"]),
            prompt_tokens=int(row["eval_prompt_tokens"]),
            new_tokens=int(row["eval_new_tokens"]),
            batch=options.eval_batch_size,
        )
        hours = eval_bound(shape, options, work, gpu).hours
    measured = shortest_seconds(row["measured"], row["unit"], _work_tokens(row))
    return CheckedTime(row, measured, hours * SECONDS_PER_HOUR)


def read_time_measurements(path: Path) -> list[dict[str, str]]:
    """The rows of a time measurements CSV."""
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def check_time_measurements(path: Path, configs: Path) -> list[CheckedTime]:
    """Every row of ``path`` with its bound; configs are ``configs/<config>/config.json``."""
    return [check_time_row(row, configs) for row in read_time_measurements(path)]
