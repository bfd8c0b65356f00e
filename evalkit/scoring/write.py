"""Writing a score result: ``summary.json`` and ``examples.parquet``, atomically."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from evalkit.io import atomic_directory

if TYPE_CHECKING:
    import polars as pl

    from evalkit.scoring.summary import ScoreSummary

ROW_GROUP_ROWS = 131_072


class ResultToWrite(Protocol):
    """What is written: a summary and the per-example table
    (:class:`evalkit.scoring.engine.ScoreResult`, which this module need not import)."""

    @property
    def summary(self) -> ScoreSummary: ...

    @property
    def examples(self) -> pl.DataFrame: ...


def summary_json(result: ResultToWrite) -> bytes:
    """The bytes of ``summary.json``: indented, keys in model order, a final newline."""
    import orjson

    data = result.summary.model_dump(mode="json")
    return orjson.dumps(data, option=orjson.OPT_INDENT_2) + b"\n"


def write_score(result: ResultToWrite, out: str | os.PathLike[str], *, force: bool = False) -> Path:
    """Write the result folder; an existing folder is replaced only with ``force``.

    Both files appear together or not at all (written into a staging folder
    that is renamed into place), and the same result gives the same bytes.
    """
    folder = Path(out)
    with atomic_directory(folder, force) as staging:
        (staging / "summary.json").write_bytes(summary_json(result))
        # A fixed row-group size makes the bytes independent of how the
        # frame happens to be chunked (worker count, batch sizes).
        result.examples.write_parquet(
            staging / "examples.parquet",
            compression="zstd",
            statistics=True,
            row_group_size=ROW_GROUP_ROWS,
        )
    return folder
