"""compare / gate on folders written by the real ``evalkit score`` (not the test helper).

The other compare tests write result folders from docs/formats.md; these make
sure the scorer and the comparison agree on that format end to end.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from ticket_gold import gold_rows

from evalkit import compare, gate, score
from evalkit.errors import IncompatibleResults

ROOT = Path(__file__).resolve().parents[1]
CONTRACT = ROOT / "contracts" / "ticket-triage.yaml"


def output(row: dict, category: str | None = None) -> str:
    answer = {
        "category": category or row["category"],
        "priority": row["priority"],
        "order_id": row["order_id"],
        "amount": row["amount"],
    }
    return "```json\n" + json.dumps(answer) + "\n```"


def scored(tmp_path: Path, name: str, wrong: dict[int, str], contract: Path = CONTRACT) -> Path:
    """Score predictions that are right except for the rows in ``wrong`` (index -> class)."""
    gold = tmp_path / "gold.jsonl"
    rows = gold_rows()
    gold.write_text("".join(json.dumps(row) + "\n" for row in rows))
    predictions = tmp_path / f"{name}.jsonl"
    lines = [
        json.dumps({"ticket_id": row["ticket_id"], "output": output(row, wrong.get(i))})
        for i, row in enumerate(rows)
    ]
    predictions.write_text("\n".join(lines) + "\n")
    return score(contract, gold, predictions, name=name).write(tmp_path / name)


BASELINE_WRONG = {i: "technical" for i in range(0, 12)}  # 12 billing errors


def test_real_scores_planted_rare_regression_fails_and_clean_candidate_passes(
    tmp_path: Path,
) -> None:
    baseline = scored(tmp_path, "baseline", BASELINE_WRONG)
    # Fixes every billing error, files 4 of the 6 legal threats as account.
    broken = scored(
        tmp_path, "candidate-a", {84: "account", 85: "account", 86: "account", 87: "account"}
    )
    clean = scored(tmp_path, "candidate-b", {i: "technical" for i in range(0, 4)})
    report_a = gate(baseline, broken)
    assert report_a.overall.delta is not None and report_a.overall.delta > 0
    assert report_a.verdict == "fail"
    assert ("max_rare_class_drop", "class:legal_threat") in [
        (f.rule, f.scope) for f in report_a.failures
    ]
    assert report_a.classes["legal_threat"].rare
    report_b = gate(baseline, clean)
    assert report_b.verdict == "pass", report_b.failures
    assert report_b.overall.negative_flips == 0 and report_b.overall.positive_flips == 8
    ranking = compare(baseline, broken, clean)
    assert ranking.decision.candidate == "candidate-b"


def test_real_scores_under_contract_version_1_and_2_are_refused(tmp_path: Path) -> None:
    data = yaml.safe_load(CONTRACT.read_text())
    data["version"] = 2
    v2 = tmp_path / "ticket-triage-v2.yaml"
    v2.write_text(yaml.safe_dump(data))
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    first = scored(tmp_path / "one", "baseline", BASELINE_WRONG)
    second = scored(tmp_path / "two", "candidate", {}, contract=v2)
    with pytest.raises(
        IncompatibleResults, match=r"ticket-triage v1 \(sha256:\w+\) vs ticket-triage v2"
    ):
        gate(first, second)
