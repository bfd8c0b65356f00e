"""The test set of a comparison: its ledger state, the fresh-test rule, its split and groups.

The ledger is the one ``score`` recorded the look in (``summary.json``
``ledger``), else ``evalkit-ledger.jsonl`` beside the gold file, else the
``--ledger`` given. Without one the state is ``unknown``: nothing counted
the looks. With ``require_fresh_test: true`` in the contract's gate, a
burned test (or one whose looks cannot be counted) fails the gate.
"""

from __future__ import annotations

import math
from pathlib import Path

from evalkit.comparison.models import RuleCheck, ScopeComparison
from evalkit.comparison.record_models import GoldSplit, LedgerStatus
from evalkit.comparison.recorded import locate
from evalkit.comparison.results import ScoredResult
from evalkit.provenance.ledger import LEDGER_NAME
from evalkit.provenance.ledger_state import FREEZE_ADVICE
from evalkit.provenance.test_split import split_of

RULE = "require_fresh_test"


def find_ledger(results: list[ScoredResult], given: Path | None) -> Path | None:
    """The ledger to read: ``--ledger``, the one the results recorded, or beside the gold file."""
    if given is not None:
        return given
    for result in results:
        ledger = locate(result.summary.ledger, result.path)
        if ledger is not None and ledger.is_file():
            return ledger
    gold = locate(results[0].summary.gold.path, results[0].path)
    if gold is not None and gold.is_file() and (gold.parent / LEDGER_NAME).is_file():
        return gold.parent / LEDGER_NAME
    return None


def _delta_se(overall: ScopeComparison) -> float | None:
    """Standard error of the paired accuracy delta (mean of +1/0/−1 differences)."""
    n = overall.n
    if not n:
        return None
    up, down = overall.positive_flips, overall.negative_flips
    variance = (up + down) / n - ((up - down) / n) ** 2
    return math.sqrt(max(variance, 0.0) / n)


def ledger_status(
    results: list[ScoredResult], overall: ScopeComparison, ledger: Path | None
) -> LedgerStatus:
    """The ledger's state of the gold file all results were scored on."""
    from evalkit.errors import EvalkitError
    from evalkit.provenance.ledger_state import gold_state, has_look

    gold_sha256 = results[0].summary.gold.sha256
    if ledger is None or not ledger.is_file():
        where = f" at {ledger}" if ledger else " beside the gold file"
        return LedgerStatus(
            ledger=str(ledger) if ledger else None,
            state="unknown",
            looks=0,
            reasons=[f"no ledger{where}: the looks at this test set were not counted"],
            recorded=False,
            selection_bias_se=0.0,
            selection_bias_delta=None,
        )
    try:
        state = gold_state(ledger, gold_sha256)
    except EvalkitError as error:
        return LedgerStatus(
            ledger=str(ledger),
            state="unknown",
            looks=0,
            reasons=[error.message],
            recorded=False,
            selection_bias_se=0.0,
            selection_bias_delta=None,
        )
    missing = [
        result.name
        for result in results
        if not (
            result.summary.predictions.sha256
            and has_look(ledger, gold_sha256, result.summary.predictions.sha256)
        )
    ]
    reasons = list(state.reasons)
    if missing:
        reasons.append(
            f"the ledger has no look of {', '.join(missing)}: it was not kept from the run that "
            "scored them (commit it or cache it between runs, see examples/ci), or they were "
            "scored with --no-ledger"
        )
    se = _delta_se(overall)
    return LedgerStatus(
        ledger=str(ledger),
        state=state.state,
        looks=state.looks,
        reasons=reasons,
        recorded=not missing,
        selection_bias_se=state.selection_bias_se,
        selection_bias_delta=state.selection_bias_se * se if se is not None else None,
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
    located = locate(gold.path, result.path)
    if located is not None and gold.path and located != Path(gold.path):
        from evalkit.io import sha256_file

        if sha256_file(located) != gold.sha256:  # a namesake above the result folder
            located = None
    split = split_of(gold.path, located=located)
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
