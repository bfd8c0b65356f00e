"""The test-set ledger: one hash-chained JSONL line per look, appended before a result is published.

Choosing on validation and looking at the test once keeps the test's figures
honest; every further look that informs a choice inflates them (see
``docs/provenance.md``). No number in a result says how often its test was
looked at, so ``score`` appends a line to ``evalkit-ledger.jsonl`` beside the
gold file and ``evalkit ledger`` / ``gate`` read the count back.

Each line records the gold file's hash and the hash of its content (ids
and gold values, so that the same rows re-encoded count as the same test
set), the contract (and ``rules_sha256``, the hash of its normalised rules
alone, so an evalkit upgrade that changes the fingerprint is not mistaken
for a rule change), the predictions' and the result's hashes and the card's
weights hash. ``prev_sha256`` is the sha256 of the previous line's bytes and
``sha256`` that of this line's own canonical JSON, so an edited or deleted
line breaks the chain; the head (``ledger_head``) catches cut last lines.

The ledger is the record: a look is on disk (fsynced, the head updated)
before its result is published, a failed or short write is cut back to the
ledger's previous length, and all of it happens under an exclusive lock
(POSIX ``flock``), so parallel CI jobs neither fork the chain nor lose a
line. This module is on ``score``'s path: standard library and orjson only.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalkit.errors import NO_VALUE, Ref, UnreadableFile, UsageError
from evalkit.io import LEDGER_NAME as LEDGER_NAME
from evalkit.provenance.ledger_head import (
    FIRST_FORMAT_WITH_HEAD,
    HEAD_SUFFIX,
    Head,
    head_problem,
    line_hash,
    read_head,
    write_all,
    write_head,
)

if TYPE_CHECKING:
    from evalkit.records._summary import ScoreSummary

# 3: a line records ``answers_sha256``, the answers judged, which keys its look.
LEDGER_FORMAT = 3


def default_ledger(gold: str | os.PathLike[str]) -> Path:
    """The ledger of a gold file: ``evalkit-ledger.jsonl`` in its folder."""
    return Path(gold).parent / LEDGER_NAME


def writable(path: Path) -> bool:
    """Whether a line can be appended to ``path`` and its head replaced (both in its folder)."""
    parent = path.parent if str(path.parent) else Path(".")
    if not (parent.is_dir() and os.access(parent, os.W_OK | os.X_OK)):
        return False
    if path.exists():
        return path.is_file() and os.access(path, os.W_OK)
    return True


def canonical(value: Any) -> bytes:
    """Sorted-key compact JSON: what ``sha256`` covers."""
    import orjson

    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def rules_sha256(normalized_contract: Mapping[str, Any]) -> str:
    """sha256 of a normalised contract alone (without the evaluator's versions)."""
    return hashlib.sha256(canonical(dict(normalized_contract))).hexdigest()


def line_sha256(entry: Mapping[str, Any]) -> str:
    """The ``sha256`` a line carries: of its canonical JSON without that key."""
    return hashlib.sha256(canonical({k: v for k, v in entry.items() if k != "sha256"})).hexdigest()


def look_entry(
    summary: ScoreSummary, *, purpose: str | None = None, examples_sha256: str | None = None
) -> dict[str, Any]:
    """The fields of a ledger line for a score summary (before time, head check and chain)."""
    card = summary.card
    contract = summary.contract
    return {
        "format": LEDGER_FORMAT,
        "gold_sha256": summary.gold.sha256,
        "gold_path": summary.gold.path,
        "test_set_sha256": getattr(summary.gold, "content_sha256", None),
        "contract": {
            "name": contract.name,
            "version": contract.version,
            "fingerprint": contract.fingerprint,
            "rules_sha256": rules_sha256(contract.normalized),
        },
        "name": summary.name,
        "predictions_sha256": summary.predictions.sha256,
        "answers_sha256": getattr(summary.predictions, "answers_sha256", None),
        "examples_sha256": examples_sha256 or getattr(summary, "examples_sha256", None),
        "card_weights_sha256": card.weights_sha256 if card is not None else None,
        "evalkit_version": summary.evalkit_version,
        "purpose": purpose,
    }


_TEXTS = (
    "prev_sha256", "predictions_sha256", "time", "gold_path", "sha256", "name",
    "test_set_sha256", "examples_sha256", "head_problem", "purpose", "answers_sha256",
)  # fmt: skip


def ledger_entry(value: Any) -> dict[str, Any] | None:
    """A parsed line as a ledger line, or None when it does not have a ledger line's shape.

    Every field the readers use must have its type (a hand edit can put
    anything anywhere): the hashes, chain links and notes strings, the
    contract an object whose version is an integer, the format an integer.
    """
    if not isinstance(value, dict) or not isinstance(value.get("gold_sha256"), str):
        return None
    contract = value.get("contract")
    if not isinstance(contract, dict) or type(contract.get("version", 0)) is not int:
        return None
    if type(value.get("format", 1)) is not int:
        return None
    for key in _TEXTS:
        field = value.get(key)
        if field is not None and type(field) is not str:
            return None
    for key in ("name", "fingerprint", "rules_sha256"):
        field = contract.get(key)
        if field is not None and type(field) is not str:
            return None
    return value


def ledger_lines(data: bytes) -> list[bytes]:
    """The non-blank lines of a ledger's bytes: what line numbers count and hashes cover."""
    return [raw for raw in data.split(b"\n") if raw.strip()]


def parse_line(raw: bytes) -> dict[str, Any] | None:
    """One line as a ledger line, or None when it is not JSON or not of a ledger line's shape."""
    import orjson

    try:
        return ledger_entry(orjson.loads(raw))
    except orjson.JSONDecodeError:
        return None


def is_ledger(data: bytes) -> bool:
    """Whether some line of ``data`` is a ledger line (an edited file still is a ledger)."""
    return any(parse_line(raw) is not None for raw in ledger_lines(data))


def needs_head(entries: Iterable[dict[str, Any] | None]) -> bool:
    """Whether some line was written with a head (so the head must be there)."""
    return any(e is not None and e.get("format", 1) >= FIRST_FORMAT_WITH_HEAD for e in entries)


def check_ledger_file(path: Path) -> None:
    """Refuse to append to an existing file that is not a ledger (it would be changed)."""
    if path.suffix == HEAD_SUFFIX:
        raise UsageError(
            f"{path}: a ledger's head has this name ({HEAD_SUFFIX}); pass the ledger "
            "(a .jsonl file) to {ledger}",
            refs=["ledger"],
        )
    try:
        data = path.read_bytes() if path.is_file() else b""
    except OSError as error:
        raise UnreadableFile(f"{path}: cannot read the ledger: {error.strerror}") from error
    if data.strip() and not is_ledger(data):
        raise UsageError(
            f"{path}: not a test-set ledger (no line of it is one), so no look is appended to "
            "it; pass {ledger} with a new path or an evalkit-ledger.jsonl, or {no_ledger}",
            refs={"ledger": NO_VALUE, "no_ledger": Ref("ledger", False)},
        )


class ByTestSet:
    """Which lines look at the same test set: one gold file, or the same rows in another.

    A line links its gold file's sha256 to its content's (``test_set_sha256``):
    lines that share either are about one test set (union-find), so a
    re-encoded copy of the rows adds to the count of the original, and a
    contract that reads other columns of the same file (another content
    hash) still counts against that file.
    """

    def __init__(self, entries: Iterable[dict[str, Any]] = ()) -> None:
        self._parent: dict[str, str] = {}
        for entry in entries:
            self.add(entry)

    def _find(self, node: str) -> str:
        parent = self._parent.setdefault(node, node)
        while parent != node:
            grand = self._parent[parent]
            self._parent[node] = grand
            node, parent = parent, grand
        return node

    def add(self, entry: Mapping[str, Any]) -> None:
        """Join the gold file and the content of one line."""
        gold = self._find("gold:" + str(entry["gold_sha256"]))
        content = entry.get("test_set_sha256")
        if content:
            other = self._find("rows:" + content)
            if other != gold:
                self._parent[other] = gold

    def of(self, gold_sha256: str) -> str:
        """The test set of a gold file (its own when no line names it)."""
        return self._find("gold:" + gold_sha256)


def same_test_set(raw_lines: list[bytes], entry: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The lines about the test set of ``entry`` (its gold file, or the same rows elsewhere).

    Only lines that contain one of the test set's hashes are parsed, and
    every gold file or content they link adds its hash, until no line adds
    one: the same sets as :class:`ByTestSet` over the whole file, in the
    time of a byte search on the ledgers ``score`` appends to.
    """
    needles = {str(entry["gold_sha256"]), str(entry.get("test_set_sha256") or "")} - {""}
    searched: set[str] = set()
    found: dict[int, dict[str, Any]] = {}
    while needles - searched:
        needle = min(needles - searched)
        searched.add(needle)
        token = needle.encode("utf-8")
        for index in [index for index, raw in enumerate(raw_lines) if token in raw]:
            parsed = found.get(index) or parse_line(raw_lines[index])
            if parsed is None:
                continue
            links = {parsed["gold_sha256"], parsed.get("test_set_sha256")} - {None}
            if links & needles:
                found[index] = parsed
                needles |= links
    return [found[index] for index in sorted(found)]


def look_key(entry: Mapping[str, Any]) -> tuple[str, str]:
    """What makes a look: what was judged, and the contract's rules (the one rule, used by
    the append, the states and the gate).

    What was judged is the answers (``answers_sha256``: the ids and outputs
    scored), never the file or column that held them: three output columns
    of one file are three looks, the same answers in two files one. A line
    written before format 3 names only its predictions file, so it is keyed
    on that: it stays a look of its own (the same answers scored again after
    the upgrade may count one look more, never one less).
    """
    contract = entry.get("contract") or {}
    answers = entry.get("answers_sha256")
    judged = f"answers:{answers}" if answers else f"file:{entry.get('predictions_sha256')}"
    return judged, str(contract.get("rules_sha256") or contract.get("fingerprint"))


def summary_look_key(summary: ScoreSummary) -> tuple[str, str]:
    """The look key of a result: what its ledger line is keyed on."""
    return look_key(look_entry(summary))


def holds_look(entries: Iterable[Mapping[str, Any]], summary: ScoreSummary) -> bool:
    """Whether a line of ``entries`` is this result's look: its gold, what it judged, its rules.

    For a result that recorded no look (scored without a ledger, or before
    results recorded theirs). A line under other rules is not its look,
    whatever it scored: a result whose rules the ledger never recorded is
    unrecorded. A result written before answers were hashed matches a line
    by its predictions file and rules.
    """
    gold, content = summary.gold.sha256, getattr(summary.gold, "content_sha256", None)
    judged, rules = summary_look_key(summary)
    # A line without rules_sha256 (the oldest format) names its rules by fingerprint.
    known = {rules, summary.contract.fingerprint}
    predictions = summary.predictions.sha256
    for entry in entries:
        same_gold = entry.get("gold_sha256") == gold or (
            content is not None and entry.get("test_set_sha256") == content
        )
        if not same_gold or look_key(entry)[1] not in known:
            continue
        if judged.startswith("answers:"):
            if look_key(entry)[0] == judged:
                return True
        elif predictions and entry.get("predictions_sha256") == predictions:
            return True
    return False


@dataclass(frozen=True)
class AppendedLook:
    """A look appended to a ledger: the line, its number and what it did to the count."""

    entry: dict[str, Any]
    """The line as written (its ``sha256`` identifies it)."""
    line: int
    """Its 1-based number among the ledger's non-blank lines."""
    looks: int
    """Looks at its test set now (this one included)."""
    new_look: bool
    """False when the same predictions were scored under the same rules before."""
    head_problem: str | None
    """What was wrong with the ledger before this line (lines cut, head missing), else None."""


def append_look(
    path: str | os.PathLike[str],
    summary: ScoreSummary,
    *,
    purpose: str | None = None,
    examples_sha256: str | None = None,
    now: datetime | None = None,
) -> AppendedLook:
    """Append the look of a score summary to the ledger at ``path``, with its purpose.

    The line is on disk (fsynced) and the head names it before this
    returns; a write that fails or stops short (a full disk) is cut back,
    leaving the ledger and its head as they were, and raises
    :class:`~evalkit.errors.UnreadableFile`. Publish the result only after
    this returns (``write_score`` does), so that no result exists whose look
    is not recorded. ``examples_sha256`` ties the line to the result's
    ``examples.parquet``. When the ledger had lost lines since its head was
    written (or lost its head), the line says so in ``head_problem``: the
    damage stays on record, and every test set of the ledger reads burned.
    """
    ledger = Path(path)
    if ledger.suffix == HEAD_SUFFIX:
        raise UsageError(f"{ledger}: a ledger's head has this name; pass the .jsonl ledger")
    entry = look_entry(summary, purpose=purpose, examples_sha256=examples_sha256)
    moment = (now or datetime.now(UTC)).astimezone(UTC)
    line = {"time": moment.strftime("%Y-%m-%dT%H:%M:%SZ"), **entry}
    try:
        with ledger.open("a+b") as handle:
            lock_ledger(handle, exclusive=True)
            handle.seek(0)
            data = handle.read()
            appended = _append_locked(ledger, handle.fileno(), data, line)
    except IsADirectoryError as error:
        raise UsageError(
            f"{ledger}: is a folder; {{ledger}} takes a .jsonl file", refs=["ledger"]
        ) from error
    except OSError as error:
        raise UnreadableFile(
            f"{ledger}: cannot append the look ({error.strerror}); the ledger and its head were "
            "left as they were"
        ) from error
    return appended


def _append_locked(
    ledger: Path, descriptor: int, data: bytes, line: dict[str, Any]
) -> AppendedLook:
    """Check the head, chain the line, write it, then the head; undo the line on failure."""
    import orjson

    raw_lines = ledger_lines(data)
    tips, unreadable = read_head(ledger)
    # Without a head, whether one is due depends on the lines' format (rare: parse them all).
    due = not tips and needs_head(parse_line(raw) for raw in raw_lines)
    problem = unreadable or head_problem(ledger, tips, raw_lines, due)
    line["head_problem"] = problem
    keys = {look_key(e) for e in same_test_set(raw_lines, line)}
    key = look_key(line)
    line["prev_sha256"] = line_hash(raw_lines[-1]) if raw_lines else None
    line["sha256"] = line_sha256(line)
    body = orjson.dumps(line)
    prefix = b"\n" if data and not data.endswith(b"\n") else b""
    try:
        write_all(descriptor, prefix + body + b"\n")
        os.fsync(descriptor)
        write_head(ledger, Head(len(raw_lines) + 1, line_hash(body)))
    except OSError:
        _cut_back(ledger, descriptor, len(data))
        raise
    return AppendedLook(line, len(raw_lines) + 1, len(keys | {key}), key not in keys, problem)


def _cut_back(ledger: Path, descriptor: int, length: int) -> None:
    """Truncate the ledger to its length before the append (half a line would burn the test)."""
    try:
        os.ftruncate(descriptor, length)
        os.fsync(descriptor)
    except OSError as error:
        raise UnreadableFile(
            f"{ledger}: the look could not be appended, and the part written could not be "
            f"removed ({error.strerror}): cut the file back to {length} bytes"
        ) from error


def lock_ledger(handle: Any, *, exclusive: bool) -> None:
    """``flock`` the ledger: exclusive to append, shared to read its head and lines together."""
    try:
        import fcntl
    except ImportError:  # not POSIX: appends of one write each, unlocked
        return
    fcntl.flock(handle.fileno(), fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
