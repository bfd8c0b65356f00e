"""``ExactGroupShuffleSplit``: random train/test splits of exact item counts, groups whole."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

import numpy as np
from sklearn.model_selection import BaseShuffleSplit
from sklearn.utils import indexable

from evalkit.model_selection.inputs import n_samples_of, read_rows, warn_thin_classes
from evalkit.model_selection.params import (
    RandomStateLike,
    Size,
    check_n_splits,
    check_random_state,
    check_sizes,
    draw_seeds,
    resolve_sizes,
)
from evalkit.splitting.state import IntArray

# scikit-learn's GroupShuffleSplit default, when neither size is given.
DEFAULT_TEST_SIZE = 0.2


class ExactGroupShuffleSplit(BaseShuffleSplit):
    """Random group-aware train/test splits whose sizes count items, hit exactly.

    Each iteration places whole groups so that train and test hold exactly
    the items asked for whenever the group sizes allow it (else the closest
    counts found, as ``evalkit.split`` does); with ``y`` it is stratified:
    class shares track the whole and every class found in at least two
    groups is on both sides.

    scikit-learn's ``GroupShuffleSplit`` counts *groups*, so with groups of
    uneven sizes its test share of items is anyone's guess; here the sizes are
    items, with ``ShuffleSplit``'s conventions and errors.

    Parameters
    ----------
    n_splits : int, default=1
        Number of independent train/test splits (test sets may overlap
        between them, as in scikit-learn's shuffle splits).
    test_size : float, int or None, default=None
        A float in (0, 1): that share of the items (rounded up); an int: that
        many items; None: the complement of ``train_size``, or 0.2 when both
        are None.
    train_size : float, int or None, default=None
        A float in (0, 1): that share of the items (rounded down); an int:
        that many items; None: the complement of ``test_size``. Items in
        neither are left out of both.
    random_state : int, RandomState instance or None, default=None
        As in scikit-learn: an int gives the same splits on every call, a
        ``RandomState`` advances with each call, None draws from numpy's
        global random state.
    """

    # scikit-learn reads this to route `groups` to split() as metadata.
    __metadata_request__split: ClassVar[dict[str, bool]] = {"groups": True}

    def __init__(
        self,
        n_splits: int = 1,
        *,
        test_size: Size = None,
        train_size: Size = None,
        random_state: RandomStateLike = None,
    ) -> None:
        check_n_splits(n_splits, minimum=1)
        check_sizes(test_size, train_size)
        check_random_state(random_state)
        super().__init__(
            n_splits=n_splits, test_size=test_size, train_size=train_size, random_state=random_state
        )
        self._default_test_size = DEFAULT_TEST_SIZE

    def split(
        self, X: Any, y: Any = None, groups: Any = None
    ) -> Iterator[tuple[IntArray, IntArray]]:
        """Yield ``(train, test)`` row indices, ``n_splits`` times.

        ``X`` gives the number of samples; ``y`` (class labels, optional) is
        stratified on; ``groups`` (one label per sample) is required.
        """
        X, y, groups = indexable(X, y, groups)
        yield from self._iter_indices(X, y, groups)

    def _iter_indices(
        self, X: Any, y: Any = None, groups: Any = None
    ) -> Iterator[tuple[IntArray, IntArray]]:
        n_samples = n_samples_of(X)
        n_train, n_test = resolve_sizes(
            n_samples, self.test_size, self.train_size, self._default_test_size
        )
        rows = read_rows(n_samples, y, groups)
        warn_thin_classes(rows, 2, type(self).__name__)
        targets = np.array([n_train, n_test], dtype=np.int64)
        for seed in draw_seeds(self.random_state, self.n_splits):
            side = rows.assign(targets, seed)
            yield np.flatnonzero(side == 0), np.flatnonzero(side == 1)
