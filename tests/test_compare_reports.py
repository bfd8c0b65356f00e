"""The rendered reports: golden Markdown and JUnit, schema-valid JUnit, JSON, GitHub lines.

Golden files pin what reviewers and CI see. After an intended change, rewrite
them with ``EVALKIT_UPDATE_GOLDEN=1 .venv/bin/pytest tests/test_compare_reports.py``
and review the diff.
"""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from scored_results import contract, result_in_memory

from evalkit import CandidateReport, ComparisonReport, compare, gate
from evalkit.report.github import error_annotations
from evalkit.report.json_report import render_json
from evalkit.report.junit import render_junit
from evalkit.report.markdown import render_candidate_markdown, render_comparison_markdown

GOLDEN = Path(__file__).parent / "golden" / "compare"
# Jenkins' JUnit schema, vendored (MIT; the licence note is in the file's header).
XSD = Path(__file__).parent / "data" / "junit-10.xsd"

CLASSES = ["billing"] * 40 + ["shipping"] * 30 + ["account"] * 24 + ["legal_threat"] * 6
IDS = [f"T{i:04d}" for i in range(len(CLASSES))]
NO_ORDER = [i % 3 == 0 for i in range(len(CLASSES))]
BASE_WRONG = set(range(0, 8)) | set(range(40, 46)) | set(range(70, 75))


def _result(name: str, wrong: set[int], invalid: set[int] = frozenset(), **extra):
    valid = [i not in invalid for i in range(len(IDS))]
    errors = [None if v else "schema:required" for v in valid]
    return result_in_memory(
        name,
        ids=IDS,
        classes=CLASSES,
        correct=[i not in wrong for i in range(len(IDS))],
        valid=valid,
        errors=errors,
        slices={"no-order-id": NO_ORDER},
        normalized=contract(significance=0.05),
        **extra,
    )


def failing_report() -> CandidateReport:
    """Better on average, but the rare class is broken and a new schema error appears."""
    base = _result("baseline", BASE_WRONG)
    cand = _result("candidate-a", {0, 1, 40, 41, 70, 95, 96, 97, 98}, invalid={20})
    return gate(base, cand, seed=0, resamples=2000)


def several() -> ComparisonReport:
    base = _result("baseline", BASE_WRONG)
    cand_a = _result("candidate-a", {0, 1, 40, 41, 70, 95, 96, 97, 98}, invalid={20})
    cand_b = _result("candidate-b", BASE_WRONG - {2, 3, 4, 40})
    return compare(base, cand_a, cand_b, seed=0, resamples=2000)


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("EVALKIT_UPDATE_GOLDEN") == "1":
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"{path} missing: run with EVALKIT_UPDATE_GOLDEN=1 to create it"
    assert text == path.read_text(encoding="utf-8")


def test_markdown_report_matches_golden() -> None:
    check_golden("report.md", render_candidate_markdown(failing_report()))


def test_comparison_markdown_matches_golden() -> None:
    check_golden("compare.md", render_comparison_markdown(several()))


def test_junit_matches_golden() -> None:
    check_golden("junit.xml", render_junit([failing_report()]))


def test_markdown_leads_with_the_verdict_and_failures() -> None:
    text = render_candidate_markdown(failing_report())
    lines = text.splitlines()
    assert lines[0] == "# ❌ FAIL: candidate-a vs baseline"
    first_table = next(i for i, line in enumerate(lines) if line.startswith("|"))
    failure = next(i for i, line in enumerate(lines) if "max_rare_class_drop" in line)
    assert failure < first_table
    assert "Regressed classes: **legal_threat**." in text
    assert "`T0095`, `T0096`, `T0097`, `T0098`" in lines[failure]
    per_class = text.index("## Per class")
    assert per_class < text.index("## New errors")
    assert "| **legal_threat** ❌ | 6 | rare |" in text
    assert "| `schema:required` | 1 | `T0020` | correct |" in text


def test_passing_markdown_says_so() -> None:
    base = _result("baseline", BASE_WRONG)
    text = render_candidate_markdown(gate(base, base))
    assert text.startswith("# ✅ PASS: baseline vs baseline")
    assert "No rule fails (10 checks)." in text
    assert "The candidate makes no error the baseline did not make." in text


def test_markdown_escapes_pipes_in_labels() -> None:
    classes = ["a|b"] * 20
    ids = [f"x{i}" for i in range(20)]
    base = result_in_memory("b", ids=ids, classes=classes, correct=[True] * 20, slices={})
    text = render_candidate_markdown(gate(base, base))
    assert "| a\\|b | 20 |" in text


@pytest.mark.parametrize("reports", ["failing", "several", "no-rules"])
def test_junit_validates_against_the_jenkins_schema(reports: str) -> None:
    import xmlschema

    if reports == "failing":
        text = render_junit([failing_report()])
    elif reports == "several":
        text = render_junit(several().candidates)
    else:
        rules = contract()
        del rules["gate"]
        base = result_in_memory(
            "b", ids=IDS, classes=CLASSES, correct=[True] * 100, normalized=rules
        )
        text = render_junit([gate(base, base)])
    xmlschema.XMLSchema(XSD).validate(text)


def test_junit_has_one_testcase_per_rule_and_scope() -> None:
    report = failing_report()
    root = ET.fromstring(render_junit([report]))
    cases = root.findall("./testsuite/testcase")
    assert [case.get("name") for case in cases] == [
        f"{check.rule} [{check.scope}]" for check in report.checks
    ]
    failed = [case.get("name") for case in cases if case.find("failure") is not None]
    assert failed == ["max_rare_class_drop [class:legal_threat]"]
    assert root.get("failures") == "1" and root.get("tests") == str(len(report.checks))
    assert "skipped" not in root.attrib


def test_json_round_trips_and_has_the_documented_keys() -> None:
    report = several()
    data = json.loads(render_json(report))
    for key in ("verdict", "failures", "overall", "classes"):
        assert key in data
    for key in ("rule", "scope", "baseline", "candidate", "threshold"):
        assert key in data["candidates"][1]["failures"][0]
    legal = data["candidates"][1]["classes"]["legal_threat"]
    for key in ("rare", "baseline_accuracy", "candidate_accuracy", "delta"):
        assert key in legal
    for key in ("negative_flips", "positive_flips", "mcnemar_p"):
        assert key in legal
    assert ComparisonReport.model_validate(data) == report


def test_json_schema_of_the_report_is_committed_and_current() -> None:
    schema = json.dumps(ComparisonReport.model_json_schema(), indent=2) + "\n"
    path = Path(__file__).parents[1] / "docs" / "schemas" / "compare-report.schema.json"
    if os.environ.get("EVALKIT_UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(schema, encoding="utf-8")
    assert path.read_text(encoding="utf-8") == schema


def test_github_annotations_escape_workflow_command_syntax() -> None:
    lines = error_annotations(failing_report())
    assert len(lines) == 1
    line = lines[0]
    assert line.startswith(
        "::error title=evalkit gate%3A max_rare_class_drop @ class%3Alegal_threat::"
    )
    assert "\n" not in line
    assert "negative flips: T0095, T0096, T0097, T0098" in line
