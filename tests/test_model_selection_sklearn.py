"""evalkit's cross-validators against scikit-learn: its tests mirrored, its tools run.

* The checks of ``sklearn/model_selection/tests/test_split.py`` that apply to
  a stratified group k-fold and a group shuffle split, with its data: class
  ratios, label invariance, size balance, repr, ``get_n_splits``, the
  ``random_state`` rules, metadata routing requests, errors.
* ``cross_val_score``, ``cross_validate``, ``cross_val_predict`` and
  ``GridSearchCV`` (nested too) run with the splitters, metadata routing on
  and off, and use exactly the folds ``split`` yields.
* ``test_size``/``train_size`` resolve to the item counts scikit-learn's
  shuffle splits take, and fail where they fail.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
import sklearn
from numpy.testing import assert_allclose
from sklearn.dummy import DummyClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import (
    GridSearchCV,
    GroupShuffleSplit,
    cross_val_predict,
    cross_val_score,
    cross_validate,
)

from evalkit.errors import InvalidParameter, UsageError
from evalkit.model_selection import ExactGroupShuffleSplit, ExactStratifiedGroupKFold

SPLITTERS = (ExactStratifiedGroupKFold, ExactGroupShuffleSplit)


def _classification(n_samples: int = 120, n_groups: int = 30, seed: int = 0):
    rng = np.random.default_rng(seed)
    groups = rng.integers(0, n_groups, n_samples)
    y = (rng.random(n_samples) < 0.35).astype(int)
    X = rng.normal(size=(n_samples, 3)) + y[:, None]
    return X, y, groups


@pytest.mark.parametrize("shuffle", [False, True])
@pytest.mark.parametrize("k", [4, 5, 6, 7, 8, 9, 10])
def test_class_ratios_as_in_sklearn_test_stratified_kfold_ratios(k: int, shuffle: bool) -> None:
    n_samples = 1000
    y = np.array([4] * 100 + [0] * 890 + [1] * 10)
    groups = np.arange(n_samples)  # singleton groups: perfect stratification is possible
    distr = np.bincount(y) / len(y)
    cv = ExactStratifiedGroupKFold(k, shuffle=shuffle, random_state=0 if shuffle else None)
    sizes = []
    for train, test in cv.split(np.ones(n_samples), y, groups):
        assert_allclose(np.bincount(y[train]) / len(train), distr, atol=0.02)
        assert_allclose(np.bincount(y[test]) / len(test), distr, atol=0.02)
        sizes.append(len(test))
    assert np.ptp(sizes) <= 1


@pytest.mark.parametrize("shuffle", [False, True])
@pytest.mark.parametrize("k", [4, 6, 7])
def test_label_invariance_as_in_sklearn(k: int, shuffle: bool) -> None:
    y = np.array([2] * 10 + [0] * 89 + [1] * 1)
    groups = np.arange(len(y))

    def folds(labels):
        cv = ExactStratifiedGroupKFold(k, shuffle=shuffle, random_state=0 if shuffle else None)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # the 1-item class
            return [(list(tr), list(te)) for tr, te in cv.split(np.ones(len(y)), labels, groups)]

    base = folds(y)
    for perm in itertools.permutations([0, 1, 2]):
        assert folds(np.take(perm, y)) == base
    assert folds(np.array(["Happy", "Sad", "Meh"])[y]) == base


def test_fold_sizes_balanced_as_in_sklearn_test_stratifiedkfold_balance() -> None:
    X, y, groups = np.ones(17), np.array([0] * 3 + [1] * 14), np.arange(17)
    for shuffle in (True, False):
        for i in range(11, 17):
            cv = ExactStratifiedGroupKFold(3, shuffle=shuffle)
            sizes = [len(test) for _, test in cv.split(X[:i], y[:i], groups[:i])]
            assert max(sizes) - min(sizes) <= 1 and sum(sizes) == i
            plain = ExactStratifiedGroupKFold(5, shuffle=shuffle)
            sizes = [len(test) for _, test in plain.split(X[:i], groups=groups[:i])]
            assert max(sizes) - min(sizes) <= 1 and sum(sizes) == i


@pytest.mark.parametrize(
    "groups",
    [
        [1, 1, 1, 1, 2, 2, 2, 3, 3, 3, 3, 3],
        [0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2],
        [1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 4, 4, 4, 4, 4],
        ["1", "1", "1", "1", "2", "2", "2", "3", "3", "3", "3", "3"],
    ],
)
def test_group_shuffle_split_on_sklearn_test_groups(groups) -> None:
    """sklearn's ``test_group_shuffle_split`` data; sizes are items, so the test share
    is ⌈n/3⌉ items, or as close as whole groups get (checked over every subset)."""
    groups = np.asarray(groups)
    X = np.ones(len(groups))
    cv = ExactGroupShuffleSplit(6, test_size=1 / 3, random_state=0)
    assert cv.get_n_splits(X, X, groups=groups) == 6
    target = int(np.ceil(len(groups) / 3))
    sizes = np.unique(groups, return_counts=True)[1]
    reachable = {
        int(sizes[list(s)].sum())
        for r in range(1, sizes.size)
        for s in itertools.combinations(range(sizes.size), r)
    }
    closest = min(abs(s - target) for s in reachable)
    splits = list(cv.split(X, X, groups=groups))
    assert len(splits) == 6
    for train, test in splits:
        assert not np.isin(groups[train], groups[test]).any()
        assert train.size + test.size == groups.size
        assert np.intersect1d(train, test).size == 0
        assert abs(test.size - target) == closest


def test_repr_get_n_splits_and_integer_indices() -> None:
    assert repr(ExactStratifiedGroupKFold(2)) == (
        "ExactStratifiedGroupKFold(n_splits=2, random_state=None, shuffle=True)"
    )
    assert " ".join(repr(ExactGroupShuffleSplit(random_state=0)).split()) == (
        "ExactGroupShuffleSplit(n_splits=1, random_state=0, test_size=None, train_size=None)"
    )
    X, X_1d, y, groups = np.arange(8).reshape(4, 2), np.arange(4), [1, 1, 2, 2], [1, 2, 3, 4]
    for cv in (
        ExactStratifiedGroupKFold(2, random_state=0),
        ExactGroupShuffleSplit(3, random_state=0),
    ):
        assert (
            cv.get_n_splits(X, y, groups) == cv.get_n_splits() == len(list(cv.split(X, y, groups)))
        )
        np.testing.assert_equal(list(cv.split(X, y, groups)), list(cv.split(X_1d, y, groups)))
        for train, test in cv.split(X, y, groups):
            assert train.dtype.kind == "i" and test.dtype.kind == "i"


def test_random_state_semantics_are_sklearns() -> None:
    X, y, groups = _classification(300, 100)

    def folds(cv):
        return [test.tolist() for _, test in cv.split(X, y, groups)]

    # An int: the same folds on every call. None: fresh folds on every call.
    fixed = ExactStratifiedGroupKFold(5, random_state=3)
    assert folds(fixed) == folds(fixed)
    assert folds(ExactStratifiedGroupKFold(5, random_state=4)) != folds(fixed)
    unseeded = ExactStratifiedGroupKFold(5)
    assert folds(unseeded) != folds(unseeded)
    # A RandomState advances with each call, reproducibly from its seed.
    state = ExactStratifiedGroupKFold(5, random_state=np.random.RandomState(0))
    first, second = folds(state), folds(state)
    assert first != second
    replay = ExactStratifiedGroupKFold(5, random_state=np.random.RandomState(0))
    assert [folds(replay), folds(replay)] == [first, second]
    # shuffle=False: one fixed assignment.
    assert folds(ExactStratifiedGroupKFold(5, shuffle=False)) == folds(
        ExactStratifiedGroupKFold(5, shuffle=False)
    )
    # The shuffle split: each of its n_splits differs, an int repeats them all.
    shuffled = ExactGroupShuffleSplit(4, test_size=0.25, random_state=1)
    tests = folds(shuffled)
    assert len({tuple(t) for t in tests}) == 4 and folds(shuffled) == tests


@pytest.mark.parametrize(
    ("build", "fragment"),
    [
        (lambda: ExactStratifiedGroupKFold("5"), "n_splits='5'"),
        (lambda: ExactStratifiedGroupKFold(2.0), "n_splits=2.0"),
        (lambda: ExactStratifiedGroupKFold(1), "n_splits=1"),
        (lambda: ExactStratifiedGroupKFold(True), "n_splits=True"),
        (lambda: ExactStratifiedGroupKFold(3, shuffle=False, random_state=0), "has no effect"),
        (lambda: ExactStratifiedGroupKFold(3, random_state=-1), "random_state=-1"),
        (lambda: ExactStratifiedGroupKFold(3, random_state=2**32), "random_state=4294967296"),
        (lambda: ExactStratifiedGroupKFold(3, random_state="0"), "random_state='0'"),
        (lambda: ExactStratifiedGroupKFold(3, random_state=np.random.default_rng(0)), "Generator"),
        (lambda: ExactGroupShuffleSplit(0), "n_splits=0"),
        (lambda: ExactGroupShuffleSplit(test_size=1.5), "test_size=1.5"),
        (lambda: ExactGroupShuffleSplit(test_size=0), "test_size=0"),
        (lambda: ExactGroupShuffleSplit(test_size=1.0), "test_size=1.0"),
        (lambda: ExactGroupShuffleSplit(train_size=-0.2), "train_size=-0.2"),
        (lambda: ExactGroupShuffleSplit(test_size="0.2"), "'0.2'"),
        (lambda: ExactGroupShuffleSplit(test_size=True), "True"),
        (lambda: ExactGroupShuffleSplit(test_size=0.6, train_size=0.5), "= 1.1"),
    ],
)
def test_bad_arguments_fail_at_construction_quoting_the_value(build, fragment: str) -> None:
    with pytest.raises(ValueError) as caught:
        build()
    assert isinstance(caught.value, InvalidParameter) and isinstance(caught.value, UsageError)
    assert fragment in str(caught.value)


def test_shuffle_must_be_a_bool_a_type_error_as_in_sklearn() -> None:
    with pytest.raises(TypeError, match="shuffle must be True or False; got None"):
        ExactStratifiedGroupKFold(3, shuffle=None)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("y", "groups", "fragment"),
    [
        ([0, 1, 0, 1, 0, 1], None, "groups=None"),
        ([0, 1, 0, 1, 0, 1], [1, 1, 2, 2, 3, 3], "cannot have more splits than groups (3 groups)"),
        ([0.5, 1.5, 0.5, 1.5, 2.5, 0.1], [1, 2, 3, 4, 5, 6], "'continuous'"),
        ([0, 1, 0, 1, 0, 1], [1, 2, 3, None, 5, 6], "groups: 1 sample(s) have no label"),
        ([0, 1, 0, 1, 0, 1], np.array([1, "a", 3, 4, 5, 6], object), "types int, str"),
        ([0, 1, 0, 1, 0, 1], [1, 2, 3], "inconsistent numbers of samples: [6, 6, 3]"),
        ([0, None, 0, 1, 0, 1], [1, 2, 3, 4, 5, 6], "y: 1 sample(s) have no label"),
    ],
)
def test_bad_data_fails_in_split_naming_the_parameter(y, groups, fragment: str) -> None:
    cv = ExactStratifiedGroupKFold(4, random_state=0)
    with pytest.raises(ValueError) as caught:
        list(cv.split(np.zeros(6), y, groups))
    assert fragment in str(caught.value)


def test_a_class_in_fewer_groups_than_folds_is_warned_about() -> None:
    y, groups = np.array([0] * 10 + [1] * 2), np.arange(12)
    with pytest.warns(
        UserWarning, match=r"1 class\(es\) of y \(1\) occur in fewer than n_splits=3 groups"
    ):
        list(ExactStratifiedGroupKFold(3, random_state=0).split(np.zeros(12), y, groups))


SIZES = [None, 1, 2, 3, 9, 10, 11, 0, -1, 0.0, 0.1, 0.34, 0.5, 0.66, 0.99, 1.0, 1.5]


@pytest.mark.slow
@pytest.mark.parametrize("n_samples", [1, 3, 10])
def test_sizes_resolve_as_sklearn_resolves_them(n_samples: int) -> None:
    """On singleton groups items are groups, so GroupShuffleSplit (same 0.2 default)
    is the reference: the same counts where it splits, a ValueError where it refuses."""
    X, groups = np.zeros(n_samples), np.arange(n_samples)
    for test_size, train_size in itertools.product(SIZES, SIZES):
        reference = GroupShuffleSplit(1, test_size=test_size, train_size=train_size, random_state=0)
        try:
            train, test = next(reference.split(X, groups=groups))
            expected = (train.size, test.size)
        except ValueError as error:
            expected = error
        try:
            ours = ExactGroupShuffleSplit(
                test_size=test_size, train_size=train_size, random_state=0
            )
            train, test = next(ours.split(X, groups=groups))
            got = (train.size, test.size)
        except ValueError as error:
            got = error
        case = (n_samples, test_size, train_size, expected, got)
        if isinstance(expected, ValueError):
            assert isinstance(got, ValueError), case
            # Refused once the data is known: scikit-learn's own words.
            if "will be empty" in str(expected) or "smaller than the number" in str(expected):
                assert str(got) == str(expected) or "(0, 1) range" in str(got), case
        else:
            assert got == expected, case


def test_metadata_routing_requests_groups() -> None:
    for splitter in SPLITTERS:
        cv = splitter()
        assert cv.get_metadata_routing().split.requests["groups"] is True
        assert hasattr(cv, "set_split_request")


@pytest.mark.parametrize("routing", [False, True])
def test_cross_val_functions_and_grid_search_use_exactly_the_yielded_folds(routing: bool) -> None:
    X, y, groups = _classification()
    cv = ExactStratifiedGroupKFold(4, random_state=0)
    folds = list(cv.split(X, y, groups))
    by_hand = [LogisticRegression().fit(X[tr], y[tr]).score(X[te], y[te]) for tr, te in folds]
    kwargs = {"params": {"groups": groups}} if routing else {"groups": groups}
    with sklearn.config_context(enable_metadata_routing=routing):
        scores = cross_val_score(LogisticRegression(), X, y, cv=cv, **kwargs)
        assert_allclose(scores, by_hand)
        result = cross_validate(LogisticRegression(), X, y, cv=cv, return_indices=True, **kwargs)
        for (_, test), used in zip(folds, result["indices"]["test"], strict=True):
            assert np.array_equal(test, used)
        predicted = cross_val_predict(LogisticRegression(), X, y, cv=cv, **kwargs)
        for train, test in folds:
            assert np.array_equal(
                predicted[test], LogisticRegression().fit(X[train], y[train]).predict(X[test])
            )
        search = GridSearchCV(LogisticRegression(), {"C": [0.01, 1.0]}, cv=cv)
        search.fit(X, y, groups=groups)
        assert_allclose(search.cv_results_["split0_test_score"][1], by_hand[0])
        shuffle = ExactGroupShuffleSplit(3, test_size=0.25, random_state=0)
        assert cross_val_score(LogisticRegression(), X, y, cv=shuffle, **kwargs).shape == (3,)


@pytest.mark.parametrize("routing", [False, True])
def test_nested_in_grid_search_as_in_sklearn_test_nested_cv(routing: bool) -> None:
    X, y, groups = _classification(60, 12)
    cvs = [
        ExactStratifiedGroupKFold(3, random_state=0),
        ExactGroupShuffleSplit(2, test_size=0.3, random_state=0),
    ]
    with sklearn.config_context(enable_metadata_routing=routing):
        for inner, outer in itertools.combinations_with_replacement(cvs, 2):
            search = GridSearchCV(
                DummyClassifier(),
                {"strategy": ["stratified", "most_frequent"]},
                cv=inner,
                error_score="raise",
            )
            if routing:
                cross_val_score(search, X, y, cv=outer, params={"groups": groups})
            else:
                # Without routing the outer groups do not reach the inner search's fit.
                cross_val_score(search, X, y, cv=outer, groups=groups, params={"groups": groups})


def test_routing_on_without_groups_says_what_to_pass() -> None:
    X, y, _ = _classification()
    with sklearn.config_context(enable_metadata_routing=True), pytest.raises(ValueError) as caught:
        cross_val_score(
            LogisticRegression(), X, y, cv=ExactStratifiedGroupKFold(3), error_score="raise"
        )
    assert "groups" in str(caught.value)
