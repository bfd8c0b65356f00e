"""Writing a score result: ``summary.json`` and ``examples.parquet``, atomically, look first.

The order is the trust model's (docs/provenance.md): ``examples.parquet`` is
written and hashed in a staging folder, the look is appended to the ledger
(fsynced, its head updated), and only then is ``summary.json`` (with the
examples' sha256 and the look's line) written and the folder renamed into
place. A crash before the rename leaves the look recorded and no result,
never a result whose look is missing; a failed append publishes nothing.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from evalkit.errors import EvalkitError
from evalkit.io import atomic_directory, sha256_file

if TYPE_CHECKING:
    import polars as pl

    from evalkit.provenance.ledger import AppendedLook
    from evalkit.scoring.summary import ScoreSummary


class ScoreResult(Protocol):
    """What is written: a summary and the per-example table (a :class:`~evalkit.ScoreResult`)."""

    @property
    def summary(self) -> ScoreSummary: ...

    @property
    def examples(self) -> pl.DataFrame: ...


ROW_GROUP_ROWS = 131_072


def summary_json(summary: ScoreSummary) -> bytes:
    """The bytes of ``summary.json``: indented, keys in model order, a final newline."""
    import orjson

    data = summary.model_dump(mode="json")
    return orjson.dumps(data, option=orjson.OPT_INDENT_2) + b"\n"


@dataclass(frozen=True)
class PublishedScore:
    """A result folder as written: where, its summary, and its look in the ledger."""

    folder: Path
    summary: ScoreSummary
    """The summary written (with ``examples_sha256`` and ``look``)."""
    look: AppendedLook | None
    """The ledger line appended (None when the summary names no ledger)."""


def publish_score(
    result: ScoreResult,
    out: str | os.PathLike[str],
    *,
    force: bool = False,
    extra_files: Mapping[str, bytes] | None = None,
    purpose: str | None = None,
    inputs: Iterable[str | os.PathLike[str] | None] = (),
) -> PublishedScore:
    """Write the result folder, appending its look to ``summary.ledger`` before publishing.

    The look carries ``purpose`` (``score --purpose``). An append that fails
    raises :class:`~evalkit.errors.UnreadableFile` and writes no folder.
    ``out`` is never one of ``inputs``, inside one, or holding one.
    """
    from evalkit.scoring.summary import LookRef

    folder = Path(out)
    look = None
    sources = [Path(path) for path in inputs if path is not None]
    with atomic_directory(folder, force, inputs=sources) as staging:
        # A fixed row-group size makes the bytes independent of how the
        # frame happens to be chunked (worker count, batch sizes).
        result.examples.write_parquet(
            staging / "examples.parquet",
            compression="zstd",
            statistics=True,
            row_group_size=ROW_GROUP_ROWS,
        )
        summary = result.summary.model_copy(
            update={"examples_sha256": sha256_file(staging / "examples.parquet")}
        )
        for name, data in (extra_files or {}).items():
            (staging / name).write_bytes(data)
        if summary.ledger is not None:
            from evalkit.provenance.ledger import append_look

            try:
                look = append_look(summary.ledger, summary, purpose=purpose)
            except EvalkitError as error:
                raise type(error)(f"{error.message}; {folder} was not written") from error
            reference = LookRef(line=look.line, sha256=look.entry["sha256"])
            summary = summary.model_copy(update={"look": reference})
        (staging / "summary.json").write_bytes(summary_json(summary))
    return PublishedScore(folder, summary, look)


def write_score(
    result: ScoreResult,
    out: str | os.PathLike[str],
    *,
    force: bool = False,
    extra_files: Mapping[str, bytes] | None = None,
    purpose: str | None = None,
    inputs: Iterable[str | os.PathLike[str] | None] = (),
) -> Path:
    """Write the result folder; an existing folder is replaced only with ``force``.

    Every file appears together or not at all (written into a staging folder
    that is renamed into place), and the same result gives the same bytes.
    ``extra_files`` (name -> bytes, e.g. ``report.html``) go in the same folder;
    ``out`` is never one of ``inputs``, inside one, or holding one.
    When the summary names a ledger (``score(..., ledger=...)``), the look is
    appended there, with ``purpose``, before the folder appears.
    """
    published = publish_score(
        result, out, force=force, extra_files=extra_files, purpose=purpose, inputs=inputs
    )
    return published.folder
