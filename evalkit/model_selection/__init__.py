"""scikit-learn cross-validators on evalkit's exact splitter.

``ExactStratifiedGroupKFold`` and ``ExactGroupShuffleSplit`` plug into
``cross_val_score``, ``cross_validate``, ``cross_val_predict`` (the k-fold)
and the searches like any scikit-learn splitter, ``groups`` routed as
metadata. Their folds come from the assignment behind ``evalkit split``:
groups whole, item counts exact whenever the group sizes allow, class shares
tracking the whole. Importing this package imports scikit-learn.
"""

from evalkit.model_selection.kfold import ExactStratifiedGroupKFold
from evalkit.model_selection.shuffle import ExactGroupShuffleSplit

__all__ = ["ExactGroupShuffleSplit", "ExactStratifiedGroupKFold"]
