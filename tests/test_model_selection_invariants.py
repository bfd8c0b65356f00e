"""scikit-learn's invariant checks for evalkit's cross-validators, on random structures.

The checks of ``sklearn/model_selection/tests/test_split.py``, run by
hypothesis on random group and class structures: train and test disjoint and
covering, test folds partitioning the samples, no group on both sides, the
stated number of splits, sizes as close to the targets as any assignment of
whole groups gets (brute force over every assignment of tiny problems; exact
wherever small groups make it reachable), every class of at least k groups in
every fold, and the same folds on a second call, under renamed classes, in
another row order and for 1-d or 2-d ``X``.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
from conftest import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalkit.model_selection import ExactGroupShuffleSplit, ExactStratifiedGroupKFold

pytestmark = pytest.mark.invariants  # few examples in make unit-fast, all in make test

SETTINGS = settings(
    max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@pytest.fixture(autouse=True)
def _quiet_thin_class_warnings():
    # Random structures often hold a class in fewer groups than folds; the
    # warning about it is tested in test_model_selection_sklearn.py.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "ExactStratifiedGroupKFold: ", UserWarning)
        warnings.filterwarnings("ignore", "ExactGroupShuffleSplit: ", UserWarning)
        yield


@st.composite
def structures(draw: st.DrawFn, max_groups: int, max_size: int, small: int = 0):
    """(groups, y) per sample: groups of 1..max_size items with a main class and some drift.

    ``small`` singleton groups are added, which makes exact sizes reachable.
    """
    n_groups = draw(st.integers(2, max_groups))
    n_classes = draw(st.integers(1, 4))
    sizes = [draw(st.integers(1, max_size)) for _ in range(n_groups)] + [1] * small
    groups, labels = [], []
    for group, size in enumerate(sizes):
        main = draw(st.integers(0, n_classes - 1))
        for _ in range(size):
            drift = draw(st.integers(0, 9)) == 0
            labels.append(draw(st.integers(0, n_classes - 1)) if drift else main)
            groups.append(group)
    # Group labels that do not sort like their order of appearance.
    names = np.array([f"g{(7 * g) % 101:03d}-{g}" for g in range(len(sizes))])
    return names[np.asarray(groups)], np.asarray(labels)


def _required(groups: np.ndarray, y: np.ndarray, n_covered: int) -> list:
    """Classes held by at least ``n_covered`` distinct groups."""
    return [c for c in np.unique(y) if np.unique(groups[y == c]).size >= n_covered]


def _brute_force(groups: np.ndarray, y: np.ndarray, targets: list[int]) -> tuple[int, int]:
    """Best (missing required class-split pairs, total count deviation) over all assignments.

    Items beyond the targets go to one more, uncovered part, as the splitter does.
    """
    names, group = np.unique(groups, return_inverse=True)
    size = np.bincount(group)
    unused = groups.size - sum(targets)
    parts = [*targets, unused] if unused else list(targets)
    covered = [k for k, t in enumerate(targets) if t > 0]
    required = _required(groups, y, len(covered))
    holds = {c: {g for g in range(names.size) if (y[group == g] == c).any()} for c in required}
    best = None
    for choice in itertools.product(range(len(parts)), repeat=names.size):
        counts = [0] * len(parts)
        for g, k in enumerate(choice):
            counts[k] += int(size[g])
        missing = sum(all(choice[g] != k for g in holds[c]) for k in covered for c in required)
        deviation = sum(abs(a - b) for a, b in zip(counts, parts, strict=True))
        best = (missing, deviation) if best is None else min(best, (missing, deviation))
    assert best is not None
    return best


def _achieved(groups, y, parts: list[np.ndarray], targets: list[int]) -> tuple[int, int]:
    """(missing required class-split pairs, total deviation) of the parts yielded."""
    covered = [k for k, t in enumerate(targets) if t > 0]
    required = _required(groups, y, len(covered))
    missing = sum(c not in set(y[parts[k]]) for k in covered for c in required)
    deviation = sum(abs(part.size - t) for part, t in zip(parts, targets, strict=True))
    unused = groups.size - sum(targets)
    deviation += abs(groups.size - sum(part.size for part in parts) - unused)
    return missing, deviation


def _assert_folds_protocol(folds, n_samples: int, groups: np.ndarray, n_splits: int) -> None:
    """Disjoint, covering, partitioning, group-respecting integer index folds."""
    assert len(folds) == n_splits
    tests = []
    for train, test in folds:
        assert train.dtype.kind == "i" and test.dtype.kind == "i"
        assert np.all(np.diff(train) > 0) and np.all(np.diff(test) > 0)
        assert np.intersect1d(train, test).size == 0
        assert np.array_equal(np.union1d(train, test), np.arange(n_samples))
        assert np.intersect1d(groups[train], groups[test]).size == 0
        tests.append(test)
    assert np.array_equal(np.sort(np.concatenate(tests)), np.arange(n_samples))


@SETTINGS
@given(structures(max_groups=6, max_size=4), st.integers(2, 3), st.integers(0, 2**32 - 1))
def test_kfold_counts_and_coverage_are_the_best_any_assignment_gets(structure, k, seed) -> None:
    groups, y = structure
    if np.unique(groups).size < k:
        return
    cv = ExactStratifiedGroupKFold(k, random_state=seed)
    folds = list(cv.split(np.zeros((groups.size, 2)), y, groups))
    _assert_folds_protocol(folds, groups.size, groups, cv.get_n_splits())
    targets = [groups.size // k + (i < groups.size % k) for i in range(k)]
    tests = [test for _, test in folds]
    assert _achieved(groups, y, tests, targets) == _brute_force(groups, y, targets)


@SETTINGS
@given(structures(max_groups=40, max_size=6, small=25), st.integers(2, 5), st.integers(0, 2**16))
def test_kfold_sizes_exact_and_classes_covered_when_small_groups_allow(structure, k, seed) -> None:
    groups, y = structure
    n = groups.size
    cv = ExactStratifiedGroupKFold(k, random_state=seed)
    folds = list(cv.split(np.zeros(n), y, groups))
    _assert_folds_protocol(folds, n, groups, k)
    sizes = sorted(test.size for _, test in folds)
    assert sizes == sorted(n // k + (i < n % k) for i in range(k))
    if n // k >= 4 * 6:  # room in every fold for a group of every class
        for c in _required(groups, y, k):
            assert all(c in set(y[test]) for _, test in folds), c


@SETTINGS
@given(structures(max_groups=30, max_size=5), st.integers(2, 4), st.integers(0, 2**16))
def test_kfold_folds_do_not_depend_on_labels_row_order_or_x_shape(structure, k, seed) -> None:
    groups, y = structure
    if np.unique(groups).size < k:
        return
    cv = ExactStratifiedGroupKFold(k, random_state=seed)
    base = cv.assign_folds(np.zeros(groups.size), y, groups)
    # The same call again, and X of another shape: the same folds.
    assert np.array_equal(cv.assign_folds(np.zeros((groups.size, 3)), y, groups), base)
    # Classes renamed (reordered, as text): the same folds.
    renamed = np.array([f"class-{(5 - c) % 7}" for c in range(7)])[y]
    assert np.array_equal(cv.assign_folds(np.zeros(groups.size), renamed, groups), base)
    # Rows in another order: every row keeps its fold.
    order = np.random.default_rng(seed).permutation(groups.size)
    moved = cv.assign_folds(np.zeros(groups.size), y[order], groups[order])
    assert np.array_equal(moved, base[order])
    # split() yields exactly these folds.
    for fold, (_, test) in enumerate(cv.split(np.zeros(groups.size), y, groups)):
        assert np.array_equal(test, np.flatnonzero(base == fold))


@SETTINGS
@given(
    structures(max_groups=6, max_size=4),
    st.one_of(st.integers(1, 8), st.sampled_from([0.2, 0.34, 0.5, 0.75])),
    st.one_of(st.none(), st.integers(1, 8), st.sampled_from([0.25, 0.4])),
    st.integers(0, 2**32 - 1),
)
def test_shuffle_split_counts_and_coverage_are_the_best_any_assignment_gets(
    structure, test_size, train_size, seed
) -> None:
    groups, y = structure
    n = groups.size
    reference = _sklearn_sizes(n, test_size, train_size)

    def run() -> list[tuple[np.ndarray, np.ndarray]]:
        cv = ExactGroupShuffleSplit(
            2, test_size=test_size, train_size=train_size, random_state=seed
        )
        return list(cv.split(np.zeros(n), y, groups))

    if reference is None:  # scikit-learn refuses these sizes for n items: so do we
        with pytest.raises(ValueError):
            run()
        return
    splits = run()
    assert len(splits) == 2
    best = _brute_force(groups, y, list(reference))
    for train, test in splits:
        assert np.intersect1d(train, test).size == 0
        assert np.intersect1d(groups[train], groups[test]).size == 0
        assert _achieved(groups, y, [train, test], list(reference)) == best


@SETTINGS
@given(structures(max_groups=40, max_size=6, small=25), st.integers(0, 2**16))
def test_shuffle_split_exact_item_counts_and_determinism(structure, seed) -> None:
    groups, y = structure
    n = groups.size
    cv = ExactGroupShuffleSplit(3, test_size=0.25, random_state=seed)
    first = list(cv.split(np.zeros(n), y, groups))
    assert [(tr.size, te.size) for tr, te in first] == [(n - -(-n // 4), -(-n // 4))] * 3
    for train, test in first:
        assert np.intersect1d(groups[train], groups[test]).size == 0
        assert np.array_equal(np.union1d(train, test), np.arange(n))
    again = list(cv.split(np.zeros((n, 2)), y, groups))
    renamed = list(cv.split(np.zeros(n), np.array(list("zyxw"))[y], groups))
    for a, b, c in zip(first, again, renamed, strict=True):
        assert np.array_equal(a[1], b[1]) and np.array_equal(a[1], c[1])


def _sklearn_sizes(n: int, test_size, train_size) -> tuple[int, int] | None:
    """(train, test) items scikit-learn's GroupShuffleSplit takes on n singleton groups."""
    from sklearn.model_selection import GroupShuffleSplit

    splitter = GroupShuffleSplit(1, test_size=test_size, train_size=train_size, random_state=0)
    try:
        train, test = next(splitter.split(np.zeros(n), groups=np.arange(n)))
    except ValueError:
        return None
    return train.size, test.size
