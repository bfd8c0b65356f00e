"""Checks of the splitters' arguments, and the seeds they draw.

Type and range checks run when a splitter is built, so a bad argument fails
where it was written; what depends on the data (a size against the number of
items) runs in ``split``. The conditions and the words are scikit-learn's
(``_BaseKFold``, ``_validate_shuffle_split``, ``check_random_state``), so
that a scikit-learn user meets the rules they know, and every message quotes
the value at fault.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable

import numpy as np

from evalkit.errors import InvalidParameter, InvalidParameterType

RandomStateLike = int | np.random.RandomState | None
Size = int | float | None
# Seeds handed to the exact splitter: non-negative int32, as numpy draws them portably.
SEED_BOUND = 2**31 - 1


def check_n_splits(n_splits: object, minimum: int) -> int:
    """``n_splits`` as an int of at least ``minimum`` (an Integral, not a bool)."""
    if isinstance(n_splits, bool) or not isinstance(n_splits, numbers.Integral):
        raise InvalidParameter(
            f"n_splits={n_splits!r}: the number of splits must be of Integral type, "
            f"got {type(n_splits).__name__}"
        )
    if n_splits < minimum:
        reason = (
            "k-fold cross-validation requires at least one train/test split by setting "
            f"n_splits={minimum} or more"
            if minimum > 1
            else f"give at least {minimum} split"
        )
        raise InvalidParameter(f"n_splits={n_splits!r}: {reason}")
    return int(n_splits)


def check_shuffle(shuffle: object, random_state: object) -> bool:
    """``shuffle`` must be a bool, and a ``random_state`` without shuffling has no effect."""
    if not isinstance(shuffle, bool | np.bool_):
        raise InvalidParameterType(f"shuffle must be True or False; got {shuffle!r}")
    if not shuffle and random_state is not None:
        raise InvalidParameter(
            f"random_state={random_state!r}: setting a random_state has no effect since "
            "shuffle is False. You should leave random_state to its default (None), or "
            "set shuffle=True."
        )
    return bool(shuffle)


def check_random_state(random_state: object) -> None:
    """None, an int in [0, 2**32 - 1] or a ``numpy.random.RandomState``, as scikit-learn takes."""
    if random_state is None or isinstance(random_state, np.random.RandomState):
        return
    whole = isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool)
    if whole and 0 <= int(random_state) <= 2**32 - 1:  # type: ignore[call-overload]
        return
    raise InvalidParameter(
        f"random_state={random_state!r}: give None, an int in [0, 2**32 - 1] or a "
        "numpy.random.RandomState (a numpy Generator is not one)"
    )


def draw_seeds(random_state: RandomStateLike, count: int) -> list[int]:
    """``count`` seeds for the exact splitter, drawn as scikit-learn draws its randomness.

    An int gives the same seeds on every call (so the same splits), a
    ``RandomState`` advances with each call, None draws from numpy's global
    state: the meaning ``random_state`` has in every scikit-learn splitter.
    """
    from sklearn.utils import check_random_state as sklearn_random_state

    rng = sklearn_random_state(random_state)
    return [int(seed) for seed in rng.randint(0, SEED_BOUND, size=count)]


def _kind(size: object) -> str:
    """'i' for an int, 'f' for a float, '' for None; anything else is refused."""
    if size is None:
        return ""
    if isinstance(size, numbers.Integral) and not isinstance(size, bool):
        return "i"
    if isinstance(size, float | np.floating):
        return "f"
    return "?"


def check_size(size: object, name: str) -> None:
    """A ``test_size``/``train_size`` that no data can make valid: wrong type or range."""
    kind = _kind(size)
    if kind == "?":
        raise InvalidParameter(
            f"Invalid value for {name}: {size!r}; give an int (items), a float in (0, 1) "
            "(a share of the items) or None"
        )
    if (kind == "i" and int(size) <= 0) or (  # type: ignore[call-overload]
        kind == "f" and not 0.0 < float(size) < 1.0  # type: ignore[arg-type]
    ):
        raise InvalidParameter(
            f"{name}={size!r} should be either positive and smaller than the number of "
            "samples or a float in the (0, 1) range"
        )


def check_sizes(test_size: object, train_size: object) -> None:
    """Both sizes valid alone, and two shares that do not exceed the whole."""
    check_size(test_size, "test_size")
    check_size(train_size, "train_size")
    if _kind(test_size) == "f" and _kind(train_size) == "f":
        total = float(test_size) + float(train_size)  # type: ignore[arg-type]
        if total > 1:
            raise InvalidParameter(
                f"The sum of test_size and train_size = {total}, should be in the (0, 1) "
                "range. Reduce test_size and/or train_size."
            )


def resolve_sizes(
    n_samples: int, test_size: Size, train_size: Size, default_test_size: float
) -> tuple[int, int]:
    """Train and test items for ``n_samples``, by scikit-learn's ``ShuffleSplit`` rules.

    A float test share rounds up, a float train share down; a missing size is
    the complement of the other; both missing means ``default_test_size``.
    """
    if test_size is None and train_size is None:
        test_size = default_test_size
    for name, size in (("test_size", test_size), ("train_size", train_size)):
        kind = _kind(size)
        if (kind == "i" and not 0 < int(size) < n_samples) or (  # type: ignore[arg-type]
            kind == "f" and not 0.0 < float(size) < 1.0  # type: ignore[arg-type]
        ):
            raise InvalidParameter(
                f"{name}={size} should be either positive and smaller than the number of "
                f"samples {n_samples} or a float in the (0, 1) range"
            )
    n_test = _count(test_size, n_samples, math.ceil)
    n_train = _count(train_size, n_samples, math.floor)
    if n_train is None:
        assert n_test is not None
        n_train = n_samples - n_test
    elif n_test is None:
        n_test = n_samples - n_train
    if n_train + n_test > n_samples:
        raise InvalidParameter(
            f"The sum of train_size and test_size = {n_train + n_test}, should be smaller "
            f"than the number of samples {n_samples}. Reduce test_size and/or train_size."
        )
    if n_train == 0:
        raise InvalidParameter(
            f"With n_samples={n_samples}, test_size={test_size} and train_size={train_size}, "
            "the resulting train set will be empty. Adjust any of the aforementioned "
            "parameters."
        )
    return n_train, n_test


def _count(size: Size, n_samples: int, rounding: Callable[[float], int]) -> int | None:
    if size is None:
        return None
    if _kind(size) == "i":
        return int(size)
    return int(rounding(float(size) * n_samples))
