"""``evalkit.rescore``: score a result's recorded predictions again under a new contract.

When a fix changes the taxonomy or the parser, the methodology is to version
the evaluator and re-score every candidate still needed, never to compare
figures made under different rules. A result folder records which
predictions file it scored (path as given, sha256, format, id and output
columns, duplicate rule), against which gold file (path, sha256), with which
card or base, in which ledger. Re-scoring reads those same files again —
refused when either changed since, because the figures would then describe
other outputs or other labels — and goes through the scorer of
:func:`evalkit.score`, so a re-scored result is what scoring from scratch writes, plus
``rescored_from``: the contract and folder it replaces. The public entry,
:func:`evalkit.rescore` (:mod:`evalkit.scoring.api`), plans every re-score
here (:func:`plan_rescores`: every input found, checked and unchanged, every
output checked) before it runs any (:func:`run_rescore`: the look appended,
then the folder published), for Python and ``evalkit rescore`` alike.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, overload

from evalkit.comparison.recorded import locate
from evalkit.comparison.results import ScoredResult, load_result
from evalkit.contract.model import Contract
from evalkit.errors import ArtifactChanged, EvalkitError, ParameterError, UnreadableFile, UsageError
from evalkit.io import require_regular_file
from evalkit.options import takes
from evalkit.records._summary import (
    SUMMARY_FILE,
    BaseModelInfo,
    RescoredFrom,
    ScoreSummary,
)
from evalkit.scoring.api import ledger_off
from evalkit.scoring.options import RescoreParams, ScoreParams
from evalkit.scoring.result import ScoreResult

if TYPE_CHECKING:
    from evalkit.provenance.ledger_state import GoldState
    from evalkit.scoring.write import ExtraFiles


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
    # Checked before it is hashed: a FIFO would block, /dev/zero never end. A
    # dataset folder is hashed file by file (evalkit.io.sha256_input).
    if not path.is_dir():
        try:
            require_regular_file(path, what)
        except UnreadableFile as error:
            raise UnreadableFile(
                f"{folder}: its {what} {recorded} ({key} in summary.json) cannot be re-scored: "
                f"{error.message.removeprefix(f'{path}: ')}"
            ) from None
    return path


def _unchanged(path: Path, recorded: str | None, folder: Path, what: str, digest: Any) -> None:
    """Refuse a file whose sha256 is not the recorded one; its own digest is never shown
    (a hostile summary could name any file and read its hash back from the message)."""
    if recorded is not None and digest(path) != recorded:
        raise ArtifactChanged(
            f"{path}: its sha256 differs from the one {folder}/summary.json recorded: the "
            f"{what} changed since it was scored, so re-scoring it would describe something "
            "else; score it anew with evalkit score"
        )


def recorded_inputs(result: str | os.PathLike[str] | ScoredResult) -> RecordedInputs:
    """Read a result folder and find its predictions and gold files, unchanged since scoring.

    Raises an :class:`~evalkit.errors.EvalkitError` naming the folder and the
    file: no predictions path recorded, a file not found, or a sha256 that
    differs from the recorded one.
    """
    from evalkit.io import sha256_input
    from evalkit.scoring.predictions import predictions_sha256

    loaded = result if isinstance(result, ScoredResult) else load_result(result)
    folder, summary = loaded.path, loaded.summary
    predictions = _found(summary.predictions.path, folder, "predictions file", "predictions.path")
    gold = _found(summary.gold.path, folder, "gold file", "gold.path")
    _unchanged(predictions, summary.predictions.sha256, folder, "predictions", predictions_sha256)
    _unchanged(gold, summary.gold.sha256, folder, "gold file", sha256_input)
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
    """One re-score without the look: ``ledger`` is only recorded in the summary.

    :func:`run_rescore` appends the look (before it publishes the folder).
    """
    from evalkit.scoring.engine import compute_score

    old = inputs.result
    summary = old.summary
    recorded = summary.predictions
    given = ScoreParams(
        name=summary.name,
        pred_format=recorded.format or "auto",  # type: ignore[arg-type]
        id_column=recorded.id_col,  # summary.json's keys, kept
        output_column=recorded.output_col,
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


def _on_duplicate(value: str | None) -> Any:
    return value if value in ("error", "first", "last") else "error"


Unrecorded = Literal["no_ledger", "replaced_unrecorded"]


@dataclass(frozen=True, kw_only=True)
class RescoreResult(ScoreResult):
    """What :func:`evalkit.rescore` gives per result: the new result, and what its look was."""

    replaced: ScoredResult
    """The result folder re-scored, as read."""
    same_rules: bool
    """Whether the contract's rules are those the replaced result was scored under (only the
    evaluator changed): then the re-score is no new look."""
    folder: Path | None = None
    """Where the new result was written (``out/<name>``); None when it was not."""
    state: GoldState | None = None
    """The ledger's state of the test set after this look; None when none was recorded."""
    unrecorded: Unrecorded | None = None
    """Why no look was recorded: ``no_ledger`` (asked for), or ``replaced_unrecorded`` (the
    result it replaces recorded no ledger, so neither does its re-score)."""


@dataclass(frozen=True)
class RescorePlan:
    """One re-score, found and checked before any is scored: its inputs, ledger and folder."""

    inputs: RecordedInputs
    ledger: Path | None
    target: Path | None


def _folder(item: str | os.PathLike[str] | ScoredResult | RecordedInputs) -> Path:
    if isinstance(item, RecordedInputs):
        return item.result.path
    return item.path if isinstance(item, ScoredResult) else Path(item)


def _distinct_names(folders: list[Path], out: Path) -> None:
    names: dict[str, Path] = {}
    for folder in folders:
        name = folder.resolve().name
        if name in names:
            raise UsageError(
                f"{names[name]} and {folder} would both be re-scored into {out / name}; "
                "give results whose folders have different names"
            )
        names[name] = folder


def plan_rescores(
    items: list[str | os.PathLike[str] | ScoredResult | RecordedInputs],
    contract: Contract | str | os.PathLike[str],
    given: RescoreParams,
    out: Path | None,
    force: bool,
) -> list[RescorePlan]:
    """Find and check every input (and every output, with ``out``) before anything is scored.

    With ``out``, nothing it holds may be an input, and each ``out/<name>``
    is replaced only with ``force``; the contract is loaded first, so a bad
    contract fails before any result is read.
    """
    from evalkit.comparison.recorded import result_inputs
    from evalkit.contract.inputs import schema_file_of
    from evalkit.contract.load import load_contract
    from evalkit.io import CommandFiles, check_new_output
    from evalkit.scoring.looks import rescore_ledger

    contract_path = None if isinstance(contract, Contract) else Path(contract)
    folders = [_folder(item) for item in items]
    if out is not None:
        files = CommandFiles(force=force).reads(*folders, contract_path, given.ledger)
        files.reads_all(result_inputs(folders))
        files.reads(schema_file_of(contract_path) if contract_path is not None else None)
        files.writes_into(out, option="out").check()
    if contract_path is not None:
        load_contract(contract_path)
    if out is not None:
        _distinct_names(folders, out)
    plans = []
    for item, folder in zip(items, folders, strict=True):
        inputs = item if isinstance(item, RecordedInputs) else recorded_inputs(item)
        ledger = rescore_ledger(
            inputs.result.summary.ledger,
            inputs.ledger,
            inputs.gold,
            False if given.no_ledger else given.ledger,
        )
        target = None if out is None else out / folder.resolve().name
        if target is not None:
            sources = [folder, contract_path, inputs.gold, inputs.predictions, ledger]
            check_new_output(target, force, inputs=sources, marker=SUMMARY_FILE)
        plans.append(RescorePlan(inputs, ledger, target))
    return plans


def run_rescore(
    plan: RescorePlan,
    contract: Contract | str | os.PathLike[str],
    given: RescoreParams,
    *,
    force: bool = False,
    extra_files: ExtraFiles = None,
) -> RescoreResult:
    """Re-score one planned result: its look appended, then its folder published (with a target)."""
    from evalkit.provenance.ledger import summary_look_key
    from evalkit.provenance.ledger_state import gold_state
    from evalkit.scoring.looks import warn_damage
    from evalkit.scoring.write import extra_files_of, publish_score, record_look

    replaced = plan.inputs.result
    scored = compute_rescore(plan.inputs, contract, workers=given.workers, ledger=plan.ledger)
    purpose = rescore_purpose(replaced, given.purpose)
    summary, look = scored.summary, None
    if plan.target is not None:
        extra = extra_files_of(extra_files, scored.summary)
        published = publish_score(
            scored, plan.target, force=force, extra_files=extra, purpose=purpose
        )
        summary, look = published.summary, published.look
    elif plan.ledger is not None:
        summary, look = record_look(scored.summary, scored.examples, purpose=purpose)
    state = None
    if plan.ledger is not None and look is not None:
        warn_damage(plan.ledger, look)
        state = gold_state(plan.ledger, summary.gold.sha256)
    unrecorded: Unrecorded | None = None
    if look is None:
        unrecorded = "no_ledger" if given.no_ledger else "replaced_unrecorded"
    return RescoreResult(
        summary=summary,
        examples=scored.examples,
        look=look,
        replaced=replaced,
        same_rules=summary_look_key(summary)[1] == summary_look_key(replaced.summary)[1],
        folder=plan.target,
        state=state,
        unrecorded=unrecorded,
    )


ResultLike = str | os.PathLike[str] | ScoredResult | RecordedInputs
"""A result folder (a path), a loaded result, or the recorded inputs of one."""


@overload
def rescore(
    result: ResultLike,
    contract: Contract | str | os.PathLike[str],
    params: RescoreParams | None = None,
    /,
    *,
    out: str | os.PathLike[str] | None = None,
    force: bool = False,
    extra_files: ExtraFiles = None,
    **values: Any,
) -> RescoreResult: ...


@overload
def rescore(
    result: list[ResultLike] | tuple[ResultLike, ...],
    contract: Contract | str | os.PathLike[str],
    params: RescoreParams | None = None,
    /,
    *,
    out: str | os.PathLike[str] | None = None,
    force: bool = False,
    extra_files: ExtraFiles = None,
    **values: Any,
) -> list[RescoreResult]: ...


@takes(RescoreParams)
def rescore(
    result: ResultLike | list[ResultLike] | tuple[ResultLike, ...],
    contract: Contract | str | os.PathLike[str],
    params: RescoreParams | None = None,
    /,
    *,
    out: str | os.PathLike[str] | None = None,
    force: bool = False,
    extra_files: ExtraFiles = None,
    **values: Any,
) -> RescoreResult | list[RescoreResult]:
    """Score the predictions results recorded again, under ``contract``; each look is recorded.

    ``result`` is a result folder (or a loaded one), or a list of them: one
    :class:`~evalkit.comparison.rescore.RescoreResult` comes back for one, a
    list for a list. Each result's predictions are read as they were
    (format, id and output columns, duplicate rule), against its recorded
    gold file (both refused when their sha256 changed, or when they are not
    regular files or dataset folders), with its card or base and name: what
    :func:`evalkit.score` gives for those inputs, with ``rescored_from``
    naming the contract and folder it replaces. The options are a
    :class:`~evalkit.scoring.options.RescoreParams`, or keywords that make one.

    A re-score is a look at the test set: before a result is returned or
    written, a line (with ``purpose``, by default ``rescore of FOLDER (NAME
    vN)``) is appended to the ledger that result recorded (``ledger`` names
    another; ``no_ledger=True``, or ``ledger=False``, records nothing; a
    result scored without a ledger is re-scored without one). Under the same
    rules it is no new look; under changed rules, after the test was seen, it
    burns the test (docs/provenance.md). The returned result says which
    (``same_rules``, ``state``, ``unrecorded``).

    With ``out`` (a folder), each new result is written into ``out/<name>``,
    ``<name>`` the result folder's name, as ``evalkit rescore --out`` writes
    it (which is this call), with ``extra_files`` as for :func:`score`. Every
    input is found and checked, and every output checked, before anything is
    scored or written. Bad input raises an
    :class:`~evalkit.errors.EvalkitError` that names the result folder.
    """
    given = RescoreParams.build(params, ledger_off(values))
    many = isinstance(result, list | tuple)
    items: list[ResultLike] = list(result) if isinstance(result, list | tuple) else [result]
    if not items:
        raise ParameterError("result", "is empty; pass a result folder, or a list of them")
    target = None if out is None else Path(out)
    plans = plan_rescores(items, contract, given, target, force)
    done: list[RescoreResult] = [
        run_rescore(plan, contract, given, force=force, extra_files=extra_files) for plan in plans
    ]
    return done if many else done[0]
