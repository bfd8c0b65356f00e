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
import re
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
_UNITS = {"d": 24.0, "h": 1.0, "m": 1.0 / 60}


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


def gpu_rows(value: tuple[str, ...], parameter: str) -> tuple[str, ...]:
    """``--gpu``: every row parsed (and bounded) before any work; the rows are kept as given."""
    from evalkit.plan.gpus import registry

    registry(tuple(value))
    return value


def window(value: str, parameter: str) -> str:
    """``--window``: a duration from a minute up to ten years (checked, kept as written)."""
    parse_window(value)
    return value


def price(value: float, parameter: str) -> float:
    """``--price-per-hour``: from 0 up to :data:`MAX_PRICE_PER_HOUR`."""
    checked = check_price(value)
    assert checked is not None  # None is never checked: it means "no price"
    return checked


def recovery(value: float, parameter: str) -> float:
    """``--recovery``: a share of the window in [0, 1)."""
    return check_recovery(value)


def parse_window(text: str) -> float:
    """``--window``: ``7d``, ``36h``, ``90m`` (or ``1.5d``) -> hours."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([dhm])\s*", str(text))
    if not match:
        raise ParameterError("window", f"{text!r}: use a duration such as 7d, 36h or 90m")
    hours = float(match.group(1)) * _UNITS[match.group(2)]
    if not hours > 0:
        raise ParameterError("window", f"{text!r}: must be longer than zero")
    if not hours <= MAX_WINDOW_HOURS:  # 400 nines is an infinite window, not a rental
        raise ParameterError(
            "window", f"{text!r}: at most {MAX_WINDOW_HOURS:,.0f} h (ten years) can be rented"
        )
    return hours


def check_recovery(recovery: float) -> float:
    """``--recovery``: the share of the window kept for reruns, in [0, 1)."""
    if not (isinstance(recovery, float | int) and math.isfinite(recovery) and 0 <= recovery < 1):
        raise ParameterError("recovery", f"{recovery!r}: a share of the window from 0 to below 1")
    return float(recovery)


def check_price(price: float | None) -> float | None:
    """``--price-per-hour``: a non-negative number."""
    if price is None:
        return None
    if not (isinstance(price, float | int) and math.isfinite(price) and price >= 0):
        raise ParameterError("price_per_hour", f"{price!r}: must be a number of at least 0")
    if price > MAX_PRICE_PER_HOUR:  # 1e308 an hour made every cost infinite
        raise ParameterError(
            "price_per_hour", f"{price!r}: at most {MAX_PRICE_PER_HOUR:,.0f} an hour"
        )
    return float(price)
