"""The decision record: the choice, the test it rests on, the known regressions, the reload.

A decision is only as good as what it can be traced back to. The record
names the candidate adopted (or that none passes or gains enough), the test
split it was judged on and the groups that split covers, every candidate's
failed checks, how often that test was looked at, and what a reload of the
adopted adapter (or of the kept baseline) needs: the base id and commit and
the adapter's weights hash. What cannot be pinned is listed as missing.
"""

from __future__ import annotations

from evalkit.comparison.models import CandidateReport, Decision
from evalkit.comparison.record_models import GoldSplit, LedgerStatus, ReloadNeeds
from evalkit.comparison.results import ScoredResult
from evalkit.provenance.records import is_commit


def reload_needs(result: ScoredResult, name: str) -> ReloadNeeds:
    """What reloading the model behind a result needs, and what is missing to pin it."""
    summary = result.summary
    base = summary.base or (summary.card or {}).get("base") or {}
    weights = (summary.card or {}).get("weights_sha256")
    missing = []
    if not base.get("id"):
        missing.append("base id (score with --card/--adapter, or --base-model)")
    if not is_commit(base.get("revision")):
        missing.append("base revision (a 40-hex commit)")
    if summary.base is not None and summary.base.get("source") == "card" and not weights:
        missing.append("adapter weights hash")
    return ReloadNeeds(
        result=name,
        base_id=base.get("id"),
        base_revision=base.get("revision"),
        base_pinned=is_commit(base.get("revision")),
        base_quantization=base.get("quantization"),
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
