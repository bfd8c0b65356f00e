"""``ExactStratifiedGroupKFold``: k folds of exact sizes, groups whole, classes balanced."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

import numpy as np
from sklearn.model_selection import BaseCrossValidator
from sklearn.utils import indexable

from evalkit.errors import InvalidParameter
from evalkit.model_selection.inputs import n_samples_of, read_rows, warn_thin_classes
from evalkit.model_selection.params import (
    RandomStateLike,
    check_n_splits,
    check_random_state,
    check_shuffle,
    draw_seeds,
)
from evalkit.splitting.state import IntArray

# The seed of every call when shuffle=False: a fixed assignment.
UNSHUFFLED_SEED = 0


class ExactStratifiedGroupKFold(BaseCrossValidator):
    """K-fold cross-validation on evalkit's exact splitter: groups whole, sizes exact.

    Each group (a conversation, a document, a user) lands in one test fold;
    every test fold holds ⌊n/k⌋ or ⌈n/k⌉ of the ``n`` items whenever the group
    sizes allow it (else the closest counts found, as ``evalkit.split`` does);
    with ``y``, each fold's class shares track the whole, and every class found
    in at least ``n_splits`` groups is in every fold. Where a fold is too
    small to hold every such class, the classes come first, as in ``split``.

    Unlike scikit-learn's ``StratifiedGroupKFold``, which places groups
    greedily and lets fold sizes drift, the folds come from the same
    assignment as ``evalkit split``: counts first, then class balance.

    Parameters
    ----------
    n_splits : int, default=5
        Number of folds, at least 2.
    shuffle : bool, default=True
        With False the folds are one fixed assignment (``random_state`` must
        then be None). The splitter is randomised by nature, so False does not
        mean "in input order" as it does for ``KFold``.
    random_state : int, RandomState instance or None, default=None
        As in scikit-learn: an int gives the same folds on every call, a
        ``RandomState`` advances with each call, None draws from numpy's
        global random state.

    ``groups`` is requested as metadata (``__metadata_request__split``), so
    with ``sklearn.set_config(enable_metadata_routing=True)`` it reaches the
    splitter through ``params={"groups": groups}`` of ``cross_validate`` or
    the ``fit`` of a search.
    """

    # scikit-learn reads this to route `groups` to split() as metadata.
    __metadata_request__split: ClassVar[dict[str, bool]] = {"groups": True}

    def __init__(
        self, n_splits: int = 5, *, shuffle: bool = True, random_state: RandomStateLike = None
    ) -> None:
        self.n_splits = check_n_splits(n_splits, minimum=2)
        self.shuffle = check_shuffle(shuffle, random_state)
        check_random_state(random_state)
        self.random_state = random_state

    def split(
        self, X: Any, y: Any = None, groups: Any = None
    ) -> Iterator[tuple[IntArray, IntArray]]:
        """Yield ``(train, test)`` row indices for each of the ``n_splits`` folds.

        ``X`` gives the number of samples; ``y`` (class labels, optional) is
        stratified on; ``groups`` (one label per sample) is required.
        """
        X, y, groups = indexable(X, y, groups)
        fold_of = self.assign_folds(X, y, groups)
        indices = np.arange(fold_of.shape[0])
        for fold in range(self.n_splits):
            test = fold_of == fold
            yield indices[~test], indices[test]

    def assign_folds(self, X: Any, y: Any = None, groups: Any = None) -> IntArray:
        """The test fold of every sample (0 to ``n_splits - 1``): what ``split`` yields, at once."""
        n_samples = n_samples_of(X)
        if self.n_splits > n_samples:
            raise InvalidParameter(
                f"n_splits={self.n_splits}: cannot have more splits than samples "
                f"(n_samples={n_samples})"
            )
        rows = read_rows(n_samples, y, groups)
        if self.n_splits > rows.n_groups:
            raise InvalidParameter(
                f"n_splits={self.n_splits}: cannot have more splits than groups "
                f"({rows.n_groups} groups)"
            )
        warn_thin_classes(rows, self.n_splits, type(self).__name__)
        targets = fold_sizes(n_samples, self.n_splits)
        seed = draw_seeds(self.random_state, 1)[0] if self.shuffle else UNSHUFFLED_SEED
        return rows.assign(targets, seed)

    def get_n_splits(self, X: Any = None, y: Any = None, groups: Any = None) -> int:
        """The number of folds, ``n_splits`` (the arguments are ignored)."""
        return self.n_splits


def fold_sizes(n_samples: int, n_splits: int) -> IntArray:
    """⌈n/k⌉ items for the first ``n % k`` folds, ⌊n/k⌋ for the rest."""
    sizes = np.full(n_splits, n_samples // n_splits, dtype=np.int64)
    sizes[: n_samples % n_splits] += 1
    return sizes
