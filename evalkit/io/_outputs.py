"""What one command reads and what it writes, so that an output never replaces an input.

Every command declares its inputs (the files and folders it reads, the ledger
it appends to, the files a run or a result folder pins) and its outputs
(``--out``, ``--json``, ``--html`` ...) in one :class:`CommandFiles`, and
calls :meth:`CommandFiles.check` before it starts and again, with what it
found on the way, before it writes. The rules, with or without ``--force``:

* an output is never an input, never inside an input folder, and never a
  folder that holds an input (replacing it would delete what was read);
* two outputs of one command never share a path (the second would silently
  overwrite the first), nor lie one inside the other;
* an existing output is replaced only with ``--force``; an existing folder
  only when it holds the file the same command writes there (``marker``),
  so ``--force`` never wipes a folder evalkit did not write, and never one
  that holds a test-set ledger (the record of every look at a test set).

Paths are compared after resolving symbolic links and ``..``, and also by
device and inode where both exist, so a hard link, a symlinked folder or a
case-insensitive file system does not hide that two names are one file.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from evalkit.errors import OutputExists, UsageError

PathLike = str | os.PathLike[str]
# The file name of a test-set ledger, spelt only here: checking an output
# (this module) must know it, and the input layer is below everything that
# reads or writes the ledger (evalkit.provenance.ledger re-exports it).
LEDGER_NAME = "evalkit-ledger.jsonl"
# A folder with more entries than this is not searched for a ledger (a
# folder evalkit writes holds a few files; the search only has to be bounded).
MAX_ENTRIES_SEARCHED = 10_000


@dataclass(frozen=True)
class _Output:
    path: Path
    option: str | None
    marker: str | None
    folder: bool
    container: bool = False

    @property
    def name(self) -> str:
        """How a message names this output: a parameter as a ref (``{json}``: ``json`` from
        Python, ``--json`` on the command line), a flag as written, or "the output"."""
        if self.option is None:
            return "the output"
        return "{" + self.option + "}" if self.option.isidentifier() else self.option

    @property
    def refs(self) -> list[str]:
        """The parameter this output's name refers to (none for a flag or no name)."""
        return [self.option] if self.option is not None and self.option.isidentifier() else []


def _resolved(path: Path) -> Path:
    return Path(os.path.abspath(path)).resolve()


def _same(first: Path, second: Path) -> bool:
    """Whether two paths name one file or folder (links and case-folding included)."""
    if _resolved(first) == _resolved(second):
        return True
    try:
        return os.path.samefile(first, second)
    except OSError:  # one of them does not exist: then the names decided
        return False


def _within(inner: Path, outer: Path) -> bool:
    """Whether ``inner`` lies strictly inside the folder ``outer``."""
    resolved_outer = _resolved(outer)
    ancestors = _resolved(inner).parents
    if resolved_outer in ancestors:
        return True
    if not outer.is_dir():
        return False
    return any(ancestor.exists() and _same(ancestor, outer) for ancestor in ancestors)


def _holds_ledger(folder: Path) -> Path | None:
    """A ledger file inside ``folder`` (searched up to a bound), or None."""
    seen = 0
    for root, folders, files in os.walk(folder):
        if LEDGER_NAME in files:
            return Path(root) / LEDGER_NAME
        seen += len(folders) + len(files)
        if seen > MAX_ENTRIES_SEARCHED:
            return None
    return None


class CommandFiles:
    """The inputs and outputs of one command run, checked together before anything is written.

    ``reads`` takes files and folders (a folder read as a whole: an output
    inside it is refused too; a folder of which only some files are read is
    declared by those files). ``writes`` takes one output each, named by its
    option for the messages; ``marker`` makes it a folder output. ``check``
    raises a one-line :class:`~evalkit.errors.UsageError` or
    :class:`~evalkit.errors.OutputExists` (exit 2) for the first conflict.
    """

    def __init__(self, *, force: bool = False) -> None:
        self.force = force
        self._inputs: list[Path] = []
        self._outputs: list[_Output] = []

    @property
    def inputs(self) -> list[Path]:
        """Every input declared so far, in order."""
        return list(self._inputs)

    @property
    def outputs(self) -> list[Path]:
        """Every output declared so far, in order."""
        return [output.path for output in self._outputs]

    def reads(self, *paths: PathLike | None) -> CommandFiles:
        """Declare inputs (None is skipped, so optional options can be passed as they are)."""
        for path in paths:
            if path is not None and str(path) != "" and Path(path) not in self._inputs:
                self._inputs.append(Path(path))
        return self

    def reads_all(self, paths: Iterable[PathLike | None]) -> CommandFiles:
        """Declare every input of ``paths``."""
        return self.reads(*paths)

    def writes(
        self,
        path: PathLike | None,
        *,
        option: str | None = None,
        marker: str | None = None,
        folder: bool = False,
    ) -> CommandFiles:
        """Declare an output file, or an output folder (``folder``, or a ``marker`` to hold).

        ``option`` names it in the messages: a library parameter (``json``) is
        a ref, so the command line says ``--json`` and Python ``json``; a flag
        (``--json``) is kept as written. None is skipped, so optional options
        can be passed as they are.
        """
        if path is not None:
            self._outputs.append(_Output(Path(path), option, marker, folder or marker is not None))
        return self

    def writes_into(self, path: PathLike, *, option: str | None = None) -> CommandFiles:
        """Declare a folder that receives outputs (``rescore --out DIR``: one DIR/<name> each).

        It is checked as an output against the inputs and the other outputs,
        but is never replaced itself: what it already holds stays, and each
        output written into it is declared (and checked) on its own.
        """
        self._outputs.append(_Output(Path(path), option, None, True, container=True))
        return self

    def check(self) -> None:
        """Refuse the first output that would replace an input, another output, or lose data."""
        for index, output in enumerate(self._outputs):
            for other in self._outputs[index + 1 :]:
                _check_distinct(output, other)
        for output in self._outputs:
            _check_not_input(output.path, self._inputs)
            if not output.container:
                _check_replaceable(output, self.force)


def _check_distinct(first: _Output, second: _Output) -> None:
    if _same(first.path, second.path):
        raise UsageError(
            f"{second.path}: {first.name} and {second.name} name the same path, so one "
            "would overwrite the other; give each output its own path",
            refs=[*first.refs, *second.refs],
        )
    for outer, inner in ((first, second), (second, first)):
        if _within(inner.path, outer.path):
            raise UsageError(
                f"{inner.path}: {inner.name} lies inside {outer.name} "
                f"{outer.path}, which replaces it; give each output its own path",
                refs=[*inner.refs, *outer.refs],
            )


def _check_not_input(path: Path, inputs: list[Path]) -> None:
    """Refuse ``path`` if it is an input, holds one, or lies inside one (named in that order)."""
    for source in inputs:
        if _same(path, source):
            raise UsageError(
                f"{path}: the output would replace the input {source}; choose another output path"
            )
    for source in inputs:
        if _within(source, path):
            raise UsageError(
                f"{path}: the output would replace the input {source}, which lies inside it; "
                "choose another output path"
            )
    for source in inputs:
        if _within(path, source):
            raise UsageError(
                f"{path}: the output would be written inside the input folder {source}; "
                "choose a path outside it"
            )


def _check_replaceable(output: _Output, force: bool) -> None:
    path, marker = output.path, output.marker
    if not output.folder and path.is_dir():
        raise OutputExists(f"{path}: is a folder; give a file path for {output.name}")
    if not path.exists() or (path.is_dir() and not any(path.iterdir())):
        return  # nothing there to lose
    kind = "folder" if path.is_dir() else "file"
    if not force:
        raise OutputExists(
            f"{path}: {kind} exists already; pass {{force}} to overwrite it", refs={"force": True}
        )
    if not output.folder:
        return
    if not path.is_dir():
        raise OutputExists(f"{path}: is a file, not an output folder; choose another path")
    if marker is not None and not (path / marker).exists():
        raise OutputExists(
            f"{path}: folder has no {marker}, so evalkit did not write it; refusing to "
            "replace it even with {force} (choose another path)",
            refs={"force": True},
        )
    ledger = _holds_ledger(path)
    if ledger is not None:
        raise OutputExists(
            f"{path}: holds the test-set ledger {ledger} (the record of every look at a test "
            "set); refusing to replace the folder even with {force} (choose another path, or "
            "move the ledger out first)",
            refs={"force": True},
        )


def check_new_output(
    path: PathLike,
    force: bool,
    *,
    inputs: Iterable[PathLike | None] = (),
    marker: str | None = None,
    folder: bool = False,
    option: str | None = None,
) -> None:
    """Refuse an output that would destroy something it should not (one output, its inputs).

    The library's writers call this; a command declares all its outputs at
    once in a :class:`CommandFiles`, which also refuses two outputs on one path.
    """
    files = CommandFiles(force=force).reads_all(inputs)
    files.writes(path, option=option, marker=marker, folder=folder).check()
