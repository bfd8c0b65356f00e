"""JUnit XML: one test case per gate rule and scope, so CI lists each by name.

The output validates against the Jenkins xunit plugin's ``junit-10.xsd``, the
schema most CI systems accept. That schema allows no ``skipped`` attribute on
``<testsuites>``, so the count lives on each ``<testsuite>`` only. No
timestamps or host names are written: the same report gives the same bytes.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from evalkit.records._compare import CandidateReport, RuleCheck


def _number(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.6g}"


def _details(check: RuleCheck) -> str:
    lines = [
        check.reason,
        f"rule: {check.rule}",
        f"scope: {check.scope}",
        f"baseline: {_number(check.baseline)}",
        f"candidate: {_number(check.candidate)}",
        f"threshold: {_number(check.threshold)}",
    ]
    if check.drop is not None:
        lines.append(f"drop: {_number(check.drop)}")
    if check.p_value is not None:
        lines.append(f"p-value: {_number(check.p_value)} (significance {check.significance})")
    if check.negative_flip_ids:
        lines.append("negative flips: " + ", ".join(check.negative_flip_ids))
    return "\n".join(lines) + "\n"


def _suite(report: CandidateReport) -> ET.Element:
    name = f"{report.candidate.name} vs {report.baseline.name}"
    suite = ET.Element(
        "testsuite",
        {
            "name": name,
            "tests": str(len(report.checks)),
            "failures": str(len(report.failures)),
            "errors": "0",
            "skipped": "0",
            "time": "0",
        },
    )
    properties = ET.SubElement(suite, "properties")
    for key, value in (
        ("verdict", report.verdict),
        ("contract", f"{report.contract.name} v{report.contract.version}"),
        ("contract_fingerprint", report.contract.fingerprint),
        ("gold_sha256", report.gold_sha256),
        ("paired_examples", str(report.pairing.paired)),
    ):
        ET.SubElement(properties, "property", {"name": key, "value": value})
    for check in report.checks:
        case = ET.SubElement(
            suite,
            "testcase",
            {
                "name": f"{check.rule} [{check.scope}]",
                "classname": f"evalkit.gate.{report.candidate.name}",
                "time": "0",
            },
        )
        if check.passed:
            ET.SubElement(case, "system-out").text = _details(check)
        else:
            failure = ET.SubElement(case, "failure", {"type": check.rule, "message": check.reason})
            failure.text = _details(check)
    return suite


def render_junit(reports: list[CandidateReport]) -> str:
    """JUnit XML with one ``<testsuite>`` per candidate."""
    root = ET.Element(
        "testsuites",
        {
            "name": "evalkit gate",
            "tests": str(sum(len(report.checks) for report in reports)),
            "failures": str(sum(len(report.failures) for report in reports)),
            "errors": "0",
            "time": "0",
        },
    )
    root.extend(_suite(report) for report in reports)
    ET.indent(root)
    body = ET.tostring(root, encoding="unicode")
    return f'<?xml version="1.0" encoding="UTF-8"?>\n{body}\n'
