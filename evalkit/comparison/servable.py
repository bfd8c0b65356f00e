"""``gate.require_servable``: the candidate's adapter is one the named server serves as it is.

A gate that passes an adapter vLLM then refuses (or serves with its
embeddings dropped) has approved an artifact nobody can deploy. The verdict
is the candidate card's ``servable`` block (``evalkit card``), recorded in
its ``summary.json`` by ``score --card``/``--adapter``; a candidate without a
card, or with a card made before the block existed, cannot be judged and
fails, saying how to record one.
"""

from __future__ import annotations

from evalkit.comparison.results import ScoredResult
from evalkit.records._compare import RuleCheck

RULE = "require_servable"
SERVERS = {"vllm": "vLLM"}


def servable_check(candidate: ScoredResult, server: str) -> RuleCheck:
    """The rule's check for ``candidate`` on ``server`` (``vllm``)."""
    card = candidate.summary.card
    name = SERVERS.get(server, server)
    passed = False
    if card is None:
        reason = (
            f"{candidate.name} records no adapter card, so whether {name} serves it is "
            "unknown; score it with its card (the card or adapter option of evalkit score)"
        )
    elif card.servable is None:
        reason = (
            f"{candidate.name}'s card (version 1) predates the servable check; write it again "
            "with evalkit card and score with the new card"
        )
    elif card.servable.vllm:
        passed = True
        reason = f"{name} serves the adapter as it is (rules of {card.servable.rules})"
    else:
        problems = card.servable.problems
        reason = f"{name} does not serve the adapter as it is: " + "; ".join(
            f"{problem.code}: {problem.message}" for problem in problems[:3]
        )
    return RuleCheck(
        rule=RULE,
        scope=server,
        passed=passed,
        baseline=None,
        candidate=1.0 if passed else 0.0,
        threshold=1.0,
        drop=None,
        p_value=None,
        significance=None,
        reason=reason,
        negative_flip_ids=[],
    )
