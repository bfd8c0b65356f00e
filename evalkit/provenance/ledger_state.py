"""Reading the ledger back: the chain check, looks per gold file, and their state.

A **look** is a distinct (answers judged, contract rules) pair scored on a
test set (:func:`~evalkit.provenance.ledger.look_key`): scoring the same
answers again under the same rules adds a line but no look, whichever file
or column held them. A test set is a gold file together with every other encoding
of the same rows (lines that share a gold file's or a content's sha256).
The states (DESIGN.md): ``fresh`` (no look), ``seen`` (one), ``reused``
(2–4), ``burned`` (5 or more; or rules first used after others had been;
or a broken chain or a damaged head, which makes every count of the file
untrustworthy).

The selection bias shown beside a reused test's figures is the worst case
of "keep what beat the baseline": with L looks at candidates that are truly
no better, keeping those that scored above the baseline and combining them
reports an advantage of about ``sqrt(2)/pi · sqrt(L) ≈ 0.45·√L`` standard
errors (derivation and simulation in ``bench/bench_selection_bias.py``).
"""

from __future__ import annotations

import itertools
import math
import os
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from evalkit._version import __version__
from evalkit.errors import MalformedFile, UnreadableFile
from evalkit.provenance.ledger import LEDGER_NAME, look_key
from evalkit.provenance.ledger_head import head_path
from evalkit.provenance.ledger_read import LedgerScan, scan_ledger
from evalkit.records._base import Persisted

State = Literal["fresh", "seen", "reused", "burned"]
FREEZE_ADVICE = (
    "freeze a new test split (evalkit split --freeze OLD/assignments.parquet with new data, "
    "or a held-back set) and look at it once"
)
REUSED_FROM, BURNED_FROM = 2, 5
# Advantage, in standard errors, that keeping the candidates which beat the
# baseline on the test (and combining them) reports after L looks at
# candidates that are truly at chance: sqrt(2)/pi * sqrt(L).
SELECTION_BIAS_PER_SQRT_LOOK = math.sqrt(2) / math.pi


def selection_bias_se(looks: int) -> float:
    """Worst-case selection bias after ``looks`` looks, in standard errors (0.45·√L)."""
    return SELECTION_BIAS_PER_SQRT_LOOK * math.sqrt(looks) if looks >= REUSED_FROM else 0.0


class _Model(Persisted):
    """The models of this file, on the one persisted base."""


class ContractSeen(_Model):
    """A contract (by its rules) used on a gold file, in the order first seen."""

    name: str
    """The contract's name."""
    version: int
    """Its version."""
    fingerprint: str
    """Its fingerprint when first seen."""
    first_seen: str
    """Time of the first line that used it (UTC)."""


class GoldState(_Model):
    """What the ledger says about one gold file and its test set."""

    path: str | None
    """The gold file as the last line recorded it."""
    lines: int
    """Lines recorded for its test set (every score, re-scores included)."""
    looks: int
    """Distinct (answers judged, contract rules) pairs: the looks at this test set."""
    candidates: int
    """Distinct sets of answers looked at (one candidate may be looked at under two contracts;
    lines written before answers were hashed count their predictions file)."""
    contracts: list[ContractSeen]
    """Contracts in the order first seen."""
    state: State
    """``fresh``, ``seen``, ``reused`` or ``burned``."""
    reasons: list[str]
    """Why the state is what it is, one sentence each."""
    selection_bias_se: float
    """Worst-case selection bias of its figures in standard errors (0.45·√looks; 0 below 2)."""
    last_time: str | None
    """Time of the last line."""
    same_rows: list[str] = Field(default_factory=list)
    """Other gold files (sha256) with the same ids and gold values, whose looks count here."""


class LedgerHead(_Model):
    """The ledger's head: kept apart from the lines, so that cut lines are seen."""

    path: str
    """The head file."""
    lines: int
    """Lines the ledger had when the head was last written."""
    last_sha256: str
    """sha256 of the bytes of that last line."""
    tips: int = 1
    """Records in the head file: one, or one per branch after a ``merge=union`` (all checked;
    ``lines`` and ``last_sha256`` are those of the longest)."""


class LedgerReport(_Model):
    """``evalkit ledger --json``: every gold file of one ledger."""

    format_version: int = 1
    """Bumped on any incompatible change of this format."""
    evalkit_version: str
    """The evalkit that read it."""
    ledger: str
    """The ledger file."""
    lines: int
    """Lines in the file."""
    chain_intact: bool
    """False when a line was edited, removed or is not JSON."""
    chain_problems: list[str]
    """Where the chain breaks, or how the ledger disagrees with its head."""
    gold: dict[str, GoldState]
    """Per gold file, by its sha256."""
    head: LedgerHead | None = None
    """The head read beside the ledger (null when there is none)."""


def _looks_like_ledger(path: Path) -> bool:
    import orjson

    try:
        with path.open("rb") as handle:
            first = handle.readline()
        entry = orjson.loads(first)
    except (OSError, orjson.JSONDecodeError):
        return False
    return isinstance(entry, dict) and "gold_sha256" in entry and "prev_sha256" in entry


def resolve_ledger(path: str | os.PathLike[str]) -> tuple[Path, str | None]:
    """(ledger file, gold sha256 to report or None) for a ledger, a folder or a gold file."""
    given = Path(path)
    if given.is_dir():
        return given / LEDGER_NAME, None
    if given.name == LEDGER_NAME or not given.is_file() or _looks_like_ledger(given):
        return given, None
    from evalkit.io import sha256_file  # a gold file: its ledger, its lines only

    ledger = given.parent / LEDGER_NAME
    if not ledger.is_file() and not head_path(ledger).is_file():
        raise UnreadableFile(
            f"{given}: not a ledger, and as a gold file it has no {LEDGER_NAME} beside it, so "
            "no look at it was recorded there; pass the ledger file score wrote, or its folder"
        )
    return ledger, sha256_file(given)


def _state_of(
    entries: list[dict[str, Any]], chain_problems: list[str], same_rows: list[str]
) -> GoldState:
    looks = {look_key(e) for e in entries}
    candidates = {look_key(e)[0] for e in entries}
    contracts: dict[str, ContractSeen] = {}
    for entry in entries:
        contract = entry.get("contract") or {}
        rules = look_key(entry)[1]
        if rules not in contracts:
            contracts[rules] = ContractSeen(
                name=str(contract.get("name")),
                version=int(contract.get("version") or 0),
                fingerprint=str(contract.get("fingerprint")),
                first_seen=str(entry.get("time")),
            )
    n = len(looks)
    reasons = []
    if chain_problems:
        reasons.append(
            f"the ledger's chain is broken ({chain_problems[0]}): its counts cannot be trusted"
        )
    if n >= BURNED_FROM:
        reasons.append(f"{n} looks, {BURNED_FROM} or more: choices made on it have used it up")
    seen = list(contracts.values())
    for earlier, later in itertools.pairwise(seen):
        reasons.append(
            f"contract {later.name} v{later.version} was first used at {later.first_seen}, "
            f"after {earlier.name} v{earlier.version}: the rules changed after the test was seen"
        )
    state: State
    if reasons:
        state = "burned"
    elif n == 0:
        state, reasons = "fresh", ["no look recorded"]
    elif n == 1:
        state, reasons = "seen", ["its figures are unbiased if nothing was chosen on it"]
    else:
        state = "reused"
        reasons = [
            f"if candidates were chosen on it, every figure may be inflated by up to "
            f"{selection_bias_se(n):.2f} standard errors (0.45·√{n})"
        ]
    return GoldState(
        path=entries[-1].get("gold_path") if entries else None,
        lines=len(entries),
        looks=n,
        candidates=len(candidates),
        contracts=seen,
        state=state,
        reasons=reasons,
        selection_bias_se=selection_bias_se(n),
        last_time=entries[-1].get("time") if entries else None,
        same_rows=same_rows,
    )


def _gold_states(scan: LedgerScan, only: str | None) -> dict[str, GoldState]:
    """Per gold file (or only ``only``), the state of its test set."""
    golds = sorted({entry["gold_sha256"] for entry in scan.valid})
    if only is not None:
        golds = [only]
    states = {}
    for gold in golds:
        test_set = scan.test_sets.of(gold)
        entries = [e for e in scan.valid if scan.test_sets.of(e["gold_sha256"]) == test_set]
        mine = [e for e in entries if e["gold_sha256"] == gold]
        others = sorted({e["gold_sha256"] for e in entries} - {gold})
        state = _state_of(entries, scan.problems, others)
        if mine and mine[-1] is not entries[-1]:  # the path of this gold file, not a copy's
            state = state.model_copy(update={"path": mine[-1].get("gold_path")})
        states[gold] = state
    return states


def report_of(scan: LedgerScan, gold_sha256: str | None = None) -> LedgerReport:
    """The report of a scanned ledger; ``gold_sha256`` keeps one gold file (fresh if absent)."""
    if scan.raw_lines and not scan.valid:
        raise MalformedFile(
            f"{scan.path}: not a test-set ledger: no line of it is one ({scan.problems[0]}); pass "
            f"the {LEDGER_NAME} that evalkit score writes (if this was one, it was edited beyond "
            "reading: treat its test set as burned)"
        )
    head = None
    if scan.tips:
        tip = max(scan.tips, key=lambda tip: tip.lines)
        head = LedgerHead(
            path=str(head_path(scan.path)),
            lines=tip.lines,
            last_sha256=tip.last_sha256,
            tips=len(scan.tips),
        )
    return LedgerReport(
        evalkit_version=__version__,
        ledger=str(scan.path),
        lines=len(scan.raw_lines),
        chain_intact=not scan.problems,
        chain_problems=scan.problems,
        gold=_gold_states(scan, gold_sha256),
        head=head,
    )


def read_ledger(path: str | os.PathLike[str], gold_sha256: str | None = None) -> LedgerReport:
    """Read and check a ledger file and its head; ``gold_sha256`` keeps one gold file."""
    return report_of(scan_ledger(path), gold_sha256)


def ledger_report(
    path: str | os.PathLike[str] = ".",
    *,
    json: str | os.PathLike[str] | None = None,
    force: bool = False,
) -> LedgerReport:
    """The looks recorded in the ledger ``path`` names: ``evalkit ledger``'s one call.

    ``path`` is a ledger file, the folder holding one, or a gold file (then
    its ledger, that gold file's lines only). With ``json`` the report is
    written there too, as ``evalkit ledger --json`` writes it: atomically,
    never over the ledger, and over an existing file only with ``force``.
    """
    from evalkit.io import ReportFile

    given = Path(path)
    # A folder only says where the ledger is: the ledger in it is what is read.
    named = given / LEDGER_NAME if given.is_dir() else given
    ReportFile.checked(json, force=force, inputs=[named])
    ledger, gold_sha256 = resolve_ledger(given)
    target = ReportFile.checked(json, force=force, inputs=[named, ledger])
    report = read_ledger(ledger, gold_sha256)
    target.write(report.model_dump_json(indent=2) + "\n")
    return report


def gold_state(ledger: Path, gold_sha256: str) -> GoldState:
    """The state of one gold file's test set in a ledger (``fresh`` when no line names it)."""
    return read_ledger(ledger, gold_sha256).gold[gold_sha256]
