"""Writing outputs atomically, with errors a user can act on.

Every output goes through a temporary file (or folder) in the same folder, is
flushed to the disk and renamed into place, so a crash or Ctrl-C never leaves
a half-written result behind, and an operating-system refusal (disk full,
quota, permissions) is one line saying that nothing was written.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from evalkit.errors import UsageError, WriteFailed
from evalkit.io._formats import TableFormat, output_format
from evalkit.io._outputs import check_new_output

if TYPE_CHECKING:
    import polars as pl


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


def check_writable(frame: pl.DataFrame, path: Path, fmt: TableFormat) -> None:
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
    check_writable(frame, path, fmt)
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


class ReportFile:
    """The file a library call writes its report to (``json=``), as its command's ``--json``.

    Made with :meth:`checked` before the work starts, so a conflict (an
    output that is an input, an existing file without ``force``) costs
    nothing; :meth:`write` then writes the report atomically. With no path
    both do nothing, so a call writes only when asked to.
    """

    def __init__(self, path: str | os.PathLike[str] | None) -> None:
        self.path = None if path is None else Path(path)

    @classmethod
    def checked(
        cls,
        path: str | os.PathLike[str] | None,
        *,
        force: bool,
        inputs: Iterable[str | os.PathLike[str] | None] = (),
        option: str = "json",
    ) -> ReportFile:
        """The report file ``path``, refused now if writing it later would lose something."""
        if path is not None:
            from evalkit.io._outputs import CommandFiles

            CommandFiles(force=force).reads_all(inputs).writes(path, option=option).check()
        return cls(path)

    def write(self, data: str | bytes) -> None:
        """Write ``data`` (text as UTF-8) to the file, atomically; nothing without a path."""
        if self.path is not None:
            atomic_write_bytes(self.path, data.encode("utf-8") if isinstance(data, str) else data)
