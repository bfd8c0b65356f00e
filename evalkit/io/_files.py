"""Files as evalkit opens them: regular files only, read once, hashed from what was read.

* Only regular files are opened: a named pipe (FIFO) would block the command
  forever waiting for a writer, and a device never ends. A missing path, a
  folder, a FIFO, a device or a socket is one line naming the path.
* A file's sha256 is what outputs record of their inputs. A command that
  hashes a file it also parses hashes the bytes it parsed (see
  :class:`evalkit.io.Table`), so a file rewritten in between cannot be
  recorded under the other version's hash.
"""

from __future__ import annotations

import hashlib
import os
import stat
import threading
from collections.abc import Iterable
from pathlib import Path

from evalkit.errors import UnreadableFile

UTF8_BOM = b"\xef\xbb\xbf"
NOT_REGULAR_FIX = "write the data to a file and pass that file"


def require_regular_file(path: Path, what: str = "file") -> None:
    """Refuse what is not a regular file before opening it (a FIFO would block the open).

    A missing path, a folder, a named pipe, a device or a socket is one line
    naming the path; following symbolic links is fine.
    """
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise UnreadableFile(f"{path}: no such file") from None
    except OSError as error:
        raise UnreadableFile(f"{path}: cannot read: {error.strerror}") from error
    if stat.S_ISREG(mode):
        return
    if stat.S_ISDIR(mode):
        raise UnreadableFile(f"{path}: is a folder, expected a {what}")
    raise UnreadableFile(f"{path}: is {special_kind(mode)}, not a regular file; {NOT_REGULAR_FIX}")


def special_kind(mode: int) -> str:
    """Words for a file type that is not a regular file or a folder."""
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def read_bytes(path: Path, what: str = "file") -> bytes:
    """The bytes of a regular file, or one clear error naming it."""
    require_regular_file(path, what)
    if not os.access(path, os.R_OK):
        raise UnreadableFile(f"{path}: permission denied")
    try:
        return path.read_bytes()
    except OSError as error:
        raise UnreadableFile(f"{path}: cannot read: {error.strerror}") from error


def sha256_bytes(data: bytes) -> str:
    """Hex sha256 of bytes already read (the digest of exactly what was parsed)."""
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path, chunk_bytes: int = 1 << 20) -> str:
    """Hex sha256 of a regular file's bytes: the fingerprint outputs record of their inputs.

    A digest that :func:`hash_early` started for the same, unchanged file is
    taken from there. A FIFO or a device is refused before it is opened.
    """
    early = _early_digests.pop(_file_key(path), None)
    if early is not None:
        return early.result()
    require_regular_file(path)
    return _sha256(path, chunk_bytes)


def _sha256(path: Path, chunk_bytes: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    try:
        with path.open("rb") as handle:
            while chunk := handle.read(chunk_bytes):
                digest.update(chunk)
    except OSError as error:
        raise UnreadableFile(f"{path}: cannot read: {error.strerror}") from error
    return digest.hexdigest()


class _EarlyDigest:
    """The sha256 of a file, computed in a background thread from the start."""

    def __init__(self, path: Path) -> None:
        self._done = threading.Event()
        self._digest = ""
        self._error: BaseException | None = None
        threading.Thread(target=self._run, args=(path,), daemon=True).start()

    def _run(self, path: Path) -> None:
        try:
            self._digest = _sha256(path)
        except BaseException as error:  # raised again where the digest is asked for
            self._error = error
        finally:
            self._done.set()

    def result(self) -> str:
        self._done.wait()
        if self._error is not None:
            raise self._error
        return self._digest


_early_digests: dict[tuple[str, int, int] | None, _EarlyDigest] = {}


def _file_key(path: Path) -> tuple[str, int, int] | None:
    """What identifies a file's bytes for a reuse of its digest: path, size, mtime."""
    try:
        found = path.stat()
    except OSError:
        return None
    return str(path.resolve()), found.st_size, found.st_mtime_ns


def read_and_hash(path: Path, what: str = "file") -> tuple[bytes, str]:
    """A regular file's bytes and their sha256: the digest of exactly what was read.

    A digest :func:`hash_early` started is taken when the file kept its size and
    modification time from before the hashing to after this read (so the bytes
    hashed are the bytes read); otherwise the bytes read are hashed here.
    """
    before = _file_key(path)
    data = read_bytes(path, what)
    early = _early_digests.pop(before, None)
    if early is not None and _file_key(path) == before:
        try:
            return data, early.result()
        except OSError:
            pass
    return data, sha256_bytes(data)


def hash_early(paths: Iterable[Path]) -> None:
    """Start hashing the regular files among ``paths`` in a background thread, now.

    hashlib lets go of the interpreter lock while it hashes, so a command that
    calls this before its imports hashes its inputs on a core those imports
    leave idle. :func:`sha256_file` takes the digest when the file has the
    same size and modification time by then; otherwise it hashes again.
    """
    for path in paths:
        key = _file_key(path)
        try:
            regular = stat.S_ISREG(os.stat(path).st_mode)
        except OSError:
            regular = False
        if key is not None and key not in _early_digests and regular:
            _early_digests[key] = _EarlyDigest(path)
