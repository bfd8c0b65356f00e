"""Leakage between splits: exact and near-duplicate texts, group leaks, class coverage.

``duplicate_components`` gives the duplicate clusters that ``evalkit split
--near-dup`` merges into its groups; ``audit`` checks an existing split.

The package loads its names when first used: ``evalkit audit --help`` needs
only the options (:mod:`evalkit.leakage.options`), not polars.
"""

from __future__ import annotations

from evalkit._lazy import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "AuditParams": "evalkit.leakage.options",
        "LshParameters": "evalkit.leakage.minhash",
        "choose_lsh": "evalkit.leakage.minhash",
        "duplicate_components": "evalkit.leakage.clusters",
        "normalize_text": "evalkit.leakage.normalize",
        "normalize_texts": "evalkit.leakage.normalize",
    },
)
