"""From scikit-learn's ``(X, y, groups)`` to the rows the exact splitter assigns.

Groups are numbered in the sorted order of their labels, as ``evalkit split``
numbers its group keys, so the folds follow the groups and not the row order.
Classes are numbered by a key that does not look at the labels themselves
(most items first, then the first group holding the class), so that renaming
the classes of ``y`` gives the same folds: scikit-learn's label-invariance
check for stratified splitters.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from evalkit.errors import InvalidParameter
from evalkit.splitting.assign import assign_groups, items_problem
from evalkit.splitting.groups import build_table
from evalkit.splitting.state import IntArray

TARGET_TYPES = ("binary", "multiclass")


@dataclass(frozen=True)
class Rows:
    """The samples as the splitter sees them: a group and a class index per row."""

    row_group: IntArray
    row_class: IntArray
    n_groups: int
    n_classes: int
    class_labels: list[Any]  # label of each class index (for messages)

    @property
    def n_samples(self) -> int:
        return int(self.row_group.shape[0])

    def assign(self, targets: IntArray, seed: int) -> IntArray:
        """The split index of every row (``len(targets)`` for rows beyond the targets)."""
        table = build_table(self.row_group, self.row_class, self.n_classes)
        problem = items_problem(targets, self.n_samples, seed)
        return assign_groups(table, problem)[self.row_group]

    def classes_in_fewer_groups(self, n_groups: int) -> list[Any]:
        """Labels of the classes held by fewer than ``n_groups`` groups."""
        pairs = np.unique(self.row_group * self.n_classes + self.row_class)
        groups_per_class = np.bincount(pairs % self.n_classes, minlength=self.n_classes)
        return [self.class_labels[c] for c in np.flatnonzero(groups_per_class < n_groups)]


def n_samples_of(X: Any) -> int:
    """The number of samples in ``X``: its first dimension, or its length."""
    if X is None:
        raise InvalidParameter("X=None: the 'X' parameter should not be None")
    shape = getattr(X, "shape", None)
    if shape is not None and len(shape) > 0:
        return int(shape[0])
    try:
        return len(X)
    except TypeError:
        raise InvalidParameter(
            f"X: expected an array-like of samples, got {type(X).__name__}"
        ) from None


def read_rows(n_samples: int, y: Any, groups: Any) -> Rows:
    """Group and class index of every sample; raise on missing or unusable labels."""
    row_group, n_groups = _group_index(n_samples, groups)
    if y is None:
        return Rows(row_group, np.zeros(n_samples, np.int64), n_groups, 1, [None])
    row_class, labels = _class_index(n_samples, y, row_group)
    return Rows(row_group, row_class, n_groups, int(labels.shape[0]), labels.tolist())


def _labels_1d(values: Any, name: str, n_samples: int) -> np.ndarray:
    array = np.asarray(values)
    if array.ndim == 2 and array.shape[1] == 1:
        array = array[:, 0]
    if array.ndim != 1:
        raise InvalidParameter(
            f"{name}: expected one label per sample (a 1-d array), got shape {array.shape}"
        )
    if array.shape[0] != n_samples:
        raise InvalidParameter(
            f"{name}: {array.shape[0]} labels for {n_samples} samples; give one per sample"
        )
    return array


def _unique(array: np.ndarray, name: str) -> tuple[np.ndarray, IntArray]:
    """The sorted distinct labels and each sample's index among them.

    Numbers go through numpy; text and other objects through polars, whose
    sort of a hundred thousand strings takes milliseconds where numpy's
    object sort takes a good part of a second.
    """
    if array.dtype.kind in "biuf":
        missing = np.isnan(array) if array.dtype.kind == "f" else np.zeros(array.shape, bool)
        _refuse_missing(missing, name)
        labels, inverse = np.unique(array, return_inverse=True)
        return labels, inverse.reshape(-1).astype(np.int64)
    import polars as pl

    values = array.tolist() if array.dtype.kind == "O" else array
    try:
        series = pl.Series(name, values, strict=True)
    except (TypeError, ValueError, OverflowError, pl.exceptions.PolarsError):
        series = pl.Series(name, values, dtype=pl.Object)
    if series.dtype == pl.Object:
        kinds = sorted({type(v).__name__ for v in array if v is not None})
        raise InvalidParameter(
            f"{name}: labels of types {', '.join(kinds)} cannot be ordered; give labels of "
            "one type (all text or all numbers)"
        )
    missing = series.is_null()
    if series.dtype.is_float():
        missing = missing | series.is_nan()
    _refuse_missing(missing.to_numpy(), name)
    codes = series.rank("dense").to_numpy().astype(np.int64) - 1
    labels = series.unique().sort().to_numpy()
    return labels, codes


def _refuse_missing(missing: np.ndarray, name: str) -> None:
    if missing.any():
        first = int(np.flatnonzero(missing)[0])
        raise InvalidParameter(
            f"{name}: {int(missing.sum())} sample(s) have no label (NaN or None; first at "
            f"index {first}); give every sample one"
        )


def _group_index(n_samples: int, groups: Any) -> tuple[IntArray, int]:
    if groups is None:
        raise InvalidParameter(
            "groups=None: the 'groups' parameter should not be None; pass one group label "
            "per sample (with metadata routing on, request it: params={'groups': groups})"
        )
    labels, inverse = _unique(_labels_1d(groups, "groups", n_samples), "groups")
    return inverse, int(labels.shape[0])


def _class_index(n_samples: int, y: Any, row_group: IntArray) -> tuple[IntArray, np.ndarray]:
    from sklearn.utils.multiclass import type_of_target

    array = np.asarray(y)
    # Text labels are classes by nature; scikit-learn's check would sort them once more.
    if array.dtype.kind not in "OUS" or array.ndim != 1:
        kind = type_of_target(array, input_name="y")
        if kind not in TARGET_TYPES:
            raise InvalidParameter(
                f"y: supported target types are {TARGET_TYPES}. Got {kind!r} instead "
                "(give class labels, or y=None for group-only splits)"
            )
    labels, codes = _unique(_labels_1d(array, "y", n_samples), "y")
    n_classes = labels.shape[0]
    count = np.bincount(codes, minlength=n_classes)
    first_group = np.full(n_classes, np.iinfo(np.int64).max)
    np.minimum.at(first_group, codes, row_group)
    order = np.lexsort((_group_signature(codes, row_group, n_classes), first_group, -count))
    rank = np.empty(n_classes, np.int64)
    rank[order] = np.arange(n_classes)
    return rank[codes], labels[order]


def _mix(values: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser: a well-spread 64-bit value for each input."""
    with np.errstate(over="ignore"):
        z = values.astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def _group_signature(codes: IntArray, row_group: IntArray, n_classes: int) -> np.ndarray:
    """One number per class from how many of its items each group holds.

    Classes tied on size and first group are ordered by it, never by where
    their rows happen to be: two classes that still tie hold the same counts
    in the same groups, so either order gives the same folds. (The sum of the
    mixed (group, count) pairs does not depend on the order they come in.)
    """
    pairs, counts = np.unique(row_group * n_classes + codes, return_counts=True)
    groups, classes = pairs // n_classes, pairs % n_classes
    mixed = _mix(_mix(groups) ^ counts.astype(np.uint64))
    signature = np.zeros(n_classes, np.uint64)
    with np.errstate(over="ignore"):
        np.add.at(signature, classes, mixed)
    return signature


def warn_thin_classes(rows: Rows, n_splits: int, splitter: str) -> None:
    """Warn, as ``StratifiedGroupKFold`` does, when a class cannot reach every split."""
    if rows.n_classes < 2:
        return
    thin = rows.classes_in_fewer_groups(n_splits)
    if thin:
        shown = ", ".join(repr(label) for label in thin[:5])
        more = f" and {len(thin) - 5} more" if len(thin) > 5 else ""
        warnings.warn(
            f"{splitter}: {len(thin)} class(es) of y ({shown}{more}) occur in fewer than "
            f"n_splits={n_splits} groups, so some splits cannot hold them",
            UserWarning,
            stacklevel=3,
        )
