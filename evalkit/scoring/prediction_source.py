"""Where a predictions file's bytes come from, read once, and what format they hold.

A prediction file is usually a regular file, but a harness may pipe its
output straight in (``--pred /dev/stdin``, or ``<(…)`` in a shell). A pipe
can be read only once, so its bytes are read here, hashed, and handed to the
readers: the look recorded in the ledger is the hash of what was scored.
A named pipe in the file system (a FIFO) is refused instead: opening one
with no writer blocks forever. A device or a socket is refused too.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalkit.errors import UnreadableFile, UsageError
from evalkit.io import NOT_REGULAR_FIX, special_kind

SNIFF_BYTES = 1 << 16


@dataclass(frozen=True)
class PredictionBytes:
    """A predictions file read into memory, with the sha256 of exactly those bytes."""

    path: Path
    data: bytes
    sha256: str


def is_open_pipe(path: Path) -> bool:
    """Whether ``path`` is a pipe this process already holds open (stdin, ``/dev/fd/N``).

    Such a path resolves to an anonymous pipe (``pipe:[inode]``), which has
    a writer already (or had one): reading it cannot block forever. A FIFO
    in the file system resolves to itself.
    """
    try:
        if not stat.S_ISFIFO(os.stat(path).st_mode):
            return False
    except OSError:
        return False
    return os.path.realpath(path).rsplit("/", 1)[-1].startswith("pipe:[")


def check_source(path: Path) -> None:
    """Refuse a FIFO, device or socket given as predictions, before anything opens it."""
    if is_open_pipe(path):
        return
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise UnreadableFile(f"{path}: no such file or folder") from None
    except OSError as error:
        raise UnreadableFile(f"{path}: cannot read: {error.strerror}") from error
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        raise UnreadableFile(
            f"{path}: is {special_kind(mode)}, not a regular file; {NOT_REGULAR_FIX} "
            "(or pipe it in as {predictions})",
            refs={"predictions": "/dev/stdin"},
        )


def read_once(path: Path) -> PredictionBytes:
    """Every byte of a predictions file (or pipe), read once, and their sha256."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as error:
        raise UnreadableFile(f"{path}: cannot read: {error.strerror}") from error
    return PredictionBytes(path=path, data=data, sha256=hashlib.sha256(data).hexdigest())


def sniff_format(data: bytes, path: Path, first_record: Any) -> str:
    """The format of bytes with no telling extension (a pipe): by their content."""
    if data.startswith(b"PAR1"):
        return "parquet"
    head = data[:SNIFF_BYTES].lstrip(b"\xef\xbb\xbf \t\r\n")
    if head.startswith(b"["):
        return "json"
    if head.startswith(b"{"):
        return record_format(first_record)
    raise UsageError(
        f"{path}: cannot tell the predictions format from its content; pass {{pred_format}}",
        refs=["pred_format"],
    )


def record_format(record: Any) -> str:
    """openai-batch, lm-eval or jsonl, from a JSONL file's first record."""
    if isinstance(record, dict):
        if "custom_id" in record and ("response" in record or "error" in record):
            return "openai-batch"
        if "doc" in record and "resps" in record:
            return "lm-eval"
    return "jsonl"


def first_record(data: bytes) -> Any:
    """The first non-blank line of JSONL bytes, parsed (None when it is not JSON)."""
    import orjson

    start = 0
    while start < len(data):
        end = data.find(b"\n", start)
        end = len(data) if end < 0 else end
        line = data[start:end].removeprefix(b"\xef\xbb\xbf").strip()
        if line:
            try:
                return orjson.loads(line)
            except orjson.JSONDecodeError:
                return None
        start = end + 1
    return None


def is_lm_eval_array(first: Any) -> bool:
    """Whether the first element of a JSON array is an lm-evaluation-harness sample."""
    return isinstance(first, dict) and "doc" in first and "resps" in first
