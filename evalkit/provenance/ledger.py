"""The test-set ledger: one hash-chained JSONL line per ``evalkit score``.

Choosing on validation and looking at the test once keeps the test's figures
honest; every further look that informs a choice inflates them (see
``docs/provenance.md``). No number in a result says how often its test was
looked at, so ``score`` appends a line to ``evalkit-ledger.jsonl`` beside the
gold file and ``evalkit ledger`` / ``gate`` read the count back.

Each line records the gold file's hash, the contract (and ``rules_sha256``,
the hash of its normalised rules alone, so an evalkit upgrade that changes
the fingerprint is not mistaken for a rule change), the predictions' hash
and the card's weights hash. ``prev_sha256`` is the sha256 of the previous
line's bytes and ``sha256`` that of this line's own canonical JSON, so an
edited or deleted line breaks the chain. Appending takes an exclusive lock
(POSIX ``flock``) so that parallel CI jobs do not fork the chain. This module
is on ``score``'s path: it imports only the standard library and orjson.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from evalkit.errors import UnreadableFile, UsageError

LEDGER_NAME = "evalkit-ledger.jsonl"
LEDGER_FORMAT = 1


def default_ledger(gold: str | os.PathLike[str]) -> Path:
    """The ledger of a gold file: ``evalkit-ledger.jsonl`` in its folder."""
    return Path(gold).parent / LEDGER_NAME


def writable(path: Path) -> bool:
    """Whether a line can be appended to ``path`` (creating it if needed)."""
    if path.exists():
        return path.is_file() and os.access(path, os.W_OK)
    parent = path.parent if str(path.parent) else Path(".")
    return parent.is_dir() and os.access(parent, os.W_OK | os.X_OK)


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


def look_entry(summary: Any, *, purpose: str | None = None) -> dict[str, Any]:
    """The fields of a ledger line for a score summary (before time and chain)."""
    card = getattr(summary, "card", None) or {}
    contract = summary.contract
    return {
        "format": LEDGER_FORMAT,
        "gold_sha256": summary.gold.sha256,
        "gold_path": summary.gold.path,
        "contract": {
            "name": contract.name,
            "version": contract.version,
            "fingerprint": contract.fingerprint,
            "rules_sha256": rules_sha256(contract.normalized),
        },
        "name": summary.name,
        "predictions_sha256": summary.predictions.sha256,
        "card_weights_sha256": card.get("weights_sha256") if isinstance(card, dict) else None,
        "evalkit_version": summary.evalkit_version,
        "purpose": purpose,
    }


def ledger_entry(value: Any) -> dict[str, Any] | None:
    """A parsed line as a ledger line, or None when it does not have a ledger line's shape.

    Every field the readers use must have its type (a hand edit can put
    anything anywhere): the gold and predictions hashes and the chain link
    strings, the contract an object whose version is an integer.
    """
    if not isinstance(value, dict) or not isinstance(value.get("gold_sha256"), str):
        return None
    contract = value.get("contract")
    if not isinstance(contract, dict) or type(contract.get("version", 0)) is not int:
        return None
    texts = ("prev_sha256", "predictions_sha256", "time", "gold_path", "sha256", "name")
    if any(value.get(key) is not None and not isinstance(value[key], str) for key in texts):
        return None
    names = ("name", "fingerprint", "rules_sha256")
    if any(contract.get(key) is not None and not isinstance(contract[key], str) for key in names):
        return None
    return value


def is_ledger(data: bytes) -> bool:
    """Whether some line of ``data`` is a ledger line (an edited file still is a ledger)."""
    import orjson

    for raw in data.split(b"\n"):
        if not raw.strip():
            continue
        try:
            if ledger_entry(orjson.loads(raw)) is not None:
                return True
        except orjson.JSONDecodeError:
            continue
    return False


def check_ledger_file(path: Path) -> None:
    """Refuse to append to an existing file that is not a ledger (it would be changed)."""
    try:
        data = path.read_bytes() if path.is_file() else b""
    except OSError as error:
        raise UnreadableFile(f"{path}: cannot read the ledger: {error.strerror}") from error
    if data.strip() and not is_ledger(data):
        raise UsageError(
            f"{path}: not a test-set ledger (no line of it is one), so no look is appended to "
            "it; pass --ledger with a new path or an evalkit-ledger.jsonl, or --no-ledger"
        )


def _last_line(data: bytes) -> bytes | None:
    """The last non-blank line, as ``read_ledger`` splits it (the bytes ``prev_sha256`` covers)."""
    for raw in reversed(data.split(b"\n")):
        if raw.strip():
            return raw
    return None


def _look_keys(data: bytes, gold_sha256: str) -> set[tuple[Any, Any]]:
    """The (predictions, rules) pairs already recorded for a gold file."""
    import orjson

    keys = set()
    needle = gold_sha256.encode("ascii")
    for raw in data.split(b"\n"):
        if needle not in raw:
            continue
        try:
            entry = ledger_entry(orjson.loads(raw))
        except orjson.JSONDecodeError:
            continue
        if entry is not None and entry.get("gold_sha256") == gold_sha256:
            contract = entry["contract"]
            rules = contract.get("rules_sha256") or contract.get("fingerprint")
            keys.add((entry.get("predictions_sha256"), rules))
    return keys


def append_look(
    path: str | os.PathLike[str],
    summary: Any,
    *,
    purpose: str | None = None,
    now: datetime | None = None,
) -> tuple[dict[str, Any], int, bool]:
    """Append the look of a score summary to the ledger at ``path``.

    Returns the line written, the number of looks at its gold file now, and
    whether this line is a new look (False when the same predictions were
    scored under the same rules before).
    """
    ledger = Path(path)
    entry = look_entry(summary, purpose=purpose)
    moment = (now or datetime.now(UTC)).astimezone(UTC)
    line = {"time": moment.strftime("%Y-%m-%dT%H:%M:%SZ"), **entry}
    try:
        with ledger.open("a+b") as handle:
            _lock(handle)
            handle.seek(0)
            data = handle.read()
            last = _last_line(data)
            keys = _look_keys(data, entry["gold_sha256"])
            key = (entry["predictions_sha256"], entry["contract"]["rules_sha256"])
            new_look = key not in keys
            line["prev_sha256"] = hashlib.sha256(last).hexdigest() if last is not None else None
            line["sha256"] = line_sha256(line)
            prefix = b"\n" if data and not data.endswith(b"\n") else b""
            import orjson

            handle.write(prefix + orjson.dumps(line) + b"\n")
            handle.flush()
            os.fsync(handle.fileno())
    except IsADirectoryError as error:
        raise UsageError(f"{ledger}: is a folder; --ledger takes a .jsonl file") from error
    except OSError as error:
        raise UnreadableFile(
            f"{ledger}: cannot append the look to the ledger ({error.strerror}); the result "
            "was written, but this look is not recorded"
        ) from error
    return line, len(keys | {key}), new_look


def _lock(handle: Any) -> None:
    try:
        import fcntl
    except ImportError:  # not POSIX: appends of one write each, unlocked
        return
    fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
