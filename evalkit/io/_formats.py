"""Table formats: what a path's extension (or a dataset folder) says it holds."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from evalkit.errors import UnreadableFile, UsageError
from evalkit.io._hf import hf_dataset

TableFormat = Literal["jsonl", "csv", "parquet"]
"""What evalkit writes tables as."""
InputFormat = Literal["jsonl", "csv", "parquet", "json", "hf"]
"""What evalkit reads tables from: also ``.json`` files and Hugging Face dataset folders."""

_EXTENSIONS: dict[str, InputFormat] = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".csv": "csv",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".json": "json",
}


def table_format(path: Path) -> InputFormat:
    """The table format implied by ``path``: its extension, or a dataset folder."""
    if path.is_dir():
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
    fmt = _EXTENSIONS.get(path.suffix.lower()) if path.suffix else None
    if fmt not in ("jsonl", "csv", "parquet"):
        raise UsageError(f"{path}: evalkit writes tables as .jsonl, .csv or .parquet")
    return fmt
