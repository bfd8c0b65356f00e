"""What a score judged, as one hash: the identity of a look, whatever file or column held it.

The ledger counts looks at a test set. Keyed on the predictions file, one
file with ten candidates in ten columns (``--output-col out0`` … ``out9``)
would be one look however many were scored, and the same answers copied
into another file (CSV beside JSONL) another look. So ``score`` also
records the sha256 of what it judged: for every gold id that has a
prediction, that id and the output text scored for it (after
``on_duplicate`` chose one), in id order. The id column, the output
column and the file's encoding are not in it; which ids and outputs were
read, are. Predictions whose id is not a gold id are not judged, so they
are not in it either.

The bytes hashed: ``evalkit judged answers 1\\0``, the number of answers,
the ids' byte lengths then their UTF-8 bytes, which outputs are null (a
failed request: no text) as one bit each, the outputs' byte lengths then
bytes, and which outputs were not valid UTF-8 as one bit each. Computed on
whole columns with polars and numpy, beside the parsing.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import polars as pl

JUDGED_HASH_VERSION = b"evalkit judged answers 1\x00"


def _text(digest: Any, text: pl.Series) -> None:
    """Each value's byte length (4 bytes, little-endian), then every value's bytes.

    The bytes are hashed where Arrow holds them (one contiguous buffer), not
    joined into a Python string first: a quarter of the time on 50 MB.
    """
    import numpy as np
    import polars as pl

    lengths = text.str.len_bytes().fill_null(0).to_numpy()  # UInt32: a value < 4 GiB
    digest.update(lengths.astype("<u4").tobytes())
    array = text.fill_null("").rechunk().to_arrow(compat_level=pl.CompatLevel.oldest())
    _, offsets, data = array.buffers()  # large_string: validity, int64 offsets, bytes
    bounds = np.frombuffer(offsets, dtype="<i8")[array.offset : array.offset + len(array) + 1]
    if len(array):
        digest.update(memoryview(data)[int(bounds[0]) : int(bounds[-1])])


def answers_sha256(
    ids: pl.Series,
    outputs: pl.Series,
    rows: pl.Series,
    invalid: pl.Series | None = None,
    calls: pl.Series | None = None,
) -> str:
    """sha256 of the answers judged: per gold id with a prediction, the id and its output.

    ``ids`` are the gold ids, ``rows`` per gold id the row of its prediction in
    ``outputs`` (null: no prediction), ``invalid`` per gold id whether its
    output was not valid UTF-8 (None: none was). ``calls`` are the predictions'
    structured tool calls (JSON text per row of ``outputs``; a Batch answer that
    only calls tools has no text): when given, they are judged too and hashed
    after the rest (``calls`` marker, which are null, their bytes), so two files
    whose texts agree but whose calls differ are two looks.
    """
    import numpy as np
    import polars as pl

    found = rows.is_not_null()
    frame = pl.DataFrame(
        {
            "id": ids.filter(found).cast(pl.String),
            "output": outputs.cast(pl.String).gather(rows.filter(found)),
            "invalid": (
                invalid.filter(found).fill_null(False)
                if invalid is not None
                else pl.repeat(False, int(found.sum()), eager=True)
            ),
            "calls": (
                calls.cast(pl.String).gather(rows.filter(found))
                if calls is not None
                else pl.repeat(None, int(found.sum()), dtype=pl.String, eager=True)
            ),
        }
    )
    if not frame["id"].is_sorted():
        frame = frame.sort("id")
    digest = hashlib.sha256(JUDGED_HASH_VERSION)
    digest.update(frame.height.to_bytes(8, "little"))
    _text(digest, frame["id"])
    digest.update(np.packbits(frame["output"].is_null().to_numpy()).tobytes())
    _text(digest, frame["output"])
    digest.update(np.packbits(frame["invalid"].cast(pl.Boolean).to_numpy()).tobytes())
    if calls is not None:
        digest.update(b"calls\x00")
        digest.update(np.packbits(frame["calls"].is_null().to_numpy()).tobytes())
        _text(digest, frame["calls"])
    return digest.hexdigest()
