"""The files ``compare`` and ``gate`` write: checked before the results are read, written after.

The reports are rendered by ``evalkit.report`` (a layer above this one), so
a caller passes the renderers (``render``: a name -> a function of the
report); this module decides what is read, refuses an output that would
replace it, and writes atomically.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from evalkit.errors import EvalkitWarning, ParameterError
from evalkit.io import CommandFiles, is_path
from evalkit.records._compare_files import REPORT_FILE

PathLike = str | os.PathLike[str]
Renderers = Mapping[str, Callable[[Any], str]]
"""Per file (a parameter's name, or a file name inside ``out``), its text from the report."""

#: The file of ``compare``'s ``out`` folder whose presence marks a folder it wrote.
COMPARE_MARKER = REPORT_FILE


def _missing(name: str, parameter: str) -> ParameterError:
    return ParameterError(
        "render", f"has no renderer for {name!r}, which {{{parameter}}} needs", refs=[parameter]
    )


def renderers(
    render: Renderers | None,
    outputs: Mapping[str, PathLike | None],
    *,
    step_summary: PathLike | None = None,
) -> dict[str, Callable[[Any], str]]:
    """The renderer of each output given (the Markdown one for ``step_summary``), checked now."""
    wanted = [(name, name) for name, path in outputs.items() if path is not None]
    if step_summary:
        wanted.append(("markdown", "step_summary"))
    chosen: dict[str, Callable[[Any], str]] = {}
    for name, parameter in wanted:
        if render is None or name not in render:
            raise _missing(name, parameter)
        chosen[name] = render[name]
    return chosen


def folder_renderers(
    render: Renderers | None, *, out: PathLike | None, json: PathLike | None
) -> dict[str, Callable[[Any], str]]:
    """The files of ``compare``'s ``out`` folder (its ``report.json`` is ``json``), checked now."""
    for path, parameter in ((out, "out"), (json, "json")):
        if path is not None and (render is None or COMPARE_MARKER not in render):
            raise _missing(COMPARE_MARKER, parameter)
    return dict(render or {})


def declared(
    results: Sequence[object],
    ledger: Path | None,
    outputs: Mapping[str, PathLike | None],
    *,
    force: bool,
    marker: Mapping[str, str] | None = None,
) -> CommandFiles:
    """The inputs of reading ``results`` (and ``ledger``) and the ``outputs``, checked now."""
    from evalkit.comparison.recorded import result_inputs

    files = CommandFiles(force=force)
    files.reads_all(result_inputs([result for result in results if is_path(result)]))
    files.reads(ledger)
    for option, path in outputs.items():
        files.writes(path, option=option, marker=(marker or {}).get(option))
    files.check()
    return files


def write_files(
    report: object,
    files: Mapping[str, PathLike | None],
    render: Mapping[str, Callable[[Any], str]],
) -> None:
    """Each file of ``files`` (parameter -> path) written as ``render[parameter]`` renders it."""
    from evalkit.io import atomic_write_text

    for option, path in files.items():
        if path is not None:
            atomic_write_text(Path(path), render[option](report))


def write_folder(
    report: object,
    out: PathLike,
    render: Mapping[str, Callable[[Any], str]],
    *,
    force: bool,
    inputs: list[Path],
) -> None:
    """The folder ``out`` holding a file per ``render`` entry, as it renders it: all or nothing."""
    from evalkit.io import atomic_directory, atomic_write_text

    with atomic_directory(Path(out), force, inputs=inputs, marker=COMPARE_MARKER) as staging:
        for name, renderer in render.items():
            atomic_write_text(staging / name, renderer(report))


def append_step_summary(path: PathLike | None, text: str) -> None:
    """Append ``text`` to a CI step summary; a refusal is a warning (the verdict stands)."""
    if not path:
        return
    import warnings

    try:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(text + "\n")
    except OSError as error:  # the verdict stands; a summary is a courtesy
        warnings.warn(
            EvalkitWarning(
                f"cannot append to $GITHUB_STEP_SUMMARY ({error.strerror}: {path}); "
                "the verdict above stands"
            ),
            stacklevel=3,
        )
