"""A comparison's provenance for people: bases, differing settings, test set, decision record.

Markdown for the reports, and the few plain lines ``compare``/``gate`` print.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from evalkit.records._compare import CandidateReport, Decision
from evalkit.records._compare_records import LedgerStatus, ProvenanceComparison
from evalkit.report.markdown_text import code, text


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(_cell(value) for value in row) + " |" for row in rows]


def _value(value: Any) -> str:
    shown = json.dumps(value, sort_keys=True, default=str)
    return code(shown if len(shown) <= 50 else shown[:47] + "...")


def _base(base: dict[str, Any] | None) -> str:
    if not base or not base.get("id"):
        return "not recorded"
    revision = base.get("revision")
    pin = code(str(revision)[:12]) if revision else "**no revision**"
    quant = f", {text(base['quantization'])}" if base.get("quantization") else ""
    return f"{code(base['id'])} @ {pin}{quant}"


def status_text(
    state: LedgerStatus, bold: bool = False, every_reason: bool = True, markdown: bool = False
) -> str:
    """``reused (3 looks): <why>; on the accuracy delta, up to ±0.029``.

    With ``markdown`` the reasons (which name files) are escaped for a Markdown report.
    """
    line = f"**{state.state}**" if bold else state.state
    if state.state != "unknown":
        line += f" ({state.looks} {'look' if state.looks == 1 else 'looks'})"
    reasons = "; ".join(state.reasons if every_reason else state.reasons[:1])
    line += f": {text(reasons) if markdown else reasons}"
    if state.selection_bias_delta is not None and state.looks >= 2:
        line += f"; on the accuracy delta, up to ±{state.selection_bias_delta:.3f}"
    return line


def test_set_line(state: LedgerStatus | None) -> str | None:
    """One Markdown sentence on how often the test set was looked at, with the selection bias."""
    if state is None:
        return None
    return f"Test set: {status_text(state, bold=True, markdown=True)}."


def provenance_lines(report: CandidateReport) -> list[str]:
    """The plain lines ``compare``/``gate`` print about the test set, the bases, the ablation."""
    lines = []
    if report.test_set is not None:
        lines.append(f"  test set: {status_text(report.test_set, every_reason=False)}")
    section = report.provenance
    if section is not None and section.base_change_allowed:
        lines.append(f"  ⚠ different bases ({', '.join(section.base_changed)}), compared anyway")
    if section is not None and section.factors and not section.confounded:
        ablation = next(c for c in report.checks if c.rule == "confounded_ablation")
        lines.append(f"  ablation: {ablation.reason}")
    return lines


def _difference_rows(section: ProvenanceComparison) -> list[list[object]]:
    rows: list[list[object]] = []
    for difference in section.differences:
        if difference.key in section.factors:
            note = "factor"
        elif difference.follows_from:
            note = f"follows from {difference.follows_from}"
        elif difference.key in section.confounded:
            note = "❌ confounded"
        else:
            note = ""
        rows.append([code(difference.key), _value(difference.baseline),
                     _value(difference.candidate), note])  # fmt: skip
    return rows


def provenance_section(report: CandidateReport, level: str) -> list[str]:
    """Bases, weights and every differing setting (empty when nothing was recorded)."""
    section = report.provenance
    if section is None:
        return []
    lines = [f"{level} Provenance", ""]
    rows = [
        ["baseline", _base(section.baseline_base), _weights(section.baseline_weights_sha256)],
        ["candidate", _base(section.candidate_base), _weights(section.candidate_weights_sha256)],
    ]
    lines += [*_table(["side", "base", "adapter weights"], rows), ""]
    if section.base_change_allowed:
        lines += [
            f"> ⚠ **Different bases** ({', '.join(section.base_changed)}), compared only because "
            "of `--allow-base-change`: the change of base is part of every delta below.",
            "",
        ]
    if section.factors:
        studied = ", ".join(code(factor) for factor in section.factors)
        protocol = f", at {section.protocol}" if section.protocol else ""
        lines += [f"Ablation of {studied}{protocol}.", ""]
    if section.differences:
        header = ["setting", "baseline", "candidate", ""]
        lines += [*_table(header, _difference_rows(section)), ""]
    else:
        lines += ["No setting of the cards differs.", ""]
    return lines


def _weights(sha: str | None) -> str:
    return code(f"{sha[:12]}…") if sha else "–"


def decision_record(decision: Decision, level: str, with_reason: bool = True) -> list[str]:
    """The decision, the test it rests on, the known regressions and what a reload needs."""
    lines = [f"{level} Decision record", ""]
    if with_reason:
        lines += [f"**Decision:** {text(decision.reason)}", ""]
    split = decision.test_split
    if split is not None:
        where = code(split.gold_path) if split.gold_path else "the gold file"
        line = (
            f"- **Test set:** {where} (sha256 {code(split.gold_sha256[:12] + '…')}), "
            f"{split.n_items} items"
        )
        if split.split is not None:
            groups = text("/".join(split.group_columns) or "group")
            covered = f", {split.n_groups} {groups} groups" if split.n_groups is not None else ""
            line += f"{covered}: split {code(split.split)} of {code(split.manifest)}"
        lines.append(line + ".")
    state_text = test_set_line(decision.test_set)
    if state_text:
        lines.append(f"- **Looks:** {state_text.removeprefix('Test set: ')}")
    if decision.known_regressions:
        for name, regressions in decision.known_regressions.items():
            listed = ", ".join(code(r) for r in regressions) if regressions else "none"
            lines.append(f"- **Known regressions of {text(name)}:** {listed}.")
    reload = decision.reload
    if reload is not None:
        base = code(reload.base_id) if reload.base_id else "base not recorded"
        revision = f" @ {code(reload.base_revision)}" if reload.base_revision else ""
        weights = (
            f", adapter weights sha256 {code(reload.adapter_weights_sha256)}"
            if reload.adapter_weights_sha256
            else ""
        )
        missing = f"; **missing:** {text(', '.join(reload.missing))}" if reload.missing else ""
        lines.append(f"- **Reload {text(reload.result)}:** {base}{revision}{weights}{missing}.")
    return [*lines, ""]
