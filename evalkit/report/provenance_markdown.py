"""A comparison's provenance for people: bases, differing settings, test set, decision record.

Markdown for the reports, and the few plain lines ``compare``/``gate`` print.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from evalkit.comparison.models import CandidateReport, Decision
from evalkit.comparison.record_models import LedgerStatus, ProvenanceComparison


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(_cell(value) for value in row) + " |" for row in rows]


def _value(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return f"`{text if len(text) <= 50 else text[:47] + '...'}`"


def _base(base: dict[str, Any] | None) -> str:
    if not base or not base.get("id"):
        return "not recorded"
    revision = base.get("revision")
    pin = f"`{revision[:12]}`" if revision else "**no revision**"
    quant = f", {base['quantization']}" if base.get("quantization") else ""
    return f"`{base['id']}` @ {pin}{quant}"


def status_text(state: LedgerStatus, bold: bool = False, every_reason: bool = True) -> str:
    """``reused (3 looks): <why>; on the accuracy delta, up to ±0.029``."""
    text = f"**{state.state}**" if bold else state.state
    if state.state != "unknown":
        text += f" ({state.looks} {'look' if state.looks == 1 else 'looks'})"
    text += f": {'; '.join(state.reasons if every_reason else state.reasons[:1])}"
    if state.selection_bias_delta is not None and state.looks >= 2:
        text += f"; on the accuracy delta, up to ±{state.selection_bias_delta:.3f}"
    return text


def test_set_line(state: LedgerStatus | None) -> str | None:
    """One sentence on how often the test set was looked at, with the selection bias."""
    return None if state is None else f"Test set: {status_text(state, bold=True)}."


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
        rows.append([f"`{difference.key}`", _value(difference.baseline),
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
        studied = ", ".join(f"`{factor}`" for factor in section.factors)
        protocol = f", at {section.protocol}" if section.protocol else ""
        lines += [f"Ablation of {studied}{protocol}.", ""]
    if section.differences:
        header = ["setting", "baseline", "candidate", ""]
        lines += [*_table(header, _difference_rows(section)), ""]
    else:
        lines += ["No setting of the cards differs.", ""]
    return lines


def _weights(sha: str | None) -> str:
    return f"`{sha[:12]}…`" if sha else "–"


def decision_record(decision: Decision, level: str, with_reason: bool = True) -> list[str]:
    """The decision, the test it rests on, the known regressions and what a reload needs."""
    lines = [f"{level} Decision record", ""]
    if with_reason:
        lines += [f"**Decision:** {decision.reason}", ""]
    split = decision.test_split
    if split is not None:
        where = f"`{split.gold_path}`" if split.gold_path else "the gold file"
        text = (
            f"- **Test set:** {where} (sha256 `{split.gold_sha256[:12]}…`), {split.n_items} items"
        )
        if split.split is not None:
            groups = "/".join(split.group_columns) or "group"
            covered = f", {split.n_groups} {groups} groups" if split.n_groups is not None else ""
            text += f"{covered}: split `{split.split}` of `{split.manifest}`"
        lines.append(text + ".")
    state_text = test_set_line(decision.test_set)
    if state_text:
        lines.append(f"- **Looks:** {state_text.removeprefix('Test set: ')}")
    if decision.known_regressions:
        for name, regressions in decision.known_regressions.items():
            listed = ", ".join(f"`{r}`" for r in regressions) if regressions else "none"
            lines.append(f"- **Known regressions of {name}:** {listed}.")
    reload = decision.reload
    if reload is not None:
        base = f"`{reload.base_id}`" if reload.base_id else "base not recorded"
        revision = f" @ `{reload.base_revision}`" if reload.base_revision else ""
        weights = (
            f", adapter weights sha256 `{reload.adapter_weights_sha256}`"
            if reload.adapter_weights_sha256
            else ""
        )
        missing = f"; **missing:** {', '.join(reload.missing)}" if reload.missing else ""
        lines.append(f"- **Reload {reload.result}:** {base}{revision}{weights}{missing}.")
    return [*lines, ""]
