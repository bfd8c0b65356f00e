"""What :func:`evalkit.score` returns: the summary and the per-example table.

It lives apart from the engine so that writing (``write.py``) and scoring
(``engine.py``) do not import each other: the engine builds a result, the
result knows how to write itself, and the writer needs only its two parts.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from evalkit.records._summary import ScoreSummary
from evalkit.scoring.write import write_score

if TYPE_CHECKING:
    import polars as pl

    from evalkit.provenance.ledger import AppendedLook


@dataclass(frozen=True)
class ScoreResult:
    """The summary and the per-example table of one scored predictions file."""

    summary: ScoreSummary
    examples: pl.DataFrame
    look: AppendedLook | None = None
    """The ledger line :func:`evalkit.score` appended before it returned (None: no ledger)."""

    def write(
        self,
        out: str | os.PathLike[str],
        *,
        force: bool = False,
        extra_files: Mapping[str, bytes] | None = None,
        purpose: str | None = None,
        inputs: Iterable[str | os.PathLike[str] | None] = (),
    ) -> Path:
        """Write ``summary.json``, ``examples.parquet`` and ``extra_files`` into ``out``.

        A result :func:`evalkit.score` returned had its look appended then:
        writing it (once or more) appends nothing. Otherwise, with a ledger
        in the summary, the look is appended there, with ``purpose``, before
        the folder is published. ``out`` never replaces the gold or
        predictions file scored, nor ``inputs``.
        """
        recorded = [self.summary.gold.path, self.summary.predictions.path, self.summary.ledger]
        return write_score(
            self,
            out,
            force=force,
            extra_files=extra_files,
            purpose=purpose,
            inputs=[*recorded, *inputs],
        )
