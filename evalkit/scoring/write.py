"""Writing a score result: ``summary.json`` and ``examples.parquet``, atomically."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from evalkit.io import atomic_directory

if TYPE_CHECKING:
    import polars as pl

    from evalkit.scoring.summary import ScoreSummary


class ScoreResult(Protocol):
    """What is written: a summary and the per-example table (a :class:`~evalkit.ScoreResult`)."""

    @property
    def summary(self) -> ScoreSummary: ...

    @property
    def examples(self) -> pl.DataFrame: ...


ROW_GROUP_ROWS = 131_072


def summary_json(result: ScoreResult) -> bytes:
    """The bytes of ``summary.json``: indented, keys in model order, a final newline."""
    import orjson

    data = result.summary.model_dump(mode="json")
    return orjson.dumps(data, option=orjson.OPT_INDENT_2) + b"\n"


def write_score(
    result: ScoreResult,
    out: str | os.PathLike[str],
    *,
    force: bool = False,
    extra_files: Mapping[str, bytes] | None = None,
    inputs: Iterable[str | os.PathLike[str] | None] = (),
) -> Path:
    """Write the result folder; an existing folder is replaced only with ``force``.

    Every file appears together or not at all (written into a staging folder
    that is renamed into place), and the same result gives the same bytes.
    ``extra_files`` (name -> bytes, e.g. ``report.html``) go in the same folder;
    ``out`` is never one of ``inputs``, inside one, or holding one.
    """
    folder = Path(out)
    sources = [Path(path) for path in inputs if path is not None]
    with atomic_directory(folder, force, inputs=sources) as staging:
        (staging / "summary.json").write_bytes(summary_json(result))
        for name, data in (extra_files or {}).items():
            (staging / name).write_bytes(data)
        # A fixed row-group size makes the bytes independent of how the
        # frame happens to be chunked (worker count, batch sizes).
        result.examples.write_parquet(
            staging / "examples.parquet",
            compression="zstd",
            statistics=True,
            row_group_size=ROW_GROUP_ROWS,
        )
    return folder
