"""Scoring predictions against gold under a contract (``evalkit score``).

Public entry points (also re-exported from :mod:`evalkit`): :func:`score`,
:class:`ScoreResult`, :class:`ScoreSummary`, :func:`write_score`,
:func:`read_predictions`.
"""

from evalkit.scoring.engine import ScoreResult, score
from evalkit.scoring.predictions import read_predictions
from evalkit.scoring.summary import ScoreSummary
from evalkit.scoring.write import write_score

__all__ = ["ScoreResult", "ScoreSummary", "read_predictions", "score", "write_score"]
