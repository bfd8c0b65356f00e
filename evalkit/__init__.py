"""evalkit: keep fine-tuning experiments honest.

The public API is re-exported here and imported lazily, so that ``import
evalkit`` (and the ``evalkit --help`` that depends on it) stays fast: polars,
scikit-learn and friends load only when a function that needs them is used.
"""

from __future__ import annotations

from evalkit._lazy import lazy_exports
from evalkit._version import __version__ as __version__

# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    "split": "evalkit.splitting.api",
    "SplitResult": "evalkit.splitting.api",
    "SplitParams": "evalkit.splitting.options",
    "SplitManifest": "evalkit.records._manifest",
    "read_manifest": "evalkit.records._manifest",
    "ExactStratifiedGroupKFold": "evalkit.model_selection",
    "ExactGroupShuffleSplit": "evalkit.model_selection",
    "audit": "evalkit.leakage.api",
    "AuditReport": "evalkit.records._audit",
    "AuditParams": "evalkit.leakage.options",
    "duplicate_components": "evalkit.leakage.clusters",
    "RayOptions": "evalkit.leakage.distributed.session",
    "prompts": "evalkit.chat.prompts",
    "PromptFile": "evalkit.chat.prompts",
    "read_chat": "evalkit.chat.column",
    "ChatColumn": "evalkit.chat.column",
    "compare": "evalkit.comparison.api",
    "gate": "evalkit.comparison.api",
    "load_result": "evalkit.comparison.results",
    "ScoredResult": "evalkit.comparison.results",
    "CandidateReport": "evalkit.records._compare",
    "ComparisonReport": "evalkit.records._compare",
    "load_contract": "evalkit.contract.load",
    "Contract": "evalkit.contract.model",
    "contract_fingerprint": "evalkit.contract.fingerprint",
    "score": "evalkit.scoring.api",
    "rescore": "evalkit.comparison.rescore",
    "ScoreResult": "evalkit.scoring.result",
    "ScoreSummary": "evalkit.records._summary",
    "write_score": "evalkit.scoring.write",
    "read_predictions": "evalkit.scoring.predictions",
    "generate": "evalkit.model.generate",
    "reload_check": "evalkit.model.reload",
    "load_model": "evalkit.model.load",
    "smoke": "evalkit.model.smoke",
    "SmokeReport": "evalkit.records._smoke",
    "adapter_card": "evalkit.provenance.card",
    "load_card": "evalkit.provenance.card",
    "AdapterCard": "evalkit.records._card",
    "read_ledger": "evalkit.provenance.ledger_state",
    "LedgerReport": "evalkit.provenance.ledger_state",
    "append_look": "evalkit.provenance.ledger",
    "AppendedLook": "evalkit.provenance.ledger",
    "PlanResult": "evalkit.records._plan",
    "check_tokens": "evalkit.tokens.api",
    "TokensResult": "evalkit.tokens.api",
    "TokensReport": "evalkit.records._tokens",
    # each command's options object (the one its command line is built from)
    "PlanParams": "evalkit.plan.options",
    "TimeRequest": "evalkit.plan.options",
    "TokensParams": "evalkit.tokens.options",
    "PromptsParams": "evalkit.chat.prompt_options",
    "ScoreParams": "evalkit.scoring.options",
    "RescoreParams": "evalkit.scoring.options",
    "CompareParams": "evalkit.comparison.options",
    "GateParams": "evalkit.comparison.options",
    "SmokeParams": "evalkit.model.options",
    "GenerateParams": "evalkit.model.options",
    "ReloadCheckParams": "evalkit.model.options",
    "CardParams": "evalkit.provenance.card_options",
}

# Subpackages that are also their command's function (the package is callable).
_CALLABLE_PACKAGES = ("plan",)

__getattr__, __dir__, __all__ = lazy_exports(
    __name__, _EXPORTS, submodules=_CALLABLE_PACKAGES, own=["__version__"]
)
