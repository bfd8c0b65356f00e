"""The text of ``evalkit ledger`` and the one line ``gate`` prints about its test set."""

from __future__ import annotations

from evalkit.provenance.ledger_state import FREEZE_ADVICE, GoldState, LedgerReport
from evalkit.provenance.test_split import split_of


def state_line(state: GoldState) -> str:
    """``reused: 3 looks (3 candidates), …``: the state with its first reason."""
    noun = "look" if state.looks == 1 else "looks"
    candidates = "candidate" if state.candidates == 1 else "candidates"
    return (
        f"{state.state}: {state.looks} {noun} ({state.candidates} {candidates}, "
        f"{state.lines} scores); {state.reasons[0]}"
    )


def _gold_block(sha: str, state: GoldState) -> list[str]:
    split = split_of(state.path)
    where = f", split {split.split!r} of {split.manifest}" if split else ""
    lines = [f"gold {state.path or '(unknown path)'} (sha256 {sha[:12]}…{where})"]
    lines.append(f"  state      {state_line(state)}")
    for reason in state.reasons[1:]:
        lines.append(f"             {reason}")
    for other in state.same_rows:
        lines.append(
            f"  same rows  as gold sha256 {other[:12]}… (another encoding): looks counted together"
        )
    for contract in state.contracts:
        lines.append(
            f"  contract   {contract.name} v{contract.version} ({contract.fingerprint[:19]}…), "
            f"first used {contract.first_seen}"
        )
    if state.state == "burned":
        lines.append(f"  to do      {FREEZE_ADVICE}")
    return lines


def render_ledger(report: LedgerReport) -> str:
    """Every gold file of a ledger with its looks and state."""
    chain = (
        "chain intact"
        if report.chain_intact
        else "CHAIN BROKEN: " + "; ".join(report.chain_problems[:3])
    )
    lines = [f"ledger {report.ledger}: {report.lines} lines, {chain}"]
    for sha, state in report.gold.items():
        lines += _gold_block(sha, state)
    if not report.gold:
        lines.append(
            "no look recorded"
            if report.chain_intact
            else f"no look readable: every test set it counted is burned; {FREEZE_ADVICE}"
        )
    return "\n".join(lines)
