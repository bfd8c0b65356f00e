"""Line-by-line JSON records: the exact (slower) reading path for predictions.

polars reads a clean JSONL table fastest, but a prediction file may hold
bytes that are not UTF-8 (a model's output, to be scored, not a reason to
fail) or records whose shape polars cannot take. These helpers read such
files record by record, keep going past undecodable text, and name the line
of anything that is not JSON.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from evalkit.errors import UnknownColumn
from evalkit.io import id_text, reference_records

if TYPE_CHECKING:
    import polars as pl

# id, output, request_error, invalid_utf8
Row = tuple[str, str | None, str | None, bool]


def dig(record: Any, dotted: str) -> tuple[bool, Any]:
    """``(found, value)`` of a dotted path (``doc.qid``) in a JSON record."""
    if isinstance(record, dict) and dotted in record:
        return True, record[dotted]
    value = record
    for part in dotted.split("."):
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return False, None
    return True, value


def clean_text(value: Any) -> tuple[str | None, bool]:
    """``(text, invalid_utf8)``: a string that cannot be encoded as UTF-8 is flagged."""
    if value is None:
        return None, False
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return None, True
    return text, False


def iter_json_lines(data: bytes, name: str) -> Iterator[tuple[int, Any]]:
    """``(line number, record)`` for each non-blank line, read by the reference reader.

    The rules are :mod:`evalkit.io._json_rules`'s (a key given twice, nesting, a line
    that is not an object: an error naming the line). Bytes that are not
    UTF-8 are not fatal: they are the model's output, scored (and flagged).
    """
    yield from reference_records(data, name, lenient_utf8=True)


def records_frame(rows: Sequence[Row]) -> pl.DataFrame:
    import polars as pl

    ids, outputs, errors, invalid = zip(*rows, strict=True) if rows else ((), (), (), ())
    return pl.DataFrame(
        {
            "id": list(ids),
            "output": list(outputs),
            "request_error": list(errors),
            "invalid_utf8": list(invalid),
        },
        schema={
            "id": pl.String,
            "output": pl.String,
            "request_error": pl.String,
            "invalid_utf8": pl.Boolean,
        },
    )


def require_id(where: str, found: bool, value: Any, id_col: str) -> str:
    """A record's id as text as written (:func:`evalkit.io.id_text`); absent is an error."""
    text = id_text(value, id_col, where) if found else None
    if text is None:
        raise UnknownColumn(
            f"{where}: the record has no id {id_col!r}; pass the id field with {{id_column}}",
            refs=["id_column"],
        )
    return text
