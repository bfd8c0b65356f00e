"""Predictions given to ``evalkit.score`` as a frame (polars, pandas or pyarrow).

A frame is a plain table: an id column and an output column, read by the
same code as a CSV or Parquet predictions file (ids checked as ids, outputs
text, a nested output refused), so a frame scores as the same rows in a file
do. The result records ``format: "frame"``, ``path: null``, ``source:
"frame"`` and the frame's content hash (docs/formats.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalkit.errors import UsageError
from evalkit.io import FRAME_SOURCE, is_path, read_table
from evalkit.scoring.predictions import DEFAULT_OUTPUT_COLUMN, PredictionTable, read_predictions

if TYPE_CHECKING:
    from evalkit.io import TableLike

FRAME_FORMAT = FRAME_SOURCE
"""``predictions.format`` of predictions given as a frame."""


def read_prediction_input(
    predictions: TableLike,
    *,
    pred_format: str,
    default_id: str,
    id_col: str | None,
    output_col: str | None,
) -> tuple[PredictionTable, str | None]:
    """The predictions (a file, folder or pipe, or a frame) and a frame's content sha256."""
    from evalkit.scoring.predictions import _table_frame

    if is_path(predictions):
        table = read_predictions(
            predictions,
            pred_format=pred_format,
            default_id=default_id,
            id_column=id_col,
            output_column=output_col,
        )
        return table, None
    if pred_format not in ("auto", FRAME_FORMAT):
        raise UsageError(
            f"pred_format {pred_format!r} names a file format, but the predictions are a "
            "frame; leave pred_format out (a frame is read as a table of id and output columns)"
        )
    given = read_table(predictions, name="predictions")
    label = given.label
    frame = _table_frame(
        given.frame, label, id_col or default_id, output_col or DEFAULT_OUTPUT_COLUMN
    )
    return PredictionTable(frame=frame, format=FRAME_FORMAT), given.sha256
