"""Reading the ledger back: the chain check, looks per gold file, and their state.

A **look** is a distinct (predictions, contract rules) pair scored on a gold
file: scoring the same predictions again under the same rules adds a line
but no look. The states (DESIGN.md): ``fresh`` (no look), ``seen`` (one),
``reused`` (2–4), ``burned`` (5 or more; or rules first used after others
had been; or a broken chain, which makes every count of the file
untrustworthy).

The selection bias shown beside a reused test's figures is the worst case
of "keep what beat the baseline": with L looks at candidates that are truly
no better, keeping those that scored above the baseline and combining them
reports an advantage of about ``sqrt(2)/pi · sqrt(L) ≈ 0.45·√L`` standard
errors (derivation and simulation in ``bench/bench_selection_bias.py``).
"""

from __future__ import annotations

import hashlib
import itertools
import math
import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from evalkit._version import __version__
from evalkit.errors import MalformedFile, UnreadableFile
from evalkit.provenance.ledger import LEDGER_NAME, ledger_entry, line_sha256

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


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


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
    """What the ledger says about one gold file."""

    path: str | None
    """The gold file as the last line recorded it."""
    lines: int
    """Lines recorded for this gold file (every score, re-scores included)."""
    looks: int
    """Distinct (predictions, contract rules) pairs: the looks at this test."""
    candidates: int
    """Distinct predictions files looked at (one candidate may be looked at under two contracts)."""
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
    """Where the chain breaks."""
    gold: dict[str, GoldState]
    """Per gold file, by its sha256."""


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
    if not ledger.is_file():
        raise UnreadableFile(
            f"{given}: not a ledger, and as a gold file it has no {LEDGER_NAME} beside it, so "
            "no look at it was recorded there; pass the ledger file (score --ledger) or its folder"
        )
    return ledger, sha256_file(given)


def _parse(raw: bytes, number: int, problems: list[str]) -> dict[str, Any] | None:
    import orjson

    try:
        entry = orjson.loads(raw)
    except orjson.JSONDecodeError:
        problems.append(f"line {number} is not JSON")
        return None
    if ledger_entry(entry) is None:
        problems.append(f"line {number} is not a ledger line")
        return None
    if entry.get("sha256") != line_sha256(entry):
        problems.append(f"line {number} was edited (its sha256 does not match its content)")
    return entry


def _rules_id(entry: dict[str, Any]) -> str:
    contract = entry.get("contract") or {}
    return str(contract.get("rules_sha256") or contract.get("fingerprint"))


def _state_of(entries: list[dict[str, Any]], chain_problems: list[str]) -> GoldState:
    looks = {(e.get("predictions_sha256"), _rules_id(e)) for e in entries}
    candidates = {e.get("predictions_sha256") for e in entries}
    contracts: dict[str, ContractSeen] = {}
    for entry in entries:
        contract = entry.get("contract") or {}
        rules = _rules_id(entry)
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
    )


def _check_link(prev: Any, number: int, earlier: set[str], problems: list[str]) -> None:
    """Each line names an earlier line by the hash of its bytes; only the first names none.

    Usually the named line is the one just before. After two branches'
    appends were joined (a ``merge=union`` of a committed ledger), a line may
    name another earlier line: that is a merge, not an edit. A name that
    matches no earlier line means that line was edited or removed.
    """
    if prev is None:
        if number > 1:
            problems.append(
                f"line {number} names no earlier line (the lines before it were removed, or "
                "two ledgers were joined)"
            )
    elif prev not in earlier:
        problems.append(
            f"line {number} follows a line that is not in the ledger (an earlier line was "
            "edited or removed)"
        )


def read_ledger(path: str | os.PathLike[str], gold_sha256: str | None = None) -> LedgerReport:
    """Read and check a ledger file; ``gold_sha256`` keeps one gold file (fresh if absent)."""
    ledger = Path(path)
    if not ledger.is_file():
        raise UnreadableFile(
            f"{ledger}: no such ledger; evalkit score writes {LEDGER_NAME} beside the gold file "
            "(or at --ledger)"
        )
    try:
        data = ledger.read_bytes()
    except OSError as error:
        raise UnreadableFile(f"{ledger}: cannot read: {error.strerror}") from error
    raw_lines = [line for line in data.split(b"\n") if line.strip()]
    problems: list[str] = []
    by_gold: dict[str, list[dict[str, Any]]] = {}
    earlier: set[str] = set()
    for number, raw in enumerate(raw_lines, start=1):
        entry = _parse(raw, number, problems)
        if entry is not None:
            _check_link(entry.get("prev_sha256"), number, earlier, problems)
            by_gold.setdefault(entry["gold_sha256"], []).append(entry)
        earlier.add(hashlib.sha256(raw).hexdigest())
    if raw_lines and not by_gold:
        raise MalformedFile(
            f"{ledger}: not a test-set ledger: no line of it is one ({problems[0]}); pass the "
            f"{LEDGER_NAME} that evalkit score writes (if this was one, it was edited beyond "
            "reading: treat its test set as burned)"
        )
    if gold_sha256 is not None:
        by_gold = {gold_sha256: by_gold.get(gold_sha256, [])}
    return LedgerReport(
        evalkit_version=__version__,
        ledger=str(ledger),
        lines=len(raw_lines),
        chain_intact=not problems,
        chain_problems=problems,
        gold={sha: _state_of(entries, problems) for sha, entries in sorted(by_gold.items())},
    )


def gold_state(ledger: Path, gold_sha256: str) -> GoldState:
    """The state of one gold file in a ledger (``fresh`` when the ledger has no line for it)."""
    return read_ledger(ledger, gold_sha256).gold[gold_sha256]


def has_look(ledger: Path, gold_sha256: str, predictions_sha256: str) -> bool:
    """Whether the ledger records a look at these predictions on this gold file."""
    import orjson

    for raw in ledger.read_bytes().split(b"\n"):
        if not raw.strip():
            continue
        try:
            entry = ledger_entry(orjson.loads(raw))
        except orjson.JSONDecodeError:
            continue
        if (
            entry is not None
            and entry.get("gold_sha256") == gold_sha256
            and entry.get("predictions_sha256") == predictions_sha256
        ):
            return True
    return False
