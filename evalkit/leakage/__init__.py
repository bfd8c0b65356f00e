"""Leakage between splits: exact and near-duplicate texts, group leaks, class coverage.

``duplicate_components`` gives the duplicate clusters that ``evalkit split
--near-dup`` merges into its groups; ``audit`` checks an existing split.
"""

from evalkit.leakage.clusters import duplicate_components
from evalkit.leakage.minhash import LshParameters, choose_lsh
from evalkit.leakage.normalize import normalize_text, normalize_texts

__all__ = [
    "LshParameters",
    "choose_lsh",
    "duplicate_components",
    "normalize_text",
    "normalize_texts",
]
