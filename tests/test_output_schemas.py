"""The JSON Schemas of evalkit's persisted outputs, generated from the models and committed.

Readers of manifest.json, summary.json, the audit report, card.json, ledger and
smoke reports (people, and tools in other languages) get a schema in docs/schemas/;
this test fails when a model changes and its committed schema was not
regenerated (EVALKIT_UPDATE_GOLDEN=1). Each is pydantic's schema of the format's
definition: a model, or the plain dataclasses of the split manifest (read by a
``TypeAdapter``, as ``evalkit.records._manifest.manifest_schema`` does).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from pydantic import TypeAdapter

from evalkit.provenance.ledger_state import LedgerReport
from evalkit.records._audit import AuditReport
from evalkit.records._card import AdapterCard
from evalkit.records._checkpoint import CheckpointCard
from evalkit.records._manifest import SplitManifest
from evalkit.records._plan import PlanResult
from evalkit.records._run import ReloadReport, RunRecord
from evalkit.records._smoke import SmokeReport
from evalkit.records._summary import ScoreSummary
from evalkit.records._tokens import TokensReport

SCHEMAS = Path(__file__).resolve().parents[1] / "docs" / "schemas"


@pytest.mark.parametrize(
    ("model", "name"),
    [
        (SplitManifest, "split-manifest"),
        (ScoreSummary, "score-summary"),
        (AuditReport, "audit-report"),
        (RunRecord, "generate-run"),
        (ReloadReport, "reload-report"),
        (PlanResult, "plan-result"),
        (AdapterCard, "adapter-card"),
        (LedgerReport, "ledger-report"),
        (TokensReport, "tokens-report"),
        (SmokeReport, "smoke-report"),
        (CheckpointCard, "checkpoint-card"),
    ],
)
def test_committed_schema_matches_the_model(model: type, name: str) -> None:
    path = SCHEMAS / f"{name}.schema.json"
    schema = TypeAdapter(model).json_schema(mode="serialization")
    text = json.dumps(schema, indent=2, sort_keys=True) + "\n"
    if os.environ.get("EVALKIT_UPDATE_GOLDEN"):
        path.write_text(text)
    assert json.loads(path.read_text()) == schema, f"regenerate {path.name}"
