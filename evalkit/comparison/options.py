"""The options of ``evalkit compare`` and ``evalkit gate``: one definition, both commands.

:class:`ComparisonParams` holds what the two commands share (the bootstrap's
seed and resamples, the provenance checks); :class:`GateParams` and
:class:`CompareParams` are each command's object (compare adds the decision's
``min_gain`` and the suspect-label check). The statistics they set are
recorded in the report as :class:`~evalkit.records._compare.ComparisonOptions`
(seed, resamples, confidence), a persisted record kept apart: the options
object is what was asked, the record what the report's figures rest on.

Light on purpose: ``evalkit compare --help`` imports this, not the comparison.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from numbers import Real
from pathlib import Path

from evalkit import params
from evalkit.errors import ParameterError
from evalkit.options import Params, option
from evalkit.vocabulary import seed_field

DEFAULT_SEED = 0
# 10,000 resamples puts the Monte Carlo error of a 95% percentile bound well
# below the third decimal; they cost milliseconds (see statistics.py).
DEFAULT_RESAMPLES = 10_000
MIN_RESAMPLES, MAX_RESAMPLES = 100, 1_000_000


def _resamples(value: object, parameter: str) -> int:
    """Enough resamples for a 95% percentile bound (100), and not so many that memory runs out."""
    count = params.at_least(value, MIN_RESAMPLES, parameter, "for a 95% interval")
    if count > MAX_RESAMPLES:
        raise ParameterError(parameter, f"must be <= {MAX_RESAMPLES:,}, got {count}")
    return count


def _share(value: object, parameter: str) -> float:
    """An accuracy difference in [0, 1]."""
    if isinstance(value, bool) or not isinstance(value, Real) or not 0 <= float(value) <= 1:
        raise ParameterError(parameter, f"must be an accuracy gain in [0, 1], got {value!r}")
    return float(value)


def _agreeing(value: object, parameter: str) -> int:
    """Suspect labels need at least two results that say the same."""
    return params.at_least(value, 2, parameter, "results")


@dataclass(frozen=True, kw_only=True)
class ComparisonParams(Params):
    """The options ``compare`` and ``gate`` share: the bootstrap and the provenance checks."""

    seed: int = seed_field(
        "Seed of the bootstrap: the same seed gives byte-identical reports.",
        default=DEFAULT_SEED,
    )
    resamples: int = option(
        DEFAULT_RESAMPLES,
        metavar="N",
        check=_resamples,
        help="Paired-bootstrap resamples per scope for the 95% interval of each delta "
        f"({MIN_RESAMPLES} to {MAX_RESAMPLES:,}).",
    )
    factors: tuple[str, ...] = option(
        (),
        flag="--factor",
        metavar="KEY",
        help="A setting the comparison studies (repeatable; e.g. r, lora_dropout, "
        "learning_rate): any other difference of the adapter cards fails as "
        "confounded_ablation.",
    )
    allow_base_change: bool = option(
        False, help="Compare results of different bases anyway (the report says so)."
    )
    ledger: Path | None = option(
        None,
        path_file=True,
        help="Test-set ledger to read when it cannot be found from the results; it must be "
        "the one beside the gold file (or, when there is none, the one every result recorded).",
    )

    def __post_init__(self) -> None:
        if isinstance(self.ledger, str | os.PathLike) and not isinstance(self.ledger, Path):
            object.__setattr__(self, "ledger", Path(self.ledger))
        if isinstance(self.factors, str):  # factors="r": one setting, not its letters
            object.__setattr__(self, "factors", (self.factors,))
        super().__post_init__()


@dataclass(frozen=True, kw_only=True)
class GateParams(ComparisonParams):
    """The options of ``evalkit.gate`` and ``evalkit gate``: the shared ones, nothing more.

    The gate's rules come from the contract; what the caller sets is how the
    intervals are drawn and which provenance differences are accepted.
    """


@dataclass(frozen=True, kw_only=True)
class CompareParams(ComparisonParams):
    """The options of ``evalkit.compare`` and ``evalkit compare``: the shared ones, the
    decision's threshold and the suspect-label check."""

    min_gain: float = option(
        0.0,
        metavar="GAIN",
        check=_share,
        help="Overall accuracy gain a passing candidate needs to be adopted (0 to 1).",
    )
    suspect_min_agree: int | None = option(
        None,
        metavar="N",
        check=_agreeing,
        help="Suspect gold labels: results that must give the same valid answer.",
        default_help="every result; invalid outputs abstain",
    )
    text: str | None = option(
        None,
        metavar="COL",
        renamed=("text_column",),
        help="Gold file column whose first words show each suspect label's input.",
        default_help="text, or the contract's conversation column",
    )
