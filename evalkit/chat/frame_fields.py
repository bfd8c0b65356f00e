"""Polars expressions over one row per message: the vectorised form of :mod:`evalkit.chat.calls`.

:func:`evalkit.chat.frame.normalize_column` explodes a conversation column
into one row per message and builds each normalised field here: the text
(string or parts), the tool calls, ``tool_call_id``, ``name`` and the
training flag, each with the expression that says whether the message breaks
a rule of the reference normaliser. A type these expressions do not cover
raises :class:`Unclean`, and the column goes the reference way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evalkit.chat.dialects import content_keys, role_keys

if TYPE_CHECKING:
    import polars as pl


class Unclean(Exception):
    """The column's type is outside what the vectorised path handles."""


def is_text(dtype: Any) -> bool:
    """Whether a field holds text (or only nulls)."""
    import polars as pl

    return dtype in (pl.String, pl.Null)


def struct_fields(dtype: Any) -> dict[str, Any]:
    """Field name -> type of a struct type."""
    return {field.name: field.dtype for field in dtype.fields}


def field(fields: dict[str, Any], name: str, dtype: Any = None) -> pl.Expr:
    """A message field as an expression: null when absent, text when null in every row."""
    import polars as pl

    if name not in fields:
        return pl.lit(None, dtype=dtype or pl.String)
    if fields[name] == pl.Null:
        # A field null in every row is typed Null, which string expressions
        # (replace_strict of the role names, say) refuse: read it as text.
        return pl.col(name).cast(dtype or pl.String)
    return pl.col(name)


def parts_fields(dtype: Any) -> dict[str, Any] | None:
    """The fields of a ``List(Struct)`` content type whose type/text are text, else None."""
    import polars as pl

    if isinstance(dtype, pl.List) and dtype.inner == pl.Null:
        return {}  # only empty lists (or null parts, which are reported)
    if not (isinstance(dtype, pl.List) and isinstance(dtype.inner, pl.Struct)):
        return None
    fields = struct_fields(dtype.inner)
    if "value" in fields:  # LLaMA-Factory's parts ({type, value}): read value by value
        return None
    if not all(is_text(fields[key]) for key in ("type", "text") if key in fields):
        return None
    return fields


def _call_fields(dtype: Any) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """(call fields, function fields) of a ``tool_calls`` type; None when it holds no calls."""
    import polars as pl

    if dtype == pl.Null or (isinstance(dtype, pl.List) and dtype.inner == pl.Null):
        return None
    if not (isinstance(dtype, pl.List) and isinstance(dtype.inner, pl.Struct)):
        raise Unclean
    call = struct_fields(dtype.inner)
    if not all(is_text(call[key]) for key in ("id", "type") if key in call):
        raise Unclean
    function_type = call.get("function", pl.Null)
    if function_type == pl.Null:
        return call, {}
    if not isinstance(function_type, pl.Struct):
        raise Unclean
    function = struct_fields(function_type)
    # Arguments written as objects differ in shape from call to call; polars would merge
    # their keys, so only text arguments (the API's form) are read here.
    if not all(is_text(function[key]) for key in ("name", "arguments") if key in function):
        raise Unclean
    return call, function


def check_types(fields: dict[str, Any]) -> None:
    """Raise :class:`Unclean` when a message field has a type the expressions do not cover."""
    import polars as pl

    for key in (*role_keys(), "tool_call_id", "name"):
        if key in fields and not is_text(fields[key]):
            raise Unclean
    for key in content_keys():
        if key in fields and not (is_text(fields[key]) or parts_fields(fields[key]) is not None):
            raise Unclean
    if "tool_calls" in fields:
        _call_fields(fields["tool_calls"])
    weight = fields.get("weight", pl.Null)
    if not (weight == pl.Null or (weight.is_numeric() and weight != pl.Boolean)):
        raise Unclean
    if fields.get("training", pl.Null) not in (pl.Null, pl.Boolean):
        raise Unclean
    if fields.get("loss_weight", pl.Null) != pl.Null:  # LLaMA-Factory's per-message weight
        raise Unclean


def call_count(fields: dict[str, Any]) -> pl.Expr:
    """How many tool calls each message makes."""
    import polars as pl

    if "tool_calls" not in fields or fields["tool_calls"] == pl.Null:
        return pl.lit(0, dtype=pl.UInt32)
    return pl.col("tool_calls").list.len().fill_null(0)


def content_columns(fields: dict[str, Any], key: str) -> tuple[pl.Expr, pl.Expr, pl.Expr]:
    """(text, problem, skipped parts) expressions for the content field ``key``."""
    import polars as pl

    calls = call_count(fields) > 0
    content = field(fields, key)
    missing = content.is_null() & ~calls
    parts = parts_fields(fields[key]) if key in fields else None
    if parts is None:
        return content.fill_null(""), missing, pl.lit(0, dtype=pl.Int64)
    element = pl.element()
    part_type = element.struct.field("type") if "type" in parts else pl.lit(None, pl.String)
    # A field null in every row is typed Null, which list.join refuses: cast to text.
    part_text = (
        element.struct.field("text").cast(pl.String) if "text" in parts else pl.lit(None, pl.String)
    )
    is_text_part = (part_type == "text").fill_null(False)
    text = (
        content.list.eval(part_text.filter(is_text_part & element.is_not_null()))
        .list.join("")
        .fill_null("")
    )
    bad_part = element.is_null() | (is_text_part & part_text.is_null())
    problem = missing | content.list.eval(bad_part).list.any().fill_null(False)
    skipped = content.list.eval((~is_text_part & element.is_not_null()).cast(pl.Int64)).list.sum()
    return text, problem, skipped.fill_null(0)


def call_columns(fields: dict[str, Any], role: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    """(normalised tool calls, problem) expressions: calls of the reference's shape only."""
    import polars as pl

    from evalkit.chat.dtypes import call_dtype

    empty = pl.lit(None, dtype=pl.List(call_dtype()))
    found = _call_fields(fields["tool_calls"]) if "tool_calls" in fields else None
    if found is None:
        if "tool_calls" not in fields:
            return empty, pl.lit(False)
        # A list of nulls (or of nothing): any element is a malformed call.
        bad = pl.col("tool_calls").list.len().fill_null(0) > 0
        return empty, bad
    call, function = found
    element = pl.element()

    def part(source: dict[str, Any], name: str, base: pl.Expr) -> pl.Expr:
        if name not in source:
            return pl.lit(None, dtype=pl.String)
        return base.struct.field(name).cast(pl.String)

    holder = element.struct.field("function") if function else None
    name = part(function, "name", holder) if holder is not None else pl.lit(None, pl.String)
    arguments = (
        part(function, "arguments", holder) if holder is not None else pl.lit(None, pl.String)
    )
    kind = part(call, "type", element)
    bad_call = (
        element.is_null()
        | (kind != "function").fill_null(True)
        | name.is_null()
        | (name == "").fill_null(False)
        | arguments.is_null()
    )
    if holder is not None:
        bad_call = bad_call | holder.is_null()
    calls = pl.col("tool_calls")
    count = calls.list.len().fill_null(0)
    problem = calls.list.eval(bad_call).list.any().fill_null(False) | (
        (count > 0) & (role != "assistant")
    )
    normalised = calls.list.eval(
        pl.struct(
            part(call, "id", element).alias("id"),
            name.alias("name"),
            arguments.alias("arguments"),
            pl.lit(True).alias("arguments_text"),
        )
    )
    return pl.when(count > 0).then(normalised).otherwise(empty), problem


def flag_columns(fields: dict[str, Any], role: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    """(training flag, problem) expressions from ``weight`` and ``training``."""
    import polars as pl

    weight = field(fields, "weight", pl.Float64).cast(pl.Float64)
    training = field(fields, "training", pl.Boolean)
    present = weight.is_not_null()
    wrong = present & (~weight.is_in([0.0, 1.0]).fill_null(False) | (role != "assistant"))
    conflict = present & training.is_not_null() & ((weight == 1.0) != training)
    flag = (
        pl.when(training.is_not_null())
        .then(training)
        .when(present)
        .then(weight == 1.0)
        .otherwise(pl.lit(None, pl.Boolean))
    )
    return flag, (wrong | conflict).fill_null(True)
