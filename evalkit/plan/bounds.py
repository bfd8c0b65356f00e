"""The bounds on every count and figure a user gives ``evalkit plan``, checked before any work.

A plan is arithmetic, so an absurd input does not fail: it turns a result
into infinity, zero or nonsense that is then printed and written (a window
of 400 nines was an infinite window, a card of 1e-320 TFLOP/s infinite hours,
a price of 1e308 an infinite cost). Each figure is therefore checked where it
enters (the options objects' checks, so the library and the command line
refuse alike, naming the parameter) against a range no real plan leaves:
the limits are orders of magnitude beyond any run, so they refuse only typos
and attacks.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from numbers import Integral, Real
from typing import Any

from evalkit.errors import ParameterError

MAX_TRAIN_TOKENS = 10**15  # the largest pretraining runs are ~10^13 tokens
MAX_EPOCHS = 10_000.0
MAX_EXAMPLES = 10**12
MAX_TOKENS = 2**24  # tokens of one sequence (16.8M; the longest contexts are ~10M)
MAX_BATCH = 2**20
MAX_RANK = 2**20
MAX_GPUS = 4096
MAX_RUNS = 100_000
MAX_WINDOW_HOURS = 87_600.0  # ten years
MAX_PRICE_PER_HOUR = 1_000_000.0
MAX_SAVE_EVERY = 10**9  # optimizer steps between checkpoints
MAX_SAVE_TOTAL_LIMIT = 10_000
MAX_LOST_MINUTES = 1_000_000.0


def count(maximum: int, unit: str) -> Callable[[Any, str], int]:
    """A check of a whole number from 1 to ``maximum`` (``unit`` names what it counts)."""

    def check(value: Any, parameter: str) -> int:
        if isinstance(value, bool) or not isinstance(value, Integral) or int(value) < 1:
            raise ParameterError(parameter, f"must be a positive number of {unit}, got {value!r}")
        if int(value) > maximum:
            raise ParameterError(
                parameter, f"must be a positive number of {unit} up to {maximum:,}, got {value!r}"
            )
        return int(value)

    return check


def figure(
    low: float, high: float, what: str, *, low_open: bool = True
) -> Callable[[Any, str], float]:
    """A check of a finite number in ``(low, high]`` (``[low, high]`` when not ``low_open``)."""

    def check(value: Any, parameter: str) -> float:
        number = float(value) if isinstance(value, Real) and not isinstance(value, bool) else None
        above = number is not None and (number > low if low_open else number >= low)
        if number is None or not math.isfinite(number) or not above or number > high:
            side = "above" if low_open else "from"
            raise ParameterError(
                parameter,
                f"must be {what}: a finite number {side} {low:g} and up to {high:,g}, "
                f"got {value!r}",
            )
        return number

    return check


def finite_positive(value: Any, field: str) -> float:
    """A measured figure (a rate, a duration) that a real run can have produced: finite, > 0."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise ValueError(f"{field} is {value!r}, not a number")
    number = float(value)
    if not math.isfinite(number) or number <= 0:
        raise ValueError(f"{field} is {value!r}: a measured figure must be finite and above 0")
    return number
