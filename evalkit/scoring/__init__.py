"""Scoring predictions against gold under a contract (``evalkit score``).

Public entry points (also re-exported from :mod:`evalkit`): :func:`score`,
:class:`ScoreResult`, :class:`ScoreSummary`, :func:`write_score`,
:func:`read_predictions`; from here also the options objects of ``score`` and
``rescore``, :class:`ScoreParams` and :class:`RescoreParams` (``rescore`` itself
and its :class:`RescoreResult` are :mod:`evalkit.comparison.rescore`'s). They are
imported lazily, so that a parsing worker process starts without loading what it does not
use.
"""

from __future__ import annotations

from evalkit._lazy import lazy_exports

_EXPORTS = {
    "RescoreParams": "evalkit.scoring.options",
    "ScoreParams": "evalkit.scoring.options",
    "ScoreResult": "evalkit.scoring.result",
    "ScoreSummary": "evalkit.records._summary",
    "read_predictions": "evalkit.scoring.predictions",
    "score": "evalkit.scoring.api",
    "write_score": "evalkit.scoring.write",
}

# Not cached: a name may also be a submodule's (rescore), rebound on import.
__getattr__, __dir__, __all__ = lazy_exports(__name__, _EXPORTS, cache=False)
