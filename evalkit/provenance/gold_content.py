"""A test set's identity by content: its ids and gold values, not the bytes of one encoding.

The ledger counts looks per test set. Keyed by the gold file's sha256 alone,
the same rows written again (``test.parquet`` -> ``test.jsonl``, another
compression, another row order) would start a fresh count. So ``score``
also records the sha256 of what it read from the gold file: the ids and
the gold columns the contract reads, as text, in id order.

Each column is hashed in the form a re-encoding keeps: numbers (integers
and floats alike) as IEEE-754 doubles, so ``12.0`` in Parquet is ``12`` in
a JSONL file written by another tool (-0.0 as 0.0, every NaN as one NaN;
integers beyond 2**53 lose their last digits, as they do in JSON);
strings as their UTF-8 bytes; booleans as ``true``/``false``; nested
values as compact JSON; null as null. The hash covers, per column in name
order, its name, its kind, which values are null, and the values (for
text, every value's byte length and then the bytes), so no two tables with
different cells share a hash by concatenation. It is computed with polars
and numpy on whole columns (no per-row Python), beside the parsing.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import polars as pl

CONTENT_HASH_VERSION = b"evalkit test set content 1\x00"


def _column_bytes(series: pl.Series) -> tuple[bytes, pl.Series | None, bytes]:
    """(kind, the values as text or None, the values as bytes when not text)."""
    import numpy as np
    import polars as pl

    dtype = series.dtype
    if dtype.is_numeric():
        values = series.cast(pl.Float64).fill_null(0.0).to_numpy() + 0.0  # -0.0 -> 0.0
        values = np.where(np.isnan(values), np.nan, values)
        return b"number", None, values.astype("<f8").tobytes()
    column = pl.col(series.name)
    if dtype == pl.Binary:
        expression = column.bin.encode("hex")
    elif dtype.is_nested() or dtype == pl.Object:
        # Compact JSON of {"v": value}: polars writes nested values the same
        # way whichever file they came from.
        expression = pl.when(column.is_null()).then(None)
        expression = expression.otherwise(pl.struct(column.alias("v")).struct.json_encode())
    else:
        expression = column.cast(pl.String)
    return b"text", series.to_frame().select(expression.alias(series.name)).to_series(), b""


def content_sha256(gold: pl.DataFrame) -> str:
    """sha256 of a gold table's ids and gold values, independent of how they were stored.

    ``gold`` is what ``score`` reads: a string ``id`` column and the gold
    columns the contract uses. Rows are taken in id order.
    """
    import numpy as np

    frame = gold if gold["id"].is_sorted() else gold.sort("id")
    digest = hashlib.sha256(CONTENT_HASH_VERSION)
    digest.update(frame.height.to_bytes(8, "little"))
    for name in sorted(frame.columns):
        series = frame[name]
        kind, text, values = _column_bytes(series)
        digest.update(name.encode("utf-8") + b"\x00" + kind + b"\x00")
        digest.update(np.packbits(series.is_not_null().to_numpy()).tobytes())
        if text is None:
            digest.update(values)
            continue
        lengths = text.str.len_bytes().fill_null(0).to_numpy()  # UInt32: a value < 4 GiB
        digest.update(lengths.astype("<u4").tobytes())
        digest.update(str(text.fill_null("").str.join("").item()).encode("utf-8"))
    return digest.hexdigest()
