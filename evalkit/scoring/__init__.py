"""Scoring predictions against gold under a contract (``evalkit score``).

Public entry points (also re-exported from :mod:`evalkit`): :func:`score`,
:class:`ScoreResult`, :class:`ScoreSummary`, :func:`write_score`,
:func:`read_predictions`, :func:`rescore`. They are imported lazily, so that a parsing worker
process starts without loading what it does not use.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "ScoreResult": "evalkit.scoring.result",
    "ScoreSummary": "evalkit.scoring.summary",
    "read_predictions": "evalkit.scoring.predictions",
    "rescore": "evalkit.scoring.rescore",
    "score": "evalkit.scoring.engine",
    "write_score": "evalkit.scoring.write",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'evalkit.scoring' has no attribute {name!r}")
