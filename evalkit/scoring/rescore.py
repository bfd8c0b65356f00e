"""``evalkit.rescore``: score a result's recorded predictions again under a new contract.

When a fix changes the taxonomy or the parser, the methodology is to version
the evaluator and re-score every candidate still needed, never to compare
figures made under different rules. A result folder records which
predictions file it scored (path as given, sha256, format, id and output
columns, duplicate rule), against which gold file (path, sha256), with which
card or base, in which ledger. Re-scoring reads those same files again —
refused when either changed since, because the figures would then describe
other outputs or other labels — and goes through :func:`evalkit.score`, the
one scorer, so a re-scored result is what scoring from scratch writes, plus
``rescored_from``: the contract and folder it replaces. Called from Python,
it records its look in the ledger before it returns, as :func:`evalkit.score`
does; ``evalkit rescore`` appends it when it publishes the folder.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from evalkit.comparison.recorded import locate
from evalkit.comparison.results import ScoredResult, load_result
from evalkit.contract.model import Contract
from evalkit.errors import ArtifactChanged, EvalkitError, UnreadableFile, UsageError
from evalkit.options import takes
from evalkit.records._summary import BaseModelInfo, RescoredFrom, ScoreSummary
from evalkit.scoring.options import RescoreParams, ScoreParams
from evalkit.scoring.result import ScoreResult


@dataclass(frozen=True)
class RecordedInputs:
    """A result folder and the files it recorded, found from here and checked unchanged."""

    result: ScoredResult
    """The result as read (its summary's fingerprint checked)."""
    predictions: Path
    """The predictions file (or folder) it scored, where it was found."""
    gold: Path
    """The gold file it was scored against, where it was found."""
    ledger: Path | None
    """The ledger its look was recorded in, where it was found (None: none recorded or found)."""


def _found(recorded: str | None, folder: Path, what: str, key: str) -> Path:
    if not recorded:
        raise UsageError(
            f"{folder}: summary.json records no {what} ({key}), so there is nothing to "
            "re-score; score the predictions under the new contract with evalkit score instead"
        )
    path = locate(recorded, folder)
    if path is None:
        raise UnreadableFile(
            f"{folder}: its {what} {recorded} ({key} in summary.json) is not found from here "
            "or from the result folder; re-scoring needs the very file that was scored "
            "(run from where evalkit score ran)"
        )
    return path


def _unchanged(path: Path, recorded: str | None, folder: Path, what: str, digest: Any) -> None:
    actual = digest(path)
    if recorded is not None and actual != recorded:
        raise ArtifactChanged(
            f"{path}: its sha256 {actual[:12]}… differs from the {recorded[:12]}… that "
            f"{folder}/summary.json recorded: the {what} changed since it was scored, so "
            "re-scoring it would describe something else; score it anew with evalkit score"
        )


def recorded_inputs(result: str | os.PathLike[str] | ScoredResult) -> RecordedInputs:
    """Read a result folder and find its predictions and gold files, unchanged since scoring.

    Raises an :class:`~evalkit.errors.EvalkitError` naming the folder and the
    file: no predictions path recorded, a file not found, or a sha256 that
    differs from the recorded one.
    """
    from evalkit.io import sha256_file
    from evalkit.scoring.predictions import predictions_sha256

    loaded = result if isinstance(result, ScoredResult) else load_result(result)
    folder, summary = loaded.path, loaded.summary
    predictions = _found(summary.predictions.path, folder, "predictions file", "predictions.path")
    gold = _found(summary.gold.path, folder, "gold file", "gold.path")
    _unchanged(predictions, summary.predictions.sha256, folder, "predictions", predictions_sha256)
    _unchanged(gold, summary.gold.sha256, folder, "gold file", sha256_file)
    ledger = locate(summary.ledger, folder) if summary.ledger else None
    return RecordedInputs(loaded, predictions, gold, ledger)


def _base(summary: ScoreSummary) -> BaseModelInfo | None:
    """The base of a prompt-only run (an adapter's base comes from its card, as in score)."""
    base = summary.base
    if base is None or summary.card is not None or base.source != "options":
        return None
    return base


def rescore_purpose(replaced: ScoredResult, purpose: str | None) -> str:
    """The purpose a re-score's ledger line carries: ``purpose``, else what it replaces."""
    old = replaced.summary.contract
    return purpose or f"rescore of {replaced.path} ({old.name} v{old.version})"


def compute_rescore(
    inputs: RecordedInputs,
    contract: Contract | str | os.PathLike[str],
    *,
    workers: int | None = None,
    ledger: Path | None = None,
) -> ScoreResult:
    """:func:`rescore` without the look: ``ledger`` is only recorded in the summary.

    ``evalkit rescore`` appends the look itself when it publishes the folder
    (:func:`~evalkit.scoring.write.publish_score`).
    """
    from evalkit.scoring.engine import compute_score

    old = inputs.result
    summary = old.summary
    recorded = summary.predictions
    given = ScoreParams(
        name=summary.name,
        pred_format=recorded.format or "auto",  # type: ignore[arg-type]
        id_col=recorded.id_col,
        output_col=recorded.output_col,
        on_duplicate=_on_duplicate(recorded.on_duplicate),
        workers=workers,
    )
    try:
        scored = compute_score(
            contract,
            inputs.gold,
            inputs.predictions,
            given,
            card=summary.card,
            base=_base(summary),
            ledger=ledger,
        )
    except EvalkitError as error:
        raise error.wrapped(before=f"re-scoring {old.path}: ") from error
    for what, now, then in (
        ("predictions", scored.summary.predictions.sha256, recorded.sha256),
        ("gold file", scored.summary.gold.sha256, summary.gold.sha256),
    ):
        if then is not None and now != then:  # changed while it was being read
            raise ArtifactChanged(
                f"re-scoring {old.path}: the {what} changed while it was read; run again"
            )
    replaced = RescoredFrom(
        name=summary.contract.name,
        version=summary.contract.version,
        fingerprint=summary.contract.fingerprint,
        result=str(old.path),
        summary_sha256=old.summary_sha256,
    )
    return ScoreResult(
        summary=scored.summary.model_copy(update={"rescored_from": replaced}),
        examples=scored.examples,
    )


@takes(RescoreParams)
def rescore(
    result: str | os.PathLike[str] | ScoredResult | RecordedInputs,
    contract: Contract | str | os.PathLike[str],
    params: RescoreParams | None = None,
    /,
    **values: Any,
) -> ScoreResult:
    """Score the predictions a result recorded again, under ``contract``; the look is recorded.

    The predictions are read as they were (format, id and output columns,
    duplicate rule), against the recorded gold file, with the recorded card
    or base and name; the result is what :func:`evalkit.score` returns for
    those inputs, with ``rescored_from`` naming the contract and folder it
    replaces. The options are a
    :class:`~evalkit.scoring.options.RescoreParams`, or keywords that make one.

    A re-score is a look at the test set, recorded as ``evalkit rescore``
    records it: before the result is returned, a line (with ``purpose``,
    by default ``rescore of FOLDER (NAME vN)``) is appended to the ledger
    the result recorded (``ledger`` names another; ``no_ledger=True``, or
    ``ledger=False``, records nothing; a result scored without a ledger is
    re-scored without one). Under the same rules it is no new look; under
    changed rules, after the test was seen, it burns the test
    (docs/provenance.md). :meth:`ScoreResult.write` then appends nothing
    more. Bad input raises an :class:`~evalkit.errors.EvalkitError` that
    names the result folder.
    """
    if values.get("ledger") is False:  # the spelling of no_ledger before it was one
        values = {**values, "ledger": None, "no_ledger": True}
    given = RescoreParams.build(params, values)
    from evalkit.scoring.looks import rescore_ledger
    from evalkit.scoring.write import record_look

    inputs = result if isinstance(result, RecordedInputs) else recorded_inputs(result)
    ledger: Path | Literal[False] | None = False if given.no_ledger else given.ledger
    chosen = rescore_ledger(inputs.result.summary.ledger, inputs.ledger, inputs.gold, ledger)
    scored = compute_rescore(inputs, contract, workers=given.workers, ledger=chosen)
    if chosen is None:
        return scored
    summary, look = record_look(
        scored.summary, scored.examples, purpose=rescore_purpose(inputs.result, given.purpose)
    )
    return ScoreResult(summary=summary, examples=scored.examples, look=look)


def _on_duplicate(value: str | None) -> Any:
    return value if value in ("error", "first", "last") else "error"
