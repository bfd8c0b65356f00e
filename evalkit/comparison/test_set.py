"""The test set of a comparison: its ledger state, the fresh-test rule, its split and groups.

The ledger that counts is the one beside the gold file (``evalkit-ledger.jsonl``
in its folder): the results' recorded ledger (``summary.json`` ``ledger``,
from ``score --ledger``) and ``--ledger`` here must be that file, or the
comparison is refused; only when the gold file has none beside it may they
name another, and then all alike. Without any the state is ``unknown``:
nothing counted the looks. Every result that recorded its look (``look``:
line and hash) must find it in that ledger: a ledger that lacks one has lost
lines and reads ``burned``; a line that names other predictions or examples
than the result has means the result was edited (exit 2). With
``require_fresh_test: true`` in the contract's gate, a burned test (or one
whose looks cannot be counted) fails the gate.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalkit.comparison.recorded import locate
from evalkit.comparison.results import ScoredResult
from evalkit.errors import EvalkitError, IncompatibleResults, ParameterError
from evalkit.provenance.ledger import LEDGER_NAME, holds_look, summary_look_key
from evalkit.provenance.ledger_head import head_path
from evalkit.provenance.ledger_state import FREEZE_ADVICE
from evalkit.provenance.test_split import split_of
from evalkit.records._compare import RuleCheck, ScopeComparison
from evalkit.records._compare_records import GoldSplit, LedgerStatus, State
from evalkit.records._summary import EXAMPLES_FILE, SUMMARY_FILE

RULE = "require_fresh_test"


def _same_file(first: Path, second: Path) -> bool:
    try:
        return os.path.samefile(first, second)
    except OSError:
        return first.resolve() == second.resolve()


def _located_gold(result: ScoredResult) -> Path | None:
    """The result's gold file where it is now (a namesake with other bytes is not it)."""
    gold = result.summary.gold
    located = locate(gold.path, result.path)
    if located is None or not located.is_file():
        return None
    if gold.path and located != Path(gold.path):
        from evalkit.io import sha256_file

        if sha256_file(located) != gold.sha256:  # a namesake above the result folder
            return None
    return located


def _beside_gold(results: list[ScoredResult]) -> tuple[Path | None, Path | None]:
    """(the gold file found, the ledger beside it when there is one: ledger or head)."""
    for result in results:
        gold = _located_gold(result)
        if gold is not None:
            ledger = gold.parent / LEDGER_NAME
            there = ledger.is_file() or head_path(ledger).is_file()
            return gold, ledger if there else None
    return None, None


def find_ledger(results: list[ScoredResult], given: Path | None) -> Path | None:
    """The ledger that counts the looks at the results' test set (see the module docstring).

    Raises :class:`~evalkit.errors.IncompatibleResults` when a result's
    recorded ledger, or ``given``, is not the one beside the gold file, or
    (without one there) when they name different files.
    """
    gold, authoritative = _beside_gold(results)
    recorded = [
        (result, located)
        for result in results
        if result.summary.ledger
        and (located := locate(result.summary.ledger, result.path)) is not None
    ]
    if authoritative is not None:
        for result, located in recorded:
            if not _same_file(located, authoritative):
                raise IncompatibleResults(
                    f"{result.path / SUMMARY_FILE}: its look was recorded in "
                    f"{result.summary.ledger}, but the ledger of its gold file {gold} is "
                    f"{authoritative}, which counts the looks at this test set; score it again "
                    "without {ledger} (a ledger elsewhere counts only when the gold file has none)",
                    refs=["ledger"],
                )
        if given is not None and not _same_file(given, authoritative):
            raise ParameterError(
                "ledger",
                f"{given}: the ledger of the gold file {gold} is {authoritative}, which "
                "counts the looks at this test set; leave {ledger} out",
                refs=["ledger"],
            )
        return authoritative
    named = [(f"{r.path / SUMMARY_FILE} ({r.summary.ledger})", p) for r, p in recorded]
    if given is not None:
        named.append((f"{{ledger}} {given}", given))
    for label, path in named[1:]:
        if not _same_file(path, named[0][1]):
            raise IncompatibleResults(
                f"the looks of these results are in different ledgers: {named[0][0]} and "
                f"{label}; score every result of one test set with the same ledger",
                refs=["ledger"],
            )
    return named[0][1] if named else None


@dataclass(frozen=True)
class LedgerFindings:
    """What the ledger says about the test set of all the results compared."""

    ledger: Path | None
    state: State
    looks: int
    reasons: list[str]
    unrecorded: list[str]
    """Results whose look the ledger does not hold because none was recorded."""
    selection_bias_se: float


def _matches(result: ScoredResult, entry: dict[str, Any], ledger: Path) -> None:
    """The line a result names must be about that result: same gold, predictions, answers
    judged, rules and examples."""
    summary = result.summary
    rules = summary_look_key(summary)[1]
    contract = entry.get("contract") or {}
    pairs = [
        ("gold file", entry.get("gold_sha256"), summary.gold.sha256),
        ("predictions", entry.get("predictions_sha256"), summary.predictions.sha256),
        ("answers", entry.get("answers_sha256"), summary.predictions.answers_sha256),
        ("contract rules", contract.get("rules_sha256"), rules),
        (EXAMPLES_FILE, entry.get("examples_sha256"), result.examples_sha256),
    ]
    for what, recorded, actual in pairs:
        if recorded and actual and recorded != actual:
            assert summary.look is not None
            raise IncompatibleResults(
                f"{result.path}: its look (line {summary.look.line} of {ledger}) records another "
                f"{what} (sha256 {recorded[:12]}…) than the result has ({actual[:12]}…): the "
                "result was changed after it was scored; re-run evalkit score"
            )


def _unknown(ledger: Path | None, reason: str) -> LedgerFindings:
    return LedgerFindings(ledger, "unknown", 0, [reason], [], 0.0)


def ledger_findings(results: list[ScoredResult], given: Path | None) -> LedgerFindings:
    """Find the ledger, check every result's look in it, and read its test set's state."""
    from evalkit.provenance.ledger_read import scan_ledger
    from evalkit.provenance.ledger_state import report_of

    ledger = find_ledger(results, given)
    if ledger is None or not (ledger.is_file() or head_path(ledger).is_file()):
        where = f" at {ledger}" if ledger else " beside the gold file"
        return _unknown(ledger, f"no ledger{where}: the looks at this test set were not counted")
    gold_sha256 = results[0].summary.gold.sha256
    try:
        scan = scan_ledger(ledger)
        state = report_of(scan, gold_sha256).gold[gold_sha256]
    except EvalkitError as error:
        return _unknown(ledger, error.message)
    lost, unrecorded = [], []
    for result in results:
        look = result.summary.look
        if look is not None:
            entry = scan.line_of(look.line, look.sha256)
            if entry is None:
                lost.append(f"{result.name} (line {look.line})")
            else:
                _matches(result, entry, ledger)
        elif not holds_look(scan.valid, result.summary):
            unrecorded.append(result.name)
    reasons, current = list(state.reasons), state.state
    if lost:
        reasons.insert(
            0,
            f"the ledger lacks the look of {', '.join(lost)} that the result recorded: lines "
            "were cut or edited, so its counts cannot be trusted",
        )
        current = "burned"
    return LedgerFindings(
        ledger, current, state.looks, reasons, unrecorded, state.selection_bias_se
    )


def _delta_se(overall: ScopeComparison) -> float | None:
    """Standard error of the paired accuracy delta (mean of +1/0/−1 differences)."""
    n = overall.n
    if not n:
        return None
    up, down = overall.positive_flips, overall.negative_flips
    variance = (up + down) / n - ((up - down) / n) ** 2
    return math.sqrt(max(variance, 0.0) / n)


def ledger_status(
    findings: LedgerFindings, results: list[ScoredResult], overall: ScopeComparison
) -> LedgerStatus:
    """The ledger's state of the test set, for one comparison of ``results``."""
    names = {result.name for result in results}
    missing = [name for name in findings.unrecorded if name in names]
    reasons = list(findings.reasons)
    if missing and findings.state != "unknown":
        reasons.append(
            f"the ledger has no look of {', '.join(missing)} under these rules: it was not kept "
            "from the run that scored them (commit it or cache it between runs, see examples/ci), "
            "or they were scored or re-scored without a ledger (--no-ledger), which counts as "
            "unrecorded"
        )
    se = _delta_se(overall)
    known = findings.state != "unknown"
    return LedgerStatus(
        ledger=str(findings.ledger) if findings.ledger else None,
        state=findings.state,
        looks=findings.looks,
        reasons=reasons,
        recorded=known and not missing,
        selection_bias_se=findings.selection_bias_se,
        selection_bias_delta=(
            findings.selection_bias_se * se if se is not None and known else None
        ),
    )


def fresh_test_check(state: LedgerStatus) -> RuleCheck:
    """``require_fresh_test``: fails on a burned test, or when the looks were not counted."""
    passed = state.state not in ("burned", "unknown") and state.recorded
    if passed:
        reason = f"the test set is {state.state} ({state.looks} looks): not burned"
    elif state.state == "burned":
        reason = f"the test set is burned ({state.reasons[0]}); {FREEZE_ADVICE}"
    else:
        reason = f"the looks at this test set cannot be counted ({state.reasons[-1]})"
    return RuleCheck(
        rule=RULE,
        scope="test_set",
        passed=passed,
        baseline=None,
        candidate=float(state.looks),
        threshold=4.0,
        drop=None,
        p_value=None,
        significance=None,
        reason=reason,
        negative_flip_ids=[],
    )


def gold_split(result: ScoredResult, paired: int) -> GoldSplit:
    """The gold file and, from the manifest beside it, the split and the groups it covers."""
    gold = result.summary.gold
    split = split_of(gold.path, located=_located_gold(result))
    return GoldSplit(
        gold_path=gold.path,
        gold_sha256=gold.sha256,
        n_items=paired,
        split=split.split if split else None,
        n_groups=split.n_groups if split else None,
        group_columns=split.group_columns if split else [],
        manifest=split.manifest if split else None,
        manifest_sha256=split.manifest_sha256 if split else None,
    )
