"""Alpaca rows (``instruction``, ``input``, ``output``) read as conversations.

``--text instruction --text input --text output`` names the three columns,
in that order. The user turn is the instruction and the input joined by a
newline, or whichever of the two is not empty: LLaMA-Factory's
``AlpacaDatasetConverter`` (``src/llamafactory/data/converter.py``) appends
``example[prompt]`` and ``example[query]`` only when they are truthy and
joins them with ``"\\n"``. The assistant turn is the output; a row whose
output is null has none (LLaMA-Factory reads it as an unsupervised
example), so it is a prompt already. A system column adds the system turn
as for every conversation (:mod:`evalkit.chat.extras`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from evalkit.chat.dialect import ColumnReader, ColumnsDialect, ColumnsRead, NormalizedColumn
from evalkit.chat.dtypes import call_dtype, conversation_dtype
from evalkit.errors import InvalidTable, UnknownColumn

if TYPE_CHECKING:
    import polars as pl

    from evalkit.io import Table

ALPACA_PARTS = ("instruction", "input", "output")


def _check_columns(table: Table, names: Sequence[str]) -> None:
    import polars as pl

    frame, source = table.frame, table.label
    for part, name in zip(ALPACA_PARTS, names, strict=True):
        if name not in frame.columns:
            listing = ", ".join(frame.columns[:20]) + (" …" if frame.width > 20 else "")
            raise UnknownColumn(
                f"{source}: no column {name!r} for Alpaca's {part} (three {{text}} columns are "
                "read as Alpaca's instruction, input and output, in that order); the columns "
                f"are: {listing or '(none)'}",
                refs=["text"],
            )
        dtype = frame.schema[name]
        if not (dtype in (pl.String, pl.Null) or isinstance(dtype, pl.Categorical | pl.Enum)):
            raise InvalidTable(
                f"{source}: column {name!r} (Alpaca's {part}) holds {dtype} values; "
                "instruction, input and output are text"
            )
        if table.is_nested(name):  # a list or object that a JSON reader turned into text
            values = table.values(name)
            row = next(i for i, value in enumerate(values) if isinstance(value, list | dict))
            kind = "a list" if isinstance(values[row], list) else "an object"
            raise InvalidTable(
                f"{table.where(row)}: column {name!r} (Alpaca's {part}) holds {kind}; "
                "instruction, input and output are text"
            )


def _message(role: str, content: pl.Expr) -> pl.Expr:
    import polars as pl

    return pl.struct(
        pl.lit(role).alias("role"),
        content.alias("content"),
        pl.lit(None, pl.List(call_dtype())).alias("tool_calls"),
        pl.lit(None, pl.String).alias("tool_call_id"),
        pl.lit(None, pl.String).alias("name"),
        pl.lit(None, pl.Boolean).alias("train"),
        pl.lit(None, pl.String).alias("reasoning"),
    )


def read_alpaca(
    table: Table, names: Sequence[str], read_column: ColumnReader | None = None
) -> ColumnsRead:
    """The three columns as one conversation per row: user (instruction, input), assistant.

    The columns are text, checked here (``read_column`` is not needed)."""
    import polars as pl

    _check_columns(table, names)
    frame = table.frame
    instruction, given, output = (pl.col(name).cast(pl.String) for name in names)
    has_instruction = instruction.is_not_null() & (instruction != "")
    has_input = given.is_not_null() & (given != "")
    user = (
        pl.when(has_instruction & has_input)
        .then(pl.concat_str([instruction, given], separator="\n"))
        .when(has_instruction)
        .then(instruction)
        .when(has_input)
        .then(given)
        .otherwise(pl.lit(""))
    )
    conversation = (
        pl.when(output.is_null())
        .then(pl.concat_list(_message("user", user)))
        .otherwise(pl.concat_list(_message("user", user), _message("assistant", output)))
        .cast(conversation_dtype())
    )
    series = frame.select(conversation.alias(names[0]))[names[0]]
    return ColumnsRead(
        "conversation", ALPACA_NAME, normalized=NormalizedColumn(series, 0, "messages")
    )


ALPACA_NAME = "alpaca"
ALPACA = ColumnsDialect(
    name=ALPACA_NAME,
    label="Alpaca",
    columns=3,
    parts=ALPACA_PARTS,
    read=read_alpaca,
)
