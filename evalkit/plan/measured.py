"""Published peak-memory measurements, and the plan's bound for each one's settings.

A measurements CSV (``bench/plan_measurements.csv``) has one row per
published run: where it is (source repository, file, commit, row), the
settings as ``evalkit plan`` options, and the measured peak as printed
(``21.30`` GB, ``60.0`` GiB, or bytes). A printed figure was rounded, so a
bound is compared with the smallest value that rounds to it: the check
never relies on rounding up.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from evalkit.errors import MalformedFile
from evalkit.plan.api import phase_bounds
from evalkit.plan.config import load_model_shape
from evalkit.plan.options import resolve_options

UNITS = {"bytes": 1, "GB": 10**9, "GiB": 2**30}
_OPTION_COLUMNS = (
    "method",
    "r",
    "targets",
    "quant",
    "kbit_prep",
    "seq_len",
    "batch",
    "grad_checkpointing",
    "optimizer",
    "precision",
    "attention",
    "gpus",
    "eval_batch",
    "eval_tokens",
)
_INTEGER = {"r", "seq_len", "batch", "gpus", "eval_batch", "eval_tokens"}
_BOOLEAN = {"kbit_prep", "grad_checkpointing"}
# The measurements' columns keep their names; the plan's parameters are spelled these ways.
_PARAMETER = {"batch": "batch_size", "eval_batch": "eval_batch_size"}


@dataclass(frozen=True)
class Checked:
    """One measurement beside the plan's bound for its phase."""

    row: dict[str, str]
    measured_bytes: int  # the smallest value the printed figure can stand for
    bound_bytes: int

    @property
    def ratio(self) -> float:
        """bound / measured: at most 1 when the bound holds."""
        return self.bound_bytes / self.measured_bytes


def measured_lower_end(value: str, unit: str) -> int:
    """Bytes of the smallest figure that prints as ``value`` in ``unit``."""
    if unit not in UNITS:
        raise MalformedFile(f"unit {unit!r}: use one of {', '.join(UNITS)}")
    number = Decimal(value)
    exponent = number.as_tuple().exponent
    half_step = Decimal(5) * Decimal(10) ** (exponent - 1) if isinstance(exponent, int) else 0
    return int((number - half_step) * UNITS[unit]) if unit != "bytes" else int(number)


def _options(row: dict[str, str]) -> dict[str, Any]:
    options: dict[str, Any] = {}
    for column in _OPTION_COLUMNS:
        text = row[column].strip()
        if not text:
            continue
        parameter = _PARAMETER.get(column, column)
        if column in _INTEGER:
            options[parameter] = int(text)
        elif column in _BOOLEAN:
            options[parameter] = text.lower() == "true"
        else:
            options[parameter] = text
    return options


def check_row(row: dict[str, str], configs: Path) -> Checked:
    """The plan's bound for the row's phase, beside the row's measured peak."""
    shape = load_model_shape(configs / row["config"])
    bound = phase_bounds(shape, resolve_options(shape, **_options(row)))[row["phase"]]
    return Checked(row, measured_lower_end(row["measured"], row["unit"]), bound)


def read_measurements(path: Path) -> list[dict[str, str]]:
    """The rows of a measurements CSV."""
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def check_measurements(path: Path, configs: Path) -> list[Checked]:
    """Every row of ``path`` with its bound; configs are ``configs/<config>/config.json``."""
    return [check_row(row, configs) for row in read_measurements(path)]
