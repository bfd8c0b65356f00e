"""Writing a score result: ``summary.json`` and ``examples.parquet``, atomically, look first.

The order is the trust model's (docs/provenance.md): ``examples.parquet`` is
written and hashed in a staging folder, the look is appended to the ledger
(fsynced, its head updated), and only then is ``summary.json`` (with the
examples' sha256 and the look's line) written and the folder renamed into
place. A crash before the rename leaves the look recorded and no result,
never a result whose look is missing; a failed append publishes nothing.

A result ``evalkit.score`` returned to a Python caller had its look appended
before it was returned (:func:`record_look`): writing it appends nothing
more, and checks that the examples are those the look recorded.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from evalkit.errors import ArtifactChanged, EvalkitError, UsageError
from evalkit.io import atomic_directory

if TYPE_CHECKING:
    import polars as pl

    from evalkit.provenance.ledger import AppendedLook
    from evalkit.records._summary import ScoreSummary


class ScoreResult(Protocol):
    """What is written: a summary and the per-example table (a :class:`~evalkit.ScoreResult`)."""

    @property
    def summary(self) -> ScoreSummary: ...

    @property
    def examples(self) -> pl.DataFrame: ...


ROW_GROUP_ROWS = 131_072

#: Files written beside ``summary.json``: as bytes, or made from the summary
#: (``evalkit score`` attaches ``report.html`` this way; see ``evalkit.score``).
ExtraFiles = Mapping[str, bytes] | Callable[["ScoreSummary"], Mapping[str, bytes]] | None


def extra_files_of(extra_files: ExtraFiles, summary: ScoreSummary) -> Mapping[str, bytes]:
    """The extra files for a result: as given, or made from its summary."""
    if extra_files is None:
        return {}
    return extra_files(summary) if callable(extra_files) else extra_files


def examples_parquet(examples: pl.DataFrame) -> bytes:
    """The bytes of ``examples.parquet`` (the same for the same rows, however chunked)."""
    import io

    buffer = io.BytesIO()
    # A fixed row-group size makes the bytes independent of how the
    # frame happens to be chunked (worker count, batch sizes).
    examples.write_parquet(
        buffer, compression="zstd", statistics=True, row_group_size=ROW_GROUP_ROWS
    )
    return buffer.getvalue()


def record_look(
    summary: ScoreSummary, examples: pl.DataFrame, *, purpose: str | None = None
) -> tuple[ScoreSummary, AppendedLook]:
    """Append the look of a result to ``summary.ledger`` now, before anyone sees its figures.

    The summary comes back with the ``examples_sha256`` of the
    ``examples.parquet`` it will write and the ``look`` appended, as
    ``summary.json`` holds them; :func:`publish_score` then appends nothing.
    """
    import hashlib

    from evalkit.provenance.ledger import append_look
    from evalkit.records._summary import LookRef

    ledger = summary.ledger
    assert ledger is not None
    digest = hashlib.sha256(examples_parquet(examples)).hexdigest()
    summary = summary.model_copy(update={"examples_sha256": digest})
    look = append_look(ledger, summary, purpose=purpose)
    reference = LookRef(line=look.line, sha256=look.entry["sha256"])
    return summary.model_copy(update={"look": reference}), look


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
    import hashlib

    from evalkit.records._summary import (
        EXAMPLES_FILE,
        SUMMARY_FILE,
        LookRef,
        write_examples,
        write_summary,
    )

    folder = Path(out)
    look = None
    recorded = result.summary.look  # appended when the result was scored (evalkit.score)
    if recorded is not None and purpose is not None:
        raise UsageError(
            f"purpose: this result's look was recorded when it was scored (line "
            f"{recorded.line} of {result.summary.ledger}); pass purpose to evalkit.score"
        )
    sources = [Path(path) for path in inputs if path is not None]
    with atomic_directory(folder, force, inputs=sources) as staging:
        examples = examples_parquet(result.examples)
        write_examples(staging / EXAMPLES_FILE, examples)
        digest = hashlib.sha256(examples).hexdigest()
        if recorded is not None and digest != result.summary.examples_sha256:
            raise ArtifactChanged(
                f"{folder}: the examples are not those whose look was recorded (line "
                f"{recorded.line} of {result.summary.ledger}); score again"
            )
        summary = result.summary.model_copy(update={"examples_sha256": digest})
        for name, data in (extra_files or {}).items():
            (staging / name).write_bytes(data)
        if summary.ledger is not None and recorded is None:
            from evalkit.provenance.ledger import append_look

            try:
                look = append_look(summary.ledger, summary, purpose=purpose)
            except EvalkitError as error:
                raise error.wrapped(after=f"; {folder} was not written") from error
            reference = LookRef(line=look.line, sha256=look.entry["sha256"])
            summary = summary.model_copy(update={"look": reference})
        write_summary(staging / SUMMARY_FILE, summary)
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
