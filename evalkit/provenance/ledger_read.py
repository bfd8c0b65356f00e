"""Reading a ledger and its head together, and checking the chain and the head.

A reader takes the ledger's shared lock and reads the head before the lines:
an appender writes its line before the head, so whatever head a reader
sees, the lines it reads next hold at least what that head names (also on
a system without ``flock``). Every problem is a sentence in
``problems``; any problem means the counts of the whole file cannot be
trusted, which ``ledger_state`` turns into ``burned``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalkit.errors import UnreadableFile
from evalkit.provenance.ledger import (
    LEDGER_NAME,
    ByTestSet,
    ledger_entry,
    ledger_lines,
    line_sha256,
    lock_ledger,
    needs_head,
)
from evalkit.provenance.ledger_head import Head, head_path, head_problem, line_hash, read_head


@dataclass
class LedgerScan:
    """A ledger's lines as read, parsed and checked."""

    path: Path
    raw_lines: list[bytes] = field(default_factory=list)
    entries: list[dict[str, Any] | None] = field(default_factory=list)
    """Per line, the parsed ledger line, or None when it is not one."""
    hashes: list[str] = field(default_factory=list)
    """Per line, the sha256 of its bytes (what the next line and the head name)."""
    problems: list[str] = field(default_factory=list)
    tips: list[Head] = field(default_factory=list)
    """The head's tips (one, or one per branch after a merge)."""
    test_sets: ByTestSet = field(default_factory=ByTestSet)

    @property
    def valid(self) -> list[dict[str, Any]]:
        """The lines that are ledger lines, in order."""
        return [entry for entry in self.entries if entry is not None]

    def line_of(self, number: int, sha256: str) -> dict[str, Any] | None:
        """The line a result recorded: number ``number`` with ``sha256``, or that line moved later.

        A ``merge=union`` of two branches' appends moves lines down, never up.
        """
        for entry in self.entries[max(number - 1, 0) :]:
            if entry is not None and entry.get("sha256") == sha256:
                return entry
        return None


def _parse(raw: bytes, number: int, problems: list[str]) -> dict[str, Any] | None:
    import orjson

    try:
        entry = ledger_entry(orjson.loads(raw))
    except orjson.JSONDecodeError:
        problems.append(f"line {number} is not JSON")
        return None
    if entry is None:
        problems.append(f"line {number} is not a ledger line")
        return None
    if entry.get("sha256") != line_sha256(entry):
        problems.append(f"line {number} was edited (its sha256 does not match its content)")
    if entry.get("head_problem"):
        problems.append(f"line {number} was appended to a damaged ledger ({entry['head_problem']})")
    return entry


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


def _read_locked(ledger: Path) -> tuple[bytes, list[Head], str | None]:
    """The head, then the lines, under the shared lock."""
    try:
        with ledger.open("rb") as handle:
            lock_ledger(handle, exclusive=False)
            tips, unreadable = read_head(ledger)
            data = handle.read()
    except OSError as error:
        raise UnreadableFile(f"{ledger}: cannot read: {error.strerror}") from error
    return data, tips, unreadable


def scan_ledger(path: str | os.PathLike[str]) -> LedgerScan:
    """Read a ledger and its head; parse every line; check the chain and the head.

    A ledger that is gone while its head remains was deleted: the scan has
    no lines and says so. Neither there is :class:`~evalkit.errors.UnreadableFile`.
    """
    ledger = Path(path)
    scan = LedgerScan(ledger)
    if not ledger.is_file():
        scan.tips, _ = read_head(ledger)
        if head_path(ledger).is_file():
            most = max((tip.lines for tip in scan.tips), default=None)
            recorded = f" (it records {most} lines)" if most is not None else ""
            scan.problems.append(
                f"the ledger is missing but its head {head_path(ledger).name} is there"
                f"{recorded}: the ledger was deleted"
            )
            return scan
        raise UnreadableFile(
            f"{ledger}: no such ledger; evalkit score writes {LEDGER_NAME} beside the gold file "
            "(or at {ledger})",
            refs=["ledger"],
        )
    data, scan.tips, unreadable = _read_locked(ledger)
    scan.raw_lines = ledger_lines(data)
    earlier: set[str] = set()
    for number, raw in enumerate(scan.raw_lines, start=1):
        entry = _parse(raw, number, scan.problems)
        if entry is not None:
            _check_link(entry.get("prev_sha256"), number, earlier, scan.problems)
            scan.test_sets.add(entry)
        scan.entries.append(entry)
        scan.hashes.append(line_hash(raw))
        earlier.add(scan.hashes[-1])
    damaged = unreadable or head_problem(
        ledger, scan.tips, scan.raw_lines, needs_head(scan.entries)
    )
    if damaged:
        scan.problems.append(damaged)
    return scan
