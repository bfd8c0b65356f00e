"""Reading prediction files in the shapes models and harnesses write them.

Whatever the source, the result is one frame with four columns: ``id``
(string), ``output`` (the raw model text, null when there is none),
``request_error`` (why a request produced no output, e.g. a failed OpenAI
Batch request) and ``invalid_utf8`` (the output's bytes were not valid
UTF-8/Unicode, which no JSON consumer accepts). Supported shapes:

* ``jsonl`` / ``csv`` / ``parquet``: a table with an id and an output column;
* ``openai-batch``: the output file of the OpenAI Batch API;
* ``lm-eval``: ``samples_*.jsonl`` of lm-evaluation-harness ``--log_samples``;
* ``hf``: a Hugging Face ``Dataset.save_to_disk`` folder.

``auto`` recognises each from the path and the first record.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from evalkit.errors import MalformedFile, UnknownColumn, UnreadableFile, UsageError
from evalkit.io import sha256_file
from evalkit.scoring.harness import read_lm_eval, read_openai_batch
from evalkit.scoring.records import (
    clean_text,
    dig,
    iter_json_lines,
    records_frame,
    require_id,
)

if TYPE_CHECKING:
    import polars as pl

PredFormat = Literal["auto", "jsonl", "csv", "parquet", "openai-batch", "lm-eval", "hf"]
PRED_FORMATS: tuple[str, ...] = ("auto", "jsonl", "csv", "parquet", "openai-batch", "lm-eval", "hf")
DEFAULT_OUTPUT_COLUMN = "output"


@dataclass(frozen=True)
class PredictionTable:
    """Predictions in evalkit's shape, with where they came from."""

    frame: pl.DataFrame
    """Columns ``id``, ``output``, ``request_error``, ``invalid_utf8``; one row per record."""
    format: str
    """The format the file was read as (never ``auto``)."""


def predictions_sha256(path: Path) -> str:
    """sha256 of a predictions file, or of a folder's files (names and contents, sorted)."""
    if path.is_file():
        return sha256_file(path)
    digest = hashlib.sha256()
    for item in sorted(p for p in path.rglob("*") if p.is_file()):
        digest.update(str(item.relative_to(path)).encode() + b"\0" + sha256_file(item).encode())
    return digest.hexdigest()


def _first_record(path: Path) -> Any:
    import orjson

    with path.open("rb") as handle:
        for raw in handle:
            if raw.strip():
                try:
                    return orjson.loads(raw)
                except orjson.JSONDecodeError:
                    return None
    return None


def detect_format(path: Path) -> str:
    """Recognise a predictions file's format from its path and first record."""
    if not path.exists():
        raise UnreadableFile(f"{path}: no such file or folder")
    if path.is_dir():
        if (path / "dataset_dict.json").exists():
            splits = sorted(p.name for p in path.iterdir() if p.is_dir())
            raise UsageError(
                f"{path}: is a Hugging Face DatasetDict with splits {', '.join(splits)}; "
                f"pass one split's folder, e.g. {path / (splits[0] if splits else 'test')}"
            )
        if (path / "state.json").exists():
            return "hf"
        raise UnreadableFile(
            f"{path}: is a folder but not a Hugging Face save_to_disk folder (no state.json)"
        )
    suffix = path.suffix.lower()
    if suffix in (".parquet", ".pq"):
        return "parquet"
    if suffix == ".csv":
        return "csv"
    if suffix not in (".jsonl", ".ndjson", ".json"):
        raise UnreadableFile(
            f"{path}: cannot tell the predictions format from {suffix or 'no extension'!r}; "
            "pass --pred-format"
        )
    if suffix == ".json" and path.read_bytes()[:1].lstrip() == b"[":
        return "lm-eval"
    record = _first_record(path)
    if isinstance(record, dict):
        if "custom_id" in record and ("response" in record or "error" in record):
            return "openai-batch"
        if "doc" in record and "resps" in record:
            return "lm-eval"
    return "jsonl"


def _read_json_records(path: Path, id_col: str, output_col: str) -> pl.DataFrame:
    """The exact, record-by-record reader (used when polars cannot take the file as is)."""
    rows = []
    for number, record in iter_json_lines(path):
        if not isinstance(record, dict):
            raise MalformedFile(
                f"{path}:{number}: expected a JSON object, found {type(record).__name__}; "
                "fix or remove the line"
            )
        found, value = dig(record, id_col)
        identifier = require_id(path, number, found, value, id_col)
        _, raw = dig(record, output_col)
        if isinstance(raw, dict | list):
            raise UsageError(_structured_output_message(path, output_col))
        text, invalid = clean_text(raw)
        rows.append((identifier, text, None, invalid))
    return records_frame(rows)


def _structured_output_message(path: Path, output_col: str) -> str:
    return (
        f"{path}: column {output_col!r} holds JSON objects or lists, not the raw model text; "
        "evalkit scores the text the model wrote: store it as a string"
    )


def _resolve_column(frame: pl.DataFrame, dotted: str, path: Path, what: str) -> pl.Series:
    import polars as pl

    if dotted in frame.columns:
        return frame[dotted]
    head, *rest = dotted.split(".")
    if head in frame.columns and rest:
        expression = pl.col(head)
        try:
            for part in rest:
                expression = expression.struct.field(part)
            return frame.select(expression.alias(dotted)).to_series()
        except pl.exceptions.PolarsError:
            pass
    listing = ", ".join(frame.columns[:20])
    raise UnknownColumn(
        f"{path}: no {what} column {dotted!r}; the columns are: {listing or '(none)'}; "
        f"pass --{'id' if what == 'id' else 'output'}-col"
    )


def _decode_bytes(raw: bytes | None) -> tuple[str | None, bool]:
    if raw is None:
        return None, False
    try:
        return raw.decode("utf-8"), False
    except UnicodeDecodeError:
        return None, True


def _table_frame(frame: pl.DataFrame, path: Path, id_col: str, output_col: str) -> pl.DataFrame:
    """Select and type the id and output columns of a plain table."""
    import polars as pl

    ids = _resolve_column(frame, id_col, path, "id")
    outputs = _resolve_column(frame, output_col, path, "output")
    if isinstance(ids.dtype, pl.Struct | pl.List):
        raise UsageError(f"{path}: id column {id_col!r} is not a scalar; pass --id-col")
    if isinstance(outputs.dtype, pl.Struct | pl.List | pl.Array):
        raise UsageError(_structured_output_message(path, output_col))
    invalid = pl.repeat(False, len(outputs), dtype=pl.Boolean, eager=True).alias("invalid_utf8")
    if outputs.dtype == pl.Binary:  # raw bytes: decode one by one, flag what is not UTF-8
        pairs = [_decode_bytes(raw) for raw in outputs.to_list()]
        outputs = pl.Series(output_col, [text for text, _ in pairs], dtype=pl.String)
        invalid = pl.Series("invalid_utf8", [flag for _, flag in pairs], dtype=pl.Boolean)
    elif outputs.dtype != pl.String:
        outputs = outputs.cast(pl.String)
    result = pl.DataFrame(
        {
            "id": ids.cast(pl.String),
            "output": outputs,
            "request_error": pl.repeat(None, len(ids), dtype=pl.String, eager=True),
            "invalid_utf8": invalid,
        }
    )
    missing = result["id"].is_null()
    if missing.any():
        row = int(missing.arg_max() or 0) + 1
        raise UnknownColumn(f"{path}: record {row} has no value in the id column {id_col!r}")
    return result


PREFIX_LINES = 1_000


def _prefix_frame(path: Path) -> pl.DataFrame:
    """The first lines of a JSONL file with their inferred types (to check the columns)."""
    import io
    import itertools

    import polars as pl

    with path.open("rb") as handle:
        head = b"".join(itertools.islice(handle, PREFIX_LINES))
    return pl.read_ndjson(io.BytesIO(head), infer_schema_length=None)


PIECE_BYTES = 64 << 20
# Up to this size polars reads the file itself (memory-mapped, on every core):
# ~0.13 s instead of ~0.23 s for 128 MB, on the path every other step waits for.
WHOLE_FILE_BYTES = 256 << 20


def _read_jsonl_pieces(path: Path, schema: dict[str, Any]) -> pl.DataFrame:
    """Read a JSONL file 64 MB at a time into a frame whose columns keep one chunk per piece.

    Reading in pieces keeps the peak memory near the size of the result (no
    whole-file buffer), and separate chunks let the parser free each piece of
    the outputs once it is parsed. A file of at most ``WHOLE_FILE_BYTES`` is
    read in one call, which is faster and costs little memory at that size.
    """
    import io

    import polars as pl

    if path.stat().st_size <= WHOLE_FILE_BYTES:
        return pl.read_ndjson(path, schema=schema)
    frames = []
    with path.open("rb") as handle:
        while data := handle.read(PIECE_BYTES):
            data += handle.readline()  # end the piece at a line end
            frames.append(pl.read_ndjson(io.BytesIO(data), schema=schema))
    return pl.concat(frames, rechunk=False)


def _read_jsonl_table(path: Path, id_col: str, output_col: str) -> pl.DataFrame:
    """Plain JSONL predictions: polars when it can take the file, else the exact reader.

    The first lines are read with inferred types to check that the columns
    exist and that outputs are text; then, for top-level columns, polars reads
    only those two columns as strings (much faster than inferring every
    column of every line).
    """
    import polars as pl

    if path.stat().st_size == 0:
        return records_frame([])
    try:
        prefix = _prefix_frame(path)
        _table_frame(prefix, path, id_col, output_col)  # raises naming a missing column
        if id_col in prefix.columns and output_col in prefix.columns:
            frame = _read_jsonl_pieces(path, {id_col: pl.String, output_col: pl.String})
        else:  # a dotted path into nested records
            frame = pl.read_ndjson(path, infer_schema_length=None)
    except (pl.exceptions.PolarsError, OSError, ValueError):
        return _read_json_records(path, id_col, output_col)
    table = _table_frame(frame, path, id_col, output_col)
    # polars turns a lone "\ud800" escape into U+0000 without a word; a NUL in
    # an output (rare in real text) sends the file through the exact reader.
    if table["output"].str.contains("\x00", literal=True).any():
        return _read_json_records(path, id_col, output_col)
    return table


def _read_csv_table(path: Path, id_col: str, output_col: str) -> pl.DataFrame:
    import csv

    import polars as pl

    try:
        frame = pl.read_csv(path, infer_schema=False)
    except (pl.exceptions.PolarsError, OSError, ValueError):
        with path.open(encoding="utf-8", errors="surrogateescape", newline="") as handle:
            try:
                records = list(csv.DictReader(handle))
            except csv.Error as error:
                raise MalformedFile(f"{path}: cannot read as csv: {error}") from error
        rows = []
        for number, record in enumerate(records, start=2):
            identifier = require_id(path, number, id_col in record, record.get(id_col), id_col)
            text, invalid = clean_text(record.get(output_col))
            rows.append((identifier, text, None, invalid))
        return records_frame(rows)
    return _table_frame(frame, path, id_col, output_col)


def _read_hf_folder(path: Path, id_col: str, output_col: str) -> pl.DataFrame:
    import polars as pl
    import pyarrow as pa

    try:
        state = json.loads((path / "state.json").read_text(encoding="utf-8"))
        files = [path / item["filename"] for item in state["_data_files"]]
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise MalformedFile(
            f"{path / 'state.json'}: not a Hugging Face save_to_disk state ({error})"
        ) from error
    tables = []
    for file in files:
        try:
            with pa.memory_map(str(file)) as source:
                tables.append(pa.ipc.open_stream(source).read_all())
        except (OSError, pa.ArrowInvalid) as error:
            raise MalformedFile(f"{file}: cannot read as an Arrow stream ({error})") from error
    if not tables:
        raise MalformedFile(f"{path}: state.json lists no data files")
    frame = pl.from_arrow(pa.concat_tables(tables))
    assert isinstance(frame, pl.DataFrame)
    return _table_frame(frame, path, id_col, output_col)


def read_predictions(
    path: str | os.PathLike[str],
    *,
    pred_format: str = "auto",
    default_id: str,
    id_col: str | None = None,
    output_col: str | None = None,
) -> PredictionTable:
    """Read a predictions file or folder into evalkit's four-column shape.

    ``id_col`` (default: the contract's id, ``default_id``) may be a dotted
    path into nested records; for ``lm-eval`` it defaults to
    ``doc.<default_id>``. For ``openai-batch`` the id is ``custom_id`` and the
    text the first choice's message; for ``lm-eval`` the text is ``resps[0][0]``.
    """
    source = Path(path)
    if pred_format not in PRED_FORMATS:
        raise UsageError(f"unknown --pred-format {pred_format!r}; use one of {PRED_FORMATS}")
    fmt = detect_format(source) if pred_format == "auto" else pred_format
    if not source.exists():
        raise UnreadableFile(f"{source}: no such file or folder")
    if fmt != "hf" and source.is_dir():
        raise UnreadableFile(f"{source}: is a folder; pass a file or --pred-format hf")
    if fmt in ("openai-batch", "lm-eval") and output_col is not None:
        raise UsageError(f"--output-col does not apply to --pred-format {fmt}")
    if fmt == "openai-batch" and id_col not in (None, "custom_id"):
        raise UsageError("--id-col does not apply to --pred-format openai-batch (custom_id is)")
    output = output_col or DEFAULT_OUTPUT_COLUMN
    if fmt == "lm-eval":
        id_col = id_col or f"doc.{default_id}"
    id_col = id_col or default_id
    if fmt == "openai-batch":
        frame = read_openai_batch(source)
    elif fmt == "lm-eval":
        frame = read_lm_eval(source, id_col)
    elif fmt == "hf":
        frame = _read_hf_folder(source, id_col, output)
    elif fmt == "csv":
        frame = _read_csv_table(source, id_col, output)
    elif fmt == "parquet":
        from evalkit.io import read_table

        frame = _table_frame(read_table(source, "parquet"), source, id_col, output)
    else:
        frame = _read_jsonl_table(source, id_col, output)
    return PredictionTable(frame=frame, format=fmt)
