"""Field matching over every example at once, and the gold checks that guard it.

:func:`field_match` builds one polars expression per field over the gold
column and the parsed value columns (``k<i>`` kind, ``v<i>`` text; see
:mod:`evalkit.contract.parse`), asking the field's registered matcher
(:mod:`evalkit.contract.matchers`, which holds every rule) for its rule; a
**null gold** value expects null or an absent key, whatever the matcher.
:func:`check_gold_types` asks the matcher which gold columns it can compare,
before any output is judged; slices select rows by their gold values.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from evalkit.contract.matchers import FieldColumns, matcher
from evalkit.contract.parse import ABSENT, BOOLEAN, NULL, NUMBER, STRING
from evalkit.errors import InvalidContract

if TYPE_CHECKING:
    import polars as pl

    from evalkit.contract.model import Contract, FieldSpec


def field_match(
    spec: FieldSpec,
    index: int,
    gold_column: str,
    dtype: Any,
    where: str,
    columns: Mapping[str, pl.Series] | None = None,
    label: bool = False,
) -> pl.Expr:
    """Expression: did field ``index`` match its gold value, on each row?

    Evaluated over a frame with the gold values in ``gold_column`` (of type
    ``dtype``) and the parsed ``error``, ``k<i>``, ``v<i>`` columns;
    ``columns`` holds what the field's matcher computed beforehand
    (:meth:`~evalkit.contract.matchers.Matcher.columns`: a ``set`` field's
    F1, a ``normalized`` field's normalised comparison, the comparison with
    list or object gold). A ``label`` field (``parse: label``) compares the
    label's text with the gold value's text, so integer and Boolean gold
    labels work. A null gold value expects null or an absent key, whatever
    the matcher; a row whose output is not format-valid never matches.
    """
    import polars as pl

    gold = pl.col(gold_column)
    if label and dtype != pl.String and dtype != pl.Null:
        # What was computed was computed for the column's own type, not its text.
        gold, dtype, columns = gold.cast(pl.String), pl.String, None
    kind, value = pl.col(f"k{index}"), pl.col(f"v{index}")
    field = FieldColumns(spec, gold, dtype, kind, value, where, columns or {})
    rule = matcher(spec.match).rule(field)
    expects_null = kind.is_in([ABSENT, NULL])
    valid = pl.col("error").is_null()
    matched = valid & pl.when(gold.is_null()).then(expects_null).otherwise(rule)
    return matched.fill_null(False)


_LABEL_KINDS = ("string", "integer", "Boolean", "null")


def gold_kind(dtype: Any) -> str:
    """The JSON-like type of a gold column, as errors name it."""
    import polars as pl

    if dtype == pl.Boolean:
        return "Boolean"
    if dtype.is_integer():
        return "integer"
    if dtype.is_numeric():
        return "float"
    if dtype == pl.String:
        return "string"
    if dtype == pl.Null:
        return "null"
    if isinstance(dtype, pl.List | pl.Array):
        return "list"
    if isinstance(dtype, pl.Struct):
        return "object"
    return str(dtype)


def _first_bad(frame: pl.DataFrame, column: str, bad: pl.Series) -> tuple[str, Any]:
    row = int(bad.arg_true()[0])
    return str(frame["id"][row]), frame[column][row]


def check_gold_types(
    contract: Contract, frame: pl.DataFrame, where: str, prefix: str
) -> pl.DataFrame:
    """Check that each field's gold column can be compared by its matcher; return the frame.

    ``frame`` holds ``id`` and the gold columns named ``prefix + column``. A
    category (or enum) column becomes text, as it was written. A matcher
    that cannot apply to the column's type, a text column of numbers that
    holds a non-number (``number``) or a text column that holds no JSON
    array (``set``) is :class:`~evalkit.errors.InvalidContract`, naming the
    field, the column, its type or the first bad value and its id.
    """
    import polars as pl

    text_like = [
        pl.col(name).cast(pl.String)
        for name, dtype in frame.schema.items()
        if isinstance(dtype, pl.Categorical | pl.Enum)
    ]
    if text_like:
        frame = frame.with_columns(text_like)
    if contract.output.parse == "tool_calls":  # gold calls are checked when read
        _check_slice_types(contract, frame, where, prefix)
        return frame
    for name, spec in contract.fields.items():
        assert spec.gold is not None, "every field but a tool call's names a gold column"
        column = prefix + spec.gold
        kind = gold_kind(frame.schema[column])
        place = f"{where}: fields.{name}"
        if contract.output.parse == "label" and kind not in _LABEL_KINDS:
            raise InvalidContract(
                f"{place}: parse: label compares the label's text with gold, but gold column "
                f"{spec.gold!r} holds {kind} values; write the gold labels as text"
            )
        rule = matcher(spec.match)
        allowed = rule.gold_kinds
        if allowed is not None and kind not in allowed:
            raise InvalidContract(
                f"{place}: match: {spec.match} compares {rule.compares}, but gold column "
                f"{spec.gold!r} holds {kind} values; use match: exact, or fix the gold column"
            )
        if kind != "string" or allowed is None:
            continue
        bad = rule.bad_gold_text(frame[column])
        if bad is not None and bad.any():
            row_id, value = _first_bad(frame, column, bad)
            raise InvalidContract(rule.bad_gold_text_message(place, spec.gold, value, row_id))
    _check_slice_types(contract, frame, where, prefix)
    return frame


_VALUE_KINDS = {bool: "Boolean", int: "integer", float: "float", str: "string"}
_NUMBERS = ("integer", "float")


def _check_slice_types(contract: Contract, frame: pl.DataFrame, where: str, prefix: str) -> None:
    """A slice value of another type than its gold column could never match: say which."""
    for index, item in enumerate(contract.slices):
        for column, condition in item.where.items():
            kind = gold_kind(frame.schema[prefix + column])
            wanted = condition["not"] if isinstance(condition, dict) else condition
            for value in wanted if isinstance(wanted, list) else [wanted]:
                value_kind = _VALUE_KINDS.get(type(value))
                if value is None or kind == "null" or value_kind == kind:
                    continue
                if value_kind in _NUMBERS and kind in _NUMBERS:
                    continue
                raise InvalidContract(
                    f"{where}: slices[{index}] ({item.name}): where.{column}: {value!r} is "
                    f"{value_kind}, but gold column {column!r} holds {kind} values; write "
                    "the value as the column holds it"
                )


def predicted_class(class_column: str, index: int, matched: pl.Expr) -> pl.Expr:
    """Expression: the class a format-valid output predicts; null for invalid outputs.

    When the class field matched, the gold label itself (so a ``normalized``
    match counts as the right class); otherwise the predicted string, or the
    JSON text of a non-string scalar.
    """
    import polars as pl

    kind, value = pl.col(f"k{index}"), pl.col(f"v{index}")
    return (
        pl.when(pl.col("error").is_not_null())
        .then(pl.lit(None, dtype=pl.String))
        .when(matched)
        .then(pl.col(class_column).cast(pl.String))
        .when(kind.is_in([STRING, NUMBER, BOOLEAN]))
        .then(value)
    )


def slice_mask(where: dict[str, Any], schema: Any = None) -> pl.Expr:
    """Expression: does a row (gold columns) meet every condition of a slice's ``where``?

    With the gold columns' ``schema``, numbers compare as numbers whatever
    their kind (``2.0`` selects the integer 2; integers stay exact).
    """
    import polars as pl

    mask = pl.lit(True)
    for column, condition in where.items():
        negate = isinstance(condition, dict)
        wanted = condition["not"] if negate else condition
        values = wanted if isinstance(wanted, list) else [wanted]
        present = [value for value in values if value is not None]
        test = pl.lit(False)
        target = pl.col(column)
        dtype = schema.get(column) if schema is not None else None
        numbers = bool(present) and all(type(value) in (int, float) for value in present)
        if dtype is not None and dtype.is_numeric() and numbers:
            exact = dtype.is_integer() and all(type(value) is int for value in present)
            kind = pl.Int64 if exact else pl.Float64
            target = target.cast(kind)
            listed = pl.Series(present, dtype=kind, strict=False)
        else:
            listed = pl.Series(present, strict=False)
        if present:
            test = target.is_in(pl.lit(listed).implode())
        if len(present) < len(values):
            test = test | pl.col(column).is_null()
        test = test.fill_null(False)
        mask = mask & (~test if negate else test)
    return mask


__all__ = [
    "NULL",
    "check_gold_types",
    "field_match",
    "predicted_class",
    "slice_mask",
]
