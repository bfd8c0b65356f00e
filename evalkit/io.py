"""Reading and writing tables and files, with errors a user can act on.

Every command reads through :func:`read_table` and writes through the atomic
helpers here, so that a bad file always gets the same one-line error naming
the file (and the line, where there is one), and a crash or Ctrl-C never
leaves a half-written output behind.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from evalkit.errors import (
    UnknownColumn,
    UnreadableFile,
    UsageError,
    WriteFailed,
)

if TYPE_CHECKING:
    import polars as pl

TableFormat = Literal["jsonl", "csv", "parquet"]
"""What evalkit writes tables as."""
InputFormat = Literal["jsonl", "csv", "parquet", "json", "hf"]
"""What evalkit reads tables from: also ``.json`` files and Hugging Face dataset folders."""
UTF8_BOM = b"\xef\xbb\xbf"

_EXTENSIONS: dict[str, InputFormat] = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".csv": "csv",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".json": "json",
}


def table_format(path: Path) -> InputFormat:
    """Return the table format implied by ``path``: its extension, or a dataset folder."""
    if path.is_dir():
        from evalkit.containers import hf_dataset

        hf_dataset(path)  # a DatasetDict, or a folder that is no dataset, fails here
        return "hf"
    suffix = path.suffix.lower()
    if suffix not in _EXTENSIONS:
        known = ", ".join(sorted(_EXTENSIONS))
        raise UnreadableFile(
            f"{path}: unknown table format {suffix or '(no extension)'!r}; use one of {known}, "
            "or a Hugging Face save_to_disk folder"
        )
    return _EXTENSIONS[suffix]


def output_format(path: Path) -> TableFormat:
    """The format evalkit writes to ``path`` (by its extension): jsonl, csv or parquet."""
    fmt = table_format(path) if path.suffix else None
    if fmt not in ("jsonl", "csv", "parquet"):
        raise UsageError(f"{path}: evalkit writes tables as .jsonl, .csv or .parquet")
    return fmt


def sha256_file(path: Path, chunk_bytes: int = 1 << 20) -> str:
    """Hex sha256 of a file's bytes: the fingerprint outputs record of their inputs.

    A digest that :func:`hash_early` started for the same, unchanged file is
    taken from there.
    """
    early = _early_digests.pop(_file_key(path), None)
    if early is not None:
        return early.result()
    return _sha256(path, chunk_bytes)


def sha256_input(path: Path) -> str:
    """sha256 of a table's file, or of a Hugging Face dataset folder's files (names and bytes).

    A folder whose ``state.json`` names data outside it is refused: hashing
    around that data would let it change unseen.
    """
    if path.is_dir():
        from evalkit.containers import folder_sha256, hf_dataset

        hf_dataset(path)
        return folder_sha256(path)
    return sha256_file(path)


def _sha256(path: Path, chunk_bytes: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(chunk_bytes):
            digest.update(chunk)
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
        stat = path.stat()
    except OSError:
        return None
    return str(path.resolve()), stat.st_size, stat.st_mtime_ns


def hash_early(paths: Iterable[Path]) -> None:
    """Start hashing the files among ``paths`` in a background thread, now.

    hashlib lets go of the interpreter lock while it hashes, so a command that
    calls this before its imports hashes its inputs on a core those imports
    leave idle (0.16 s of CPU for 124 MB, no longer spent while scoring uses
    both cores). :func:`sha256_file` takes the digest when the file has the
    same size and modification time by then; otherwise it hashes again.
    """
    for path in paths:
        key = _file_key(path)
        if key is not None and key not in _early_digests and path.is_file():
            _early_digests[key] = _EarlyDigest(path)


def read_table(
    path: Path,
    fmt: str | None = None,
    *,
    columns: Sequence[str] | None = None,
    ids: Sequence[str] = (),
) -> pl.DataFrame:
    """Read a JSONL, CSV, Parquet or ``.json`` file, or a Hugging Face dataset folder.

    See :func:`evalkit.tables.read_table`: the one reading of every table
    (values as written, JSON Lines under :mod:`evalkit.jsonl` on every path,
    ``ids`` checked as ids, regular files only).
    """
    from evalkit.tables import read_table as read

    return read(path, fmt, columns=columns, ids=ids)


def require_columns(frame: pl.DataFrame, columns: Sequence[str], source: str) -> None:
    """Raise :class:`UnknownColumn` naming the first missing column and those that exist."""
    present = frame.columns
    if not present and frame.height == 0 and columns:
        raise UnknownColumn(f"{source}: the file is empty (no rows, so no columns)")
    for column in columns:
        if column not in present:
            listing = ", ".join(present[:20]) + (" …" if len(present) > 20 else "")
            raise UnknownColumn(
                f"{source}: no column {column!r}; the columns are: {listing or '(none)'}"
            )


def check_new_output(
    path: Path,
    force: bool,
    *,
    inputs: Iterable[Path | None] = (),
    marker: str | None = None,
    folder: bool = False,
) -> None:
    """Refuse an output that would destroy something it should not.

    An existing output needs ``force``; an output that is, lies inside or
    would contain one of the command's ``inputs`` is refused even with
    ``force``; and an existing non-empty folder is replaced only if it holds
    ``marker``, the file the same command writes (the rules of
    :mod:`evalkit.command_files`, where a command declares all its outputs).
    """
    from evalkit.command_files import check_new_output as check

    check(path, force, inputs=inputs, marker=marker, folder=folder)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _publish(temporary: str | Path, path: Path, directory: bool = False) -> None:
    """Give a temporary file the permissions a plain write would have, then rename it."""
    os.chmod(temporary, (0o777 if directory else 0o666) & ~_umask())
    os.replace(temporary, path)


def _fsync(path: str | Path) -> None:
    """Flush a written file's bytes to the disk, as git and sqlite do before a rename.

    Without it a crash soon after the rename can leave the new name holding
    an empty or partial file on file systems that delay allocation.
    """
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _fsync_folder(path: str | Path) -> None:
    """Flush a folder's entries (a rename into it); some file systems refuse, which is fine."""
    with contextlib.suppress(OSError):
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)


def _fsync_tree(folder: Path) -> None:
    """:func:`_fsync` every file under ``folder``, then the folders themselves."""
    for root, _, files in os.walk(folder):
        for name in files:
            _fsync(os.path.join(root, name))
        _fsync_folder(root)


_WRITE_HINTS = {
    errno.ENOSPC: "free some space or write elsewhere",
    errno.EDQUOT: "free some space (the quota is reached) or write elsewhere",
    errno.EFBIG: "the file is larger than this file system or a limit allows; write elsewhere",
    errno.EROFS: "the file system is read-only; choose another path",
    errno.EACCES: "the folder is not writable; choose another path",
    errno.EPERM: "the folder is not writable; choose another path",
}


_OS_ERROR_IN_MESSAGE = re.compile(r"\(os error (\d+)\)")


def os_error_of(error: BaseException) -> OSError | None:
    """The operating-system error behind ``error``, if it is one.

    polars' Parquet writer reports a failed write as a ``ComputeError`` whose
    message ends in ``(os error 28)``; that is a write the system refused,
    like an ``OSError``, not a bug.
    """
    if isinstance(error, OSError):
        return error
    found = _OS_ERROR_IN_MESSAGE.search(str(error))
    if found is None:
        return None
    number = int(found.group(1))
    return OSError(number, os.strerror(number))


def write_failed(path: Path, error: OSError) -> WriteFailed:
    """The one-line error for an output the operating system refused to write."""
    reason = error.strerror or type(error).__name__
    hint = _WRITE_HINTS.get(error.errno or 0, "check the path and the disk, then run again")
    return WriteFailed(f"{path}: cannot write ({reason}); nothing was written: {hint}")


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder and a rename.

    The bytes are on the disk before the rename; an operating-system error
    (disk full, quota, permissions) is a :class:`~evalkit.errors.WriteFailed`
    and leaves neither the temporary file nor a partial ``path`` behind.
    """
    temporary: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(
            prefix=f".{path.name}.", suffix=".tmp", dir=path.parent
        )
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        _publish(temporary, path)
        temporary = None
        _fsync_folder(path.parent)
    except OSError as error:
        raise write_failed(path, error) from error
    finally:
        if temporary is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary)


def atomic_write_text(path: Path, text: str) -> None:
    """Write UTF-8 ``text`` to ``path`` atomically."""
    atomic_write_bytes(path, text.encode("utf-8"))


def _check_writable_as(frame: pl.DataFrame, path: Path, fmt: TableFormat) -> None:
    """Refuse a format that would lose values: nested columns in CSV, NaN/inf in JSON."""
    import polars as pl

    for column, dtype in frame.schema.items():
        if fmt == "csv" and (dtype.is_nested() or dtype in (pl.Object, pl.Binary)):
            raise UsageError(
                f"{path.name}: column {column!r} holds {dtype} values, which CSV cannot hold; "
                "use {fmt} or jsonl",
                refs={"fmt": "parquet"},
            )
        if fmt == "jsonl" and dtype.is_float() and frame.height:
            values = frame[column]
            if bool((values.is_nan() | values.is_infinite()).any()):
                raise UsageError(
                    f"{path.name}: column {column!r} holds NaN or infinite numbers, which JSON "
                    "cannot hold; use {fmt}",
                    refs={"fmt": "parquet"},
                )


def write_table(frame: pl.DataFrame, path: Path, fmt: TableFormat | None = None) -> None:
    """Write a frame as JSONL, CSV or Parquet, atomically (see :func:`atomic_write_bytes`).

    Parquet is written without statistics timestamps and with a fixed
    compression so that the same frame always gives the same bytes.
    """
    fmt = fmt or output_format(path)
    _check_writable_as(frame, path, fmt)
    temporary: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(
            prefix=f".{path.name}.", suffix=".tmp", dir=path.parent
        )
        os.close(handle)
        if fmt == "parquet":
            frame.write_parquet(temporary, compression="zstd", statistics=True)
        elif fmt == "csv":
            frame.write_csv(temporary)
        else:
            frame.write_ndjson(temporary)
        _fsync(temporary)
        _publish(temporary, path)
        temporary = None
        _fsync_folder(path.parent)
    except Exception as error:
        refused = os_error_of(error)
        if refused is None:
            raise
        raise write_failed(path, refused) from error
    finally:
        if temporary is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary)


@contextlib.contextmanager
def atomic_directory(
    path: Path, force: bool, *, inputs: Iterable[Path | None] = (), marker: str | None = None
) -> Iterator[Path]:
    """Yield a temporary folder that replaces ``path`` only when the block succeeds.

    A command writes all its outputs into the yielded folder; on success its
    files are flushed to the disk and the folder is renamed into place (an
    existing one is removed only then, and only with ``force``), so readers
    never see a mix of old and new files. An operating-system error while
    writing (disk full, quota, permissions) is a
    :class:`~evalkit.errors.WriteFailed`; the staging folder is removed and
    an existing output stays as it was.
    """
    inputs = list(inputs)
    check_new_output(path, force, inputs=inputs, marker=marker, folder=True)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    except OSError as error:
        raise write_failed(path, error) from error
    try:
        yield staging
        _fsync_tree(staging)
        if path.exists():
            check_new_output(path, force, inputs=inputs, marker=marker, folder=True)
            retired = path.with_name(f".{path.name}.old-{os.getpid()}")
            os.replace(path, retired)
            try:
                _publish(staging, path, directory=True)
            except BaseException:
                os.replace(retired, path)  # the earlier output stays as it was
                raise
            if retired.is_dir():
                shutil.rmtree(retired, ignore_errors=True)
            else:
                retired.unlink(missing_ok=True)
        else:
            _publish(staging, path, directory=True)
        _fsync_folder(path.parent)
    except WriteFailed as error:  # a file of the folder: name where it was going
        raise WriteFailed(error.message.replace(str(staging), str(path))) from error
    except Exception as error:
        refused = os_error_of(error)
        if refused is None:
            raise
        raise write_failed(path, refused) from error
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
