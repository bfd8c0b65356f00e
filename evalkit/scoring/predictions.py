"""Reading prediction files in the shapes models and harnesses write them.

Whatever the source, the result is one frame with four columns: ``id``
(string), ``output`` (the raw model text, null when there is none),
``request_error`` (why a request produced no output, e.g. a failed OpenAI
Batch request) and ``invalid_utf8`` (the output's bytes were not valid
UTF-8/Unicode, which no JSON consumer accepts). Supported shapes:

* ``jsonl`` / ``json`` / ``csv`` / ``parquet``: a table with an id and an output
  column (``json``: a JSON array of objects);
* ``openai-batch``: the output file of the OpenAI Batch API;
* ``lm-eval``: ``samples_*.jsonl`` of lm-evaluation-harness ``--log_samples``;
* ``hf``: a Hugging Face ``Dataset.save_to_disk`` folder.

``auto`` recognises each from the path and the first record (and, for a
pipe, from its content). Every JSON record is read under the rules of
:mod:`evalkit.io._json_rules` on every path: a key given twice is an error naming the
line, ids are text as written (``1.0`` is refused, not read as ``1``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, get_args

from evalkit.errors import MalformedFile, ParameterError, UnknownColumn, UnreadableFile, UsageError
from evalkit.io import _json_rules as jsonl
from evalkit.io import sha256_file, sha256_input
from evalkit.options import renamed_keywords
from evalkit.scoring.harness import (
    STRUCTURED_CALLS,
    json_array,
    read_lm_eval,
    read_openai_batch,
    structured_text,
)
from evalkit.scoring.options import PredFormat
from evalkit.scoring.prediction_source import (
    PredictionBytes,
    check_source,
    first_record,
    is_lm_eval_array,
    is_open_pipe,
    read_once,
    record_format,
    sniff_format,
)
from evalkit.scoring.records import clean_text, dig, iter_json_lines, records_frame, require_id

if TYPE_CHECKING:
    import polars as pl

PRED_FORMATS: tuple[str, ...] = get_args(PredFormat)
DEFAULT_OUTPUT_COLUMN = "output"


@dataclass(frozen=True)
class PredictionTable:
    """Predictions in evalkit's shape, with where they came from."""

    frame: pl.DataFrame
    """Columns ``id``, ``output``, ``request_error``, ``invalid_utf8``; one row per record."""
    format: str
    """The format the file was read as (never ``auto``)."""
    sha256: str | None = None
    """sha256 of the bytes read, when they were read into memory (a pipe); else None."""


def predictions_sha256(path: Path) -> str:
    """sha256 of a predictions file, or of a folder's files (names and contents, sorted)."""
    if path.is_file():
        return sha256_file(path)
    if not path.is_dir():
        raise UnreadableFile(f"{path}: not a file or folder; a pipe is hashed as it is read")
    return sha256_input(path)


def detect_format(path: Path) -> str:
    """Recognise a predictions file's format from its path and first record."""
    if not path.exists():
        raise UnreadableFile(f"{path}: no such file or folder")
    if path.is_dir():
        from evalkit.io import hf_dataset

        hf_dataset(path)  # a DatasetDict or a folder that is no dataset fails, saying why
        return "hf"
    check_source(path)
    return _format_of(path, None)


def _format_of(path: Path, data: bytes | None) -> str:
    suffix = path.suffix.lower()
    if suffix in (".parquet", ".pq"):
        return "parquet"
    if suffix == ".csv":
        return "csv"
    if data is None and suffix not in (".jsonl", ".ndjson", ".json"):
        raise UnreadableFile(
            f"{path}: cannot tell the predictions format from {suffix or 'no extension'!r}; "
            "pass {pred_format}",
            refs=["pred_format"],
        )
    data = data if data is not None else _head(path)
    if suffix not in (".jsonl", ".ndjson", ".json"):
        return sniff_format(data, path, first_record(data))
    if data.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"["):
        return "lm-eval" if is_lm_eval_array(_first_element(data, path)) else "json"
    return record_format(first_record(data))


def _head(path: Path) -> bytes:
    with path.open("rb") as handle:
        return handle.read(1 << 20)


def _first_element(data: bytes, path: Path) -> Any:
    """The first element of a JSON array file (the whole file is parsed when asked)."""
    if len(data) >= 1 << 20:
        data = path.read_bytes()
    try:
        array = json_array(data, str(path), "records")
    except MalformedFile:
        return None  # the reader reports it
    return array[0] if array else None


def _structured_output_message(name: str, output_col: str) -> str:
    return (
        f"{name}: column {output_col!r} holds JSON objects or lists, not the raw model text; "
        "evalkit scores the text the model wrote: store it as a string"
    )


def _records_frame(records: Any, name: str, id_col: str, output_col: str) -> pl.DataFrame:
    """The reference reading: record by record, exact, naming the line of any problem."""
    import polars as pl

    rows, calls = [], []
    seen_output = False
    keys: dict[str, None] = {}  # the columns there are, for the error when no output is
    for where, record in records:
        found, value = dig(record, id_col)
        identifier = require_id(where, found, value, id_col)
        has_output, raw = dig(record, output_col)
        # Structured calls beside (or instead of) the text: kept for parse: tool_calls.
        has_calls = isinstance(record, dict) and record.get(STRUCTURED_CALLS) is not None
        calls.append(structured_text(record[STRUCTURED_CALLS]) if has_calls else None)
        if not seen_output:
            seen_output = has_output or has_calls
            keys.update(dict.fromkeys(record))
        if isinstance(raw, dict | list):
            raise UsageError(_structured_output_message(name, output_col))
        text, invalid = clean_text(raw)
        rows.append((identifier, text, None, invalid))
    if rows and not seen_output:
        raise _no_output(name, output_col, list(keys))
    frame = records_frame(rows)
    if any(call is not None for call in calls):
        frame = frame.with_columns(pl.Series(STRUCTURED_CALLS, calls, dtype=pl.String))
    return frame


def _read_json_records(data: bytes, name: str, id_col: str, output_col: str) -> pl.DataFrame:
    lines = ((f"{name}:{number}", record) for number, record in iter_json_lines(data, name))
    return _records_frame(lines, name, id_col, output_col)


def _read_json_array(data: bytes, name: str, id_col: str, output_col: str) -> pl.DataFrame:
    records = []
    for number, record in enumerate(json_array(data, name, "prediction records"), start=1):
        if not isinstance(record, dict):
            raise MalformedFile(f"{name}: element {number} of the array is not a JSON object")
        records.append((f"{name}, record {number}", record))
    return _records_frame(records, name, id_col, output_col)


PIECE_BYTES = 64 << 20


def _pieces(data: bytes) -> list[bytes]:
    """``data`` cut into pieces of about :data:`PIECE_BYTES`, each ending at a line end."""
    pieces, start = [], 0
    while start < len(data):
        end = data.find(b"\n", min(start + PIECE_BYTES, len(data)) - 1)
        end = len(data) if end < 0 else end + 1
        pieces.append(data[start:end])
        start = end
    return pieces


def _read_jsonl_table(data: bytes, name: str, id_col: str, output_col: str) -> pl.DataFrame:
    """Plain JSONL predictions: pyarrow's reader when its reading is the reference's.

    pyarrow refuses a key given twice and a value whose type changes between
    lines, and types ids exactly (text, integer, float), so when it takes the
    file and the id and output columns hold what they should, its table is
    what the line-by-line reader would build, many times faster. Anything
    else (a small file, a dotted id, a float id, an output that is not text,
    bytes that are not UTF-8) goes to the line-by-line reader, which gives the
    verdict and names the line.
    """
    if len(data) > jsonl.REFERENCE_BYTES and id_col != output_col:
        frame = _read_arrow_pieces(data, name, id_col, output_col)
        if frame is not None:
            return frame
    return _read_json_records(data, name, id_col, output_col)


def _read_arrow_pieces(data: bytes, name: str, id_col: str, output_col: str) -> pl.DataFrame | None:
    """The fast reading, a piece at a time (each ends at a line end), or None to hand over.

    Pieces keep the peak memory near the size of the result, and separate
    chunks let the parser free each piece of the outputs once it is parsed.
    The pieces must agree on the id column's type (text in one, integers in
    another would be a type change the reference reader sees).
    """
    import polars as pl

    frames, id_types, columns = [], set(), []
    for piece in _pieces(data):
        if not jsonl.has_record_bytes(piece):
            continue
        table = jsonl.arrow_table(piece)
        if table is None:
            return None
        columns.extend(table.column_names)
        frame = _arrow_frame(table, name, id_col, output_col)
        if frame is None:
            return None
        id_types.add(str(table.schema.field(id_col).type).startswith(("string", "large_string")))
        frames.append(frame)
    if len(id_types) > 1:
        return None
    if columns and output_col not in columns:  # as the exact reader: no record has it
        raise _no_output(name, output_col, list(dict.fromkeys(columns)))
    return pl.concat(frames, rechunk=False) if frames else None


def _no_output(name: str, output_col: str, columns: list[str]) -> UnknownColumn:
    listing = ", ".join(columns[:20]) or "(none)"
    return UnknownColumn(
        f"{name}: no record has an output column {output_col!r}; the columns are: {listing}; "
        "pass {output_column}",
        refs=["output_column"],
    )


def _arrow_frame(table: Any, name: str, id_col: str, output_col: str) -> pl.DataFrame | None:
    import polars as pl
    import pyarrow as pa

    columns = table.column_names
    if id_col not in columns or "." in output_col or STRUCTURED_CALLS in columns:
        # no id: the exact reader names the record; a dotted path: it digs; tool
        # calls: it keeps each record's calls as written
        return None
    if output_col not in columns:  # no record of this piece has an output: all missing
        table = table.append_column(output_col, pa.nulls(table.num_rows, pa.string()))
    id_type = table.schema.field(id_col).type
    output_type = table.schema.field(output_col).type
    if not (pa.types.is_string(id_type) or pa.types.is_integer(id_type)):
        return None
    if table.column(id_col).null_count:
        return None
    if not (pa.types.is_string(output_type) or pa.types.is_null(output_type)):
        return None
    frame = pl.from_arrow(table.select([id_col, output_col]))
    assert isinstance(frame, pl.DataFrame)
    return frame.select(
        pl.col(id_col).cast(pl.String).alias("id"),
        pl.col(output_col).cast(pl.String).alias("output"),
        pl.lit(None, dtype=pl.String).alias("request_error"),
        pl.lit(False).alias("invalid_utf8"),
    )


def _resolve_column(frame: pl.DataFrame, dotted: str, name: str, what: str) -> pl.Series:
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
        f"{name}: no {what} column {dotted!r}; the columns are: {listing or '(none)'}; "
        f"pass --{'id' if what == 'id' else 'output'}-col"
    )


def _decode_bytes(raw: bytes | None) -> tuple[str | None, bool]:
    if raw is None:
        return None, False
    try:
        return raw.decode("utf-8"), False
    except UnicodeDecodeError:
        return None, True


def _table_frame(frame: pl.DataFrame, name: str, id_col: str, output_col: str) -> pl.DataFrame:
    """Select and type the id and output columns of a plain table (CSV, Parquet, Arrow)."""
    import polars as pl

    from evalkit.io import check_id_types

    ids = _resolve_column(frame, id_col, name, "id")
    calls = frame.get_column(STRUCTURED_CALLS, default=None)
    if calls is not None and output_col not in frame.columns:
        outputs = pl.repeat(None, frame.height, dtype=pl.String, eager=True)
    else:
        outputs = _resolve_column(frame, output_col, name, "output")
    check_id_types(ids.to_frame(id_col), [id_col], name)
    if isinstance(outputs.dtype, pl.Struct | pl.List | pl.Array):
        raise UsageError(_structured_output_message(name, output_col))
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
    if calls is not None and calls.dtype != pl.Null:
        texts = calls if calls.dtype == pl.String else [structured_text(v) for v in calls.to_list()]
        result = result.with_columns(pl.Series(STRUCTURED_CALLS, texts, dtype=pl.String))
    missing = result["id"].is_null()
    if missing.any():
        row = int(missing.arg_max() or 0) + 1
        raise UnknownColumn(f"{name}: record {row} has no value in the id column {id_col!r}")
    return result


def _read_csv_table(source: Any, name: str, id_col: str, output_col: str) -> pl.DataFrame:
    import csv
    import io

    import polars as pl

    try:
        frame = pl.read_csv(source, infer_schema=False)
    except (pl.exceptions.PolarsError, OSError, ValueError):
        data = source.getvalue() if isinstance(source, io.BytesIO) else Path(source).read_bytes()
        text = data.decode("utf-8", errors="surrogateescape")
        try:
            records = list(csv.DictReader(io.StringIO(text, newline="")))
        except csv.Error as error:
            raise MalformedFile(f"{name}: cannot read as csv: {error}") from error
        rows = []
        for number, record in enumerate(records, start=2):
            where = f"{name}:{number}"
            identifier = require_id(where, id_col in record, record.get(id_col), id_col)
            text_value, invalid = clean_text(record.get(output_col))
            rows.append((identifier, text_value, None, invalid))
        return records_frame(rows)
    return _table_frame(frame, name, id_col, output_col)


def _source_bytes(source: Path, loaded: PredictionBytes | None) -> bytes:
    if loaded is not None:
        return loaded.data
    from evalkit.io import read_bytes

    return read_bytes(source)


@renamed_keywords(id_col="id_column", output_col="output_column")
def read_predictions(
    path: str | os.PathLike[str],
    *,
    pred_format: str = "auto",
    default_id: str,
    id_column: str | None = None,
    output_column: str | None = None,
) -> PredictionTable:
    """Read a predictions file, pipe or folder into evalkit's four-column shape.

    ``id_column`` (default: the contract's id, ``default_id``) may be a dotted
    path into nested records; for ``lm-eval`` it defaults to
    ``doc.<default_id>``. For ``openai-batch`` the id is ``custom_id`` and the
    text the first choice's message; for ``lm-eval`` the text is ``resps[0][0]``.
    A pipe (``/dev/stdin``) is read once; the table then carries the sha256 of
    the bytes read.
    """
    source = Path(path)
    if pred_format not in PRED_FORMATS:
        raise UsageError(
            f"unknown {{pred_format}} {pred_format!r}; use one of {PRED_FORMATS}",
            refs=["pred_format"],
        )
    if not source.exists():
        raise UnreadableFile(f"{source}: no such file or folder")
    check_source(source)
    loaded = read_once(source) if is_open_pipe(source) else None
    if pred_format != "auto":
        fmt = pred_format
    elif loaded is not None:
        fmt = _format_of(source, loaded.data)
    else:
        fmt = detect_format(source)
    if fmt != "hf" and source.is_dir():
        raise UnreadableFile(
            f"{source}: is a folder; pass a file or {{pred_format}}", refs={"pred_format": "hf"}
        )
    if fmt == "hf" and loaded is not None:
        raise UsageError(f"{source}: a pipe cannot hold a Hugging Face dataset folder")
    if fmt in ("openai-batch", "lm-eval") and output_column is not None:
        raise ParameterError(
            "output_column", f"does not apply to {{pred_format}} {fmt}", refs=["pred_format"]
        )
    if fmt == "openai-batch" and id_column not in (None, "custom_id"):
        raise ParameterError(
            "id_column",
            "does not apply to {pred_format} openai-batch (custom_id is)",
            refs=["pred_format"],
        )
    output = output_column or DEFAULT_OUTPUT_COLUMN
    if fmt == "lm-eval":
        id_column = id_column or f"doc.{default_id}"
    id_column = id_column or default_id
    name = str(source)
    frame = _read(fmt, source, loaded, name, id_column, output)
    return PredictionTable(frame=frame, format=fmt, sha256=loaded.sha256 if loaded else None)


def _read(
    fmt: str, source: Path, loaded: PredictionBytes | None, name: str, id_col: str, output: str
) -> pl.DataFrame:
    import io

    if fmt == "hf":
        from evalkit.io import read_table

        return _table_frame(read_table(source, name="predictions").frame, name, id_col, output)
    if fmt in ("csv", "parquet"):
        target: Any = io.BytesIO(loaded.data) if loaded is not None else source
        if fmt == "csv":
            return _read_csv_table(target, name, id_col, output)
        return _table_frame(_read_parquet(target, name), name, id_col, output)
    data = _source_bytes(source, loaded)
    if fmt == "openai-batch":
        return read_openai_batch(data, name)
    if fmt == "lm-eval":
        array = data.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"[")
        return read_lm_eval(data, name, id_col, array=array)
    if data.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"["):
        return _read_json_array(data, name, id_col, output)
    return _read_jsonl_table(data, name, id_col, output)


def _read_parquet(target: Any, name: str) -> pl.DataFrame:
    import polars as pl

    try:
        return pl.read_parquet(target)
    except (pl.exceptions.PolarsError, OSError, ValueError) as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise MalformedFile(f"{name}: cannot read as parquet: {first}") from error
