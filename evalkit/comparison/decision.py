"""The decision record: the choice, the test it rests on, the known regressions, the reload.

A decision is only as good as what it can be traced back to. The record
names the candidate adopted (or that none passes or gains enough), the test
split it was judged on and the groups that split covers, every candidate's
failed checks, how often that test was looked at, and what a reload of the
adopted adapter (or of the kept baseline) needs: the base id and commit and
the adapter's weights hash. What cannot be pinned is listed as missing.
"""

from __future__ import annotations

from evalkit.comparison.results import ScoredResult
from evalkit.provenance.records import is_commit
from evalkit.records._compare import CandidateReport, Decision
from evalkit.records._compare_records import GoldSplit, LedgerStatus, ReloadNeeds


def reload_needs(result: ScoredResult, name: str) -> ReloadNeeds:
    """What reloading the model behind a result needs, and what is missing to pin it."""
    summary = result.summary
    card = summary.card
    base = summary.base or (card.base if card is not None else None)
    weights = card.weights_sha256 if card is not None else None
    base_id = base.id if base is not None else None
    revision = base.revision if base is not None else None
    missing = []
    if not base_id:
        missing.append("base id (score with --card/--adapter, or --base-model)")
    if not is_commit(revision):
        missing.append("base revision (a 40-hex commit)")
    if summary.base is not None and summary.base.source == "card" and not weights:
        missing.append("adapter weights hash")
    return ReloadNeeds(
        result=name,
        base_id=base_id,
        base_revision=revision,
        base_pinned=is_commit(revision),
        base_quantization=base.quantization if base is not None else None,
        adapter_weights_sha256=weights,
        missing=missing,
    )


def decision_record(
    decision: Decision,
    ranked: list[CandidateReport],
    chosen: ScoredResult,
    chosen_name: str,
    test_split: GoldSplit,
    test_set: LedgerStatus,
) -> Decision:
    """The decision with its record filled in."""
    return decision.model_copy(
        update={
            "known_regressions": {
                report.candidate.name: [f"{c.rule}@{c.scope}" for c in report.failures]
                for report in ranked
            },
            "test_split": test_split,
            "test_set": test_set,
            "reload": reload_needs(chosen, chosen_name),
        }
    )
