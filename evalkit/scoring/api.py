"""``evalkit.score`` and ``evalkit.rescore``: the one run path of scoring.

``evalkit score`` and ``evalkit rescore`` on the command line are these two
calls (their options object, one call, then rendering), so everything that
makes a result trustworthy happens here, once, for Python and the command
line alike: reading the inputs, choosing the ledger (:mod:`.looks`),
refusing an output that would replace an input or an existing folder
without ``force``, appending the look to the ledger before any figure is
returned or published, and publishing the folder atomically
(:mod:`.write`). Given ``out``, a call writes the result folder itself;
without it, it returns the result (its look already recorded) for
:meth:`~evalkit.ScoreResult.write`.

Light on purpose: the command line imports this module first, and ``score``
checks its inputs, starts hashing them and starts the parsing subprocesses
before the engine's heavy imports, so that those run beside the imports.
"""

from __future__ import annotations

import os
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalkit.errors import ParameterError
from evalkit.io import is_path
from evalkit.options import takes
from evalkit.scoring.options import ScoreParams

if TYPE_CHECKING:
    from evalkit.contract.model import Contract
    from evalkit.io import CommandFiles, TableLike
    from evalkit.records._summary import BaseModelInfo
    from evalkit.scoring.result import ScoreResult
    from evalkit.scoring.write import ExtraFiles


def ledger_off(values: dict[str, Any]) -> dict[str, Any]:
    """``ledger=False``, the spelling of ``no_ledger=True`` before it was one."""
    if values.get("ledger") is False:
        return {**values, "ledger": None, "no_ledger": True}
    return values


def _score_files(
    contract: object, tables: tuple[object, object], given: ScoreParams, out: Path, force: bool
) -> CommandFiles:
    """What a score reads and writes, checked before anything is read: ``out`` replaces none."""
    from evalkit.io import CommandFiles
    from evalkit.provenance.ledger import default_ledger
    from evalkit.records._summary import SUMMARY_FILE

    gold, predictions = tables
    files = CommandFiles(force=force)
    files.reads(*(path for path in (contract, gold, predictions) if is_path(path)))
    files.reads(*(path for path in (given.card, given.adapter) if is_path(path)))
    if not given.no_ledger:  # the ledger this look goes to, or would go to
        files.reads(given.ledger or (default_ledger(gold) if is_path(gold) else None))
    files.writes(out, option="out", marker=SUMMARY_FILE).check()
    return files


def _warn_card(result: ScoreResult) -> None:
    from evalkit.scoring.looks import warn

    card = result.summary.card
    if card is not None and card.errors:
        codes = ", ".join(sorted({problem.code for problem in card.errors}))
        warn(f"the adapter card records errors ({codes}); see evalkit card")


@takes(ScoreParams)
def score(
    contract: Contract | str | os.PathLike[str],
    gold: TableLike,
    predictions: TableLike,
    params: ScoreParams | None = None,
    /,
    *,
    base: BaseModelInfo | None = None,
    out: str | os.PathLike[str] | None = None,
    force: bool = False,
    extra_files: ExtraFiles = None,
    **values: Any,
) -> ScoreResult:
    """Score predictions against gold under a contract; the look is in the ledger first.

    ``contract`` is a loaded :class:`Contract` or a contract file. ``gold``
    and ``predictions`` are files (predictions also a folder or a pipe; a
    Hugging Face DatasetDict folder read at ``hf_split``) or polars, pandas
    or pyarrow frames (predictions: an id and an output column). The options
    are a :class:`~evalkit.scoring.options.ScoreParams`, or keywords that
    make one. File predictions are read per ``pred_format`` (``auto``
    recognises them); ``id_column`` and ``output_column`` name the id (a dotted
    path for nested records) and the raw text. Duplicate prediction ids are
    an error unless ``on_duplicate`` is ``first`` or ``last``; predictions
    for ids not in gold are counted and ignored. ``workers`` sets the
    parsing processes (default: all cores for large inputs). ``card`` (a
    ``card.json``, an :class:`~evalkit.AdapterCard` or its JSON data),
    ``adapter`` (a folder whose card is made), ``base_model`` and
    ``base_revision`` (a prompt-only run), or ``base`` (a
    ``BaseModelInfo``) record where the predictions came from.

    This is a look at the test set, recorded as ``evalkit score`` records it:
    before the result is returned or written, a line (with ``purpose``) is
    appended to ``ledger``, by default ``evalkit-ledger.jsonl`` beside a gold
    file (a gold frame has no ledger unless one is named; ``no_ledger=True``,
    or ``ledger=False``, records nothing). The look is keyed on the answers
    judged and the contract's rules (docs/provenance.md).

    With ``out`` the result folder is written too, as ``evalkit score --out``
    writes it (which is this call): ``summary.json``, ``examples.parquet``
    and ``extra_files`` (name -> bytes, or a function of the summary that
    gives them), all or nothing; ``out`` is never an input, and an existing
    folder is replaced only with ``force``, checked before the tables are read.
    Without ``out``, :meth:`ScoreResult.write` writes it later and appends
    nothing more. Bad input raises an :class:`~evalkit.errors.EvalkitError`;
    a look that goes unrecorded or a damaged ledger is an
    :class:`~evalkit.errors.EvalkitWarning`.
    """
    from evalkit.io import hash_early
    from evalkit.scoring.looks import chosen_ledger
    from evalkit.scoring.processes import early_workers
    from evalkit.scoring.sources import score_base, score_card, score_tables

    given = ScoreParams.build(params, ledger_off(values))
    if base is not None and given.base_model is not None:
        raise ParameterError(
            "base", "and {base_model} are both given: give one, not both", refs=["base_model"]
        )
    gold, predictions = score_tables(gold, predictions, given.hf_split)
    target = None if out is None else Path(out)
    files = None
    if target is not None:  # the outputs first: a ledger inside --out is refused as such
        files = _score_files(contract, (gold, predictions), given, target, force)
    ledger = chosen_ledger(gold, False if given.no_ledger else given.ledger)
    # Hashing and the parsing subprocesses start now, beside the engine's imports.
    hash_early([Path(table) for table in (gold, predictions) if is_path(table)])
    early = early_workers(Path(predictions), given.workers) if is_path(predictions) else None
    with early or nullcontext():
        from evalkit.scoring.engine import compute_score

        result = compute_score(
            contract,
            gold,
            predictions,
            given,
            card=score_card(given),
            base=base if base is not None else score_base(given),
            ledger=ledger,
        )
    _warn_card(result)
    if target is None or files is None:
        return _look_recorded(result, given.purpose)
    if is_path(contract):
        from evalkit.contract.inputs import schema_file_of

        files.reads(schema_file_of(contract)).check()
    return _published(result, target, force, extra_files, given.purpose, files.inputs)


def _look_recorded(result: ScoreResult, purpose: str | None) -> ScoreResult:
    """The result with its look appended to the ledger its summary names (if any)."""
    from evalkit.scoring.looks import warn_damage
    from evalkit.scoring.result import ScoreResult
    from evalkit.scoring.write import record_look

    if result.summary.ledger is None:
        return result
    summary, look = record_look(result.summary, result.examples, purpose=purpose)
    warn_damage(Path(result.summary.ledger), look)
    return ScoreResult(summary=summary, examples=result.examples, look=look)


def _published(
    result: ScoreResult,
    out: Path,
    force: bool,
    extra_files: ExtraFiles,
    purpose: str | None,
    inputs: list[Path],
) -> ScoreResult:
    """The result written into ``out``, its look appended first (the folder appears after)."""
    from evalkit.scoring.looks import warn_damage
    from evalkit.scoring.result import ScoreResult
    from evalkit.scoring.write import extra_files_of, publish_score

    published = publish_score(
        result,
        out,
        force=force,
        extra_files=extra_files_of(extra_files, result.summary),
        purpose=purpose,
        inputs=inputs,
    )
    if published.look is not None and result.summary.ledger is not None:
        warn_damage(Path(result.summary.ledger), published.look)
    return ScoreResult(summary=published.summary, examples=result.examples, look=published.look)
