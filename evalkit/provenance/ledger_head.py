"""The ledger's head: how many lines it had and the hash of its last, kept apart from the lines.

The lines chain each other (``prev_sha256``), so an edited or removed line
is seen, except at the end: cutting the last lines leaves a shorter chain
that is intact. Git has the same problem with objects and solves it with
refs kept apart from them; the ledger keeps its **head** beside it
(``evalkit-ledger.head`` for ``evalkit-ledger.jsonl``): one JSON object a
line, ``{"format": 1, "lines": N, "last_sha256": H}``, where H is the
sha256 of the N-th line's bytes (what the next line's ``prev_sha256``
names). ``score`` writes one such line; a ``merge=union`` of two branches'
heads leaves two, one tip per branch (as git keeps a ref per branch), and
every one must hold.

Every append updates the head after the line is on disk (fsynced), with a
write to a temporary file that is fsynced and renamed over the old head,
all under the ledger's exclusive lock. So a head is a **lower bound**: the
ledger must hold the line it names, at its position or later (a crash
between the two writes, or a ``merge=union`` of two branches' appends,
leaves lines after it; those are looks, and count). A ledger with fewer
lines, or without the named line, has been cut.

What the head cannot do: anyone who can write the ledger can write its
head too. It catches cut lines (by hand, by a restored cache, by a file
copied from an older checkout) as long as the head was not rewritten to
match; a forger who rewrites the chain, the head and every result is out
of reach of any check without a secret (docs/provenance.md).
This module is on ``score``'s path: standard library and orjson only.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HEAD_FORMAT = 1
HEAD_SUFFIX = ".head"
# Lines of this format and later are written with a head; a ledger that has
# one and no head has lost it (older lines were written before heads were).
FIRST_FORMAT_WITH_HEAD = 2


def head_path(ledger: str | os.PathLike[str]) -> Path:
    """The head of a ledger: the same name with ``.head`` (``evalkit-ledger.head``)."""
    return Path(ledger).with_suffix(HEAD_SUFFIX)


@dataclass(frozen=True)
class Head:
    """What the head records: the ledger's line count and its last line's hash."""

    lines: int
    last_sha256: str

    def to_bytes(self) -> bytes:
        """The head file's bytes: compact JSON and a newline."""
        import orjson

        record = {"format": HEAD_FORMAT, "lines": self.lines, "last_sha256": self.last_sha256}
        return orjson.dumps(record) + b"\n"


def parse_head(data: bytes) -> list[Head] | None:
    """The tips in a head file's bytes (one a line), or None when they are not a head."""
    import orjson

    tips = []
    for raw in data.split(b"\n"):
        if not raw.strip():
            continue
        try:
            value: Any = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return None
        if not isinstance(value, dict) or value.get("format") != HEAD_FORMAT:
            return None
        lines, last = value.get("lines"), value.get("last_sha256")
        if type(lines) is not int or lines < 1 or not isinstance(last, str) or len(last) != 64:
            return None
        tips.append(Head(lines, last))
    return tips or None


def read_head(ledger: Path) -> tuple[list[Head], str | None]:
    """(the head's tips, None); ([], None) when there is no head; ([], the problem)."""
    path = head_path(ledger)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return [], None
    except OSError as error:
        return [], f"the ledger's head {path.name} cannot be read ({error.strerror})"
    tips = parse_head(data)
    if tips is None:
        return [], f"the ledger's head {path.name} is not a ledger head (it was edited)"
    return tips, None


def line_hash(raw: bytes) -> str:
    """The sha256 of a line's bytes (without its newline): what heads and ``prev_sha256`` name."""
    return hashlib.sha256(raw).hexdigest()


def head_problem(
    ledger: Path, tips: list[Head], raw_lines: list[bytes], needs_head: bool
) -> str | None:
    """Why the lines do not hold what the head records, or None when they do.

    ``needs_head``: some line was written with a head (format 2 or later),
    so a missing head means it was removed.
    """
    name = head_path(ledger).name
    if not tips:
        if needs_head:
            return (
                f"the ledger's head {name} is missing, so lines cut from its end cannot be ruled "
                "out (keep both files together)"
            )
        return None
    for tip in sorted(tips, key=lambda tip: -tip.lines):
        if len(raw_lines) < tip.lines:
            return (
                f"the ledger has {len(raw_lines)} lines but its head {name} records {tip.lines}: "
                f"the last {tip.lines - len(raw_lines)} were cut"
            )
        if not any(line_hash(raw) == tip.last_sha256 for raw in raw_lines[tip.lines - 1 :]):
            return (
                f"line {tip.lines} of the ledger is not the line its head {name} records "
                f"({tip.last_sha256[:12]}…): lines were cut or replaced"
            )
    return None


def write_head(ledger: Path, head: Head) -> None:
    """Replace the head atomically: a fsynced temporary file renamed over it.

    Called under the ledger's exclusive lock, so one temporary name does.
    Raises OSError when the new head could not be put in place; once the
    rename is done the head is written, and a failed sync of the folder is
    not an error (the rename is visible; only a power cut could undo it,
    which leaves an older head: a lower bound that still holds).
    """
    path = head_path(ledger)
    temporary = path.with_name(f".{path.name}.tmp")
    try:
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            write_all(descriptor, head.to_bytes())
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
        os.replace(temporary, path)
    except OSError:
        temporary.unlink(missing_ok=True)
        raise
    _sync_folder(path.parent)


def write_all(descriptor: int, data: bytes) -> None:
    """Write every byte or raise OSError (a write that makes no progress is a full disk)."""
    view = memoryview(data)
    while view:
        written = os.write(descriptor, view)
        if written <= 0:
            import errno

            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        view = view[written:]


def _sync_folder(folder: Path) -> None:
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)
