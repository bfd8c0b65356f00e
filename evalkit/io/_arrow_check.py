"""Whether a JSON source's column holds every value with the type polars gave it.

polars infers one type per JSON column and, when rows disagree, quietly turns
values into JSON text or another type (content that is a string in some
messages and a list of parts in others reads as the parts' JSON text).
pyarrow's JSON reader, given that type, refuses a value of another type
instead of converting it; so when it reads the column with polars' type, the
frame's values are the file's (null padding of objects aside).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evalkit.io._json_rules import arrow_safe

if TYPE_CHECKING:
    import polars as pl

# pyarrow reads JSON in blocks and fails on a line longer than a block; a
# failure only sends the column to the exact reader, but large blocks keep
# long conversations on the fast path.
ARROW_BLOCK_BYTES = 64 << 20


def _json_arrow_type(arrow_type: Any) -> Any:
    """The same type with 32-bit offsets: pyarrow's JSON reader knows no large or view types."""
    import pyarrow as pa

    if pa.types.is_large_string(arrow_type) or pa.types.is_string_view(arrow_type):
        return pa.string()
    if pa.types.is_large_list(arrow_type) or pa.types.is_list(arrow_type):
        return pa.list_(_json_arrow_type(arrow_type.value_type))
    if pa.types.is_struct(arrow_type):
        return pa.struct(
            [pa.field(field.name, _json_arrow_type(field.type)) for field in arrow_type]
        )
    return arrow_type


def arrow_agrees(body: bytes, column: str, dtype: pl.DataType) -> bool:
    """Whether every value of ``column`` in the JSON Lines ``body`` has the type ``dtype``."""
    import polars as pl
    import pyarrow as pa
    import pyarrow.json as pajson

    if not arrow_safe(body):  # nesting deep enough to crash pyarrow's parser
        return False
    arrow_type = _json_arrow_type(pl.Series("probe", [], dtype=dtype).to_arrow().type)
    options = pajson.ParseOptions(
        explicit_schema=pa.schema([(column, arrow_type)]), unexpected_field_behavior="ignore"
    )
    try:
        pajson.read_json(
            pa.BufferReader(body),
            read_options=pajson.ReadOptions(block_size=ARROW_BLOCK_BYTES),
            parse_options=options,
        )
    except (pa.ArrowException, OSError, ValueError):
        return False
    return True
