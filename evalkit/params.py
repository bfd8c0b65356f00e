"""Checks of parameter values shared by the library and the command line.

Each check is defined once, here. A library entry calls it on its
arguments; the command line's options call the same function while click
parses the line (:func:`evalkit.cli._vocabulary.checked`), so ``--near-dup
1.5`` is refused before anything is read, with the library's words and the
flag's name: one definition, one message, whichever way evalkit is called.
The errors name parameters (``near_dup``), never flags.
"""

from __future__ import annotations

from numbers import Integral, Real

from evalkit.errors import ParameterError


def _is_int(value: object) -> bool:
    return isinstance(value, Integral) and not isinstance(value, bool)


def seed(value: object, parameter: str = "seed") -> int:
    """A random seed: a whole number >= 0 (numpy refuses negative seeds)."""
    if not _is_int(value) or int(value) < 0:  # type: ignore[call-overload]
        raise ParameterError(parameter, f"must be a whole number >= 0, got {value!r}")
    return int(value)  # type: ignore[call-overload]


def positive(value: object, parameter: str, unit: str = "") -> int:
    """A whole number >= 1 (a count of steps, tokens, sequences)."""
    if not _is_int(value) or int(value) < 1:  # type: ignore[call-overload]
        what = f"a positive number of {unit}" if unit else "a positive integer"
        raise ParameterError(parameter, f"must be {what}, got {value!r}")
    return int(value)  # type: ignore[call-overload]


def at_least(value: object, minimum: int, parameter: str, unit: str = "") -> int:
    """A whole number >= ``minimum``."""
    if not _is_int(value) or int(value) < minimum:  # type: ignore[call-overload]
        what = f" {unit}" if unit else ""
        raise ParameterError(parameter, f"must be >= {minimum}{what}, got {value!r}")
    return int(value)  # type: ignore[call-overload]


def near_dup(value: object, parameter: str = "near_dup") -> float:
    """A Jaccard threshold for near duplicates, in (0, 1]."""
    if isinstance(value, bool) or not isinstance(value, Real) or not 0.0 < float(value) <= 1.0:
        raise ParameterError(parameter, f"must be a Jaccard threshold in (0, 1], got {value!r}")
    return float(value)


def text_columns(value: object, parameter: str = "text") -> tuple[str, ...]:
    """The column(s) of a text option: one, two (prompt and completion) or three (Alpaca's
    instruction, input and output), each named once; one name may be given as a string."""
    names: tuple[str, ...] = (value,) if isinstance(value, str) else tuple(value)  # type: ignore[arg-type]
    if not names or len(names) > 3:
        raise ParameterError(
            parameter,
            "must name one column, two (prompt and completion) or three (Alpaca's "
            f"instruction, input and output); got {len(names)}",
        )
    if len(set(names)) != len(names):
        repeated = next(name for name in names if names.count(name) > 1)
        raise ParameterError(parameter, f"names column {repeated!r} twice")
    return names
