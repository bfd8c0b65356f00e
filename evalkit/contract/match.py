"""Field matchers: does a predicted value equal the gold value, under the contract's rule?

Each matcher is a polars expression over the gold column and the parsed
value columns (``k<i>`` kind, ``v<i>`` text; see :mod:`evalkit.contract.parse`),
so one rule runs vectorised over every example. The rules (docs/contracts.md):

* a **null gold** value expects null or an absent key, whatever the matcher;
* ``exact``: same JSON type and value (a number equals a number of the same
  value, ``1 == 1.0``; a string never equals a number);
* ``normalized``: strings equal after NFKC, lower-casing and whitespace
  collapsing (other types: as ``exact``);
* ``number``: a JSON number within ``tolerance`` of the gold number, inclusive
  (with 1e-9 of slack for binary floating point: 12.33 vs 12.34 at 0.01 matches);
* ``set``: two JSON arrays as sets; F1 = 2|P∩G|/(|P|+|G|) (1.0 when both are
  empty); a match when F1 reaches ``min_f1``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evalkit.contract.parse import ABSENT, ARRAY, BOOLEAN, NULL, NUMBER, OBJECT, STRING
from evalkit.errors import InvalidContract

if TYPE_CHECKING:
    import polars as pl

    from evalkit.contract.model import Contract, FieldSpec

FLOAT_SLACK = 1e-9


def _numeric(dtype: Any) -> bool:
    return bool(dtype.is_numeric())


def _same_numbers(value: Any) -> Any:
    """``value`` with every integral float as an int, so that ``1`` and ``1.0`` compare equal."""
    if type(value) is float and value.is_integer():
        return int(value)
    if isinstance(value, list):
        return [_same_numbers(item) for item in value]
    if isinstance(value, dict):
        return {key: _same_numbers(item) for key, item in value.items()}
    return value


def canonical_json_text(value: Any) -> str | None:
    """Sorted-key JSON text of a JSON value, numbers of equal value written alike.

    Two values are equal under ``exact`` (lists and objects) and ``set``
    (members) when their canonical texts are: a Boolean never equals a
    number, ``1`` equals ``1.0``, key order does not count.
    """
    import orjson

    if value is None:
        return None
    return orjson.dumps(_same_numbers(value), option=orjson.OPT_SORT_KEYS).decode()


def _exact(
    gold: pl.Expr, dtype: Any, kind: pl.Expr, value: pl.Expr, nested_equal: pl.Series | None
) -> pl.Expr:
    import polars as pl

    if dtype == pl.String:
        return (kind == STRING) & (value == gold)
    if dtype == pl.Boolean:
        as_text = pl.when(gold).then(pl.lit("true")).otherwise(pl.lit("false"))
        return (kind == BOOLEAN) & (value == as_text)
    if dtype.is_integer():
        # Integers compare as integers (2**53 + 1 is not 2**53); 1 == 1.0 as numbers.
        whole, gold_whole = value.cast(pl.Int64, strict=False), gold.cast(pl.Int64, strict=False)
        as_float = value.cast(pl.Float64, strict=False) == gold.cast(pl.Float64)
        equal = (
            pl.when(whole.is_not_null() & gold_whole.is_not_null())
            .then(whole == gold_whole)
            .otherwise(as_float)
        )
        return (kind == NUMBER) & equal
    if _numeric(dtype):
        return (kind == NUMBER) & (value.cast(pl.Float64, strict=False) == gold.cast(pl.Float64))
    if dtype == pl.Null:
        return pl.lit(False)
    assert nested_equal is not None, "list and object gold need their comparison column"
    return pl.lit(nested_equal)


def _number(
    gold: pl.Expr, dtype: Any, kind: pl.Expr, value: pl.Expr, tolerance: float, where: str
) -> pl.Expr:
    import polars as pl

    if dtype == pl.Null:
        return pl.lit(False)
    if not (_numeric(dtype) or dtype == pl.String):
        raise InvalidContract(
            f"{where}: match: number needs a numeric gold column, found {dtype}; "
            "use match: exact or normalized, or fix the gold column's type"
        )
    # A text column holds decimal numbers (checked by check_gold_types).
    expected = gold.cast(pl.Float64, strict=False)
    difference = (value.cast(pl.Float64, strict=False) - expected).abs()
    return (kind == NUMBER) & (difference <= tolerance + FLOAT_SLACK)


def set_f1(predicted: Any, gold: Any) -> float | None:
    """F1 of two collections compared as sets of JSON values (None when predicted is not a list)."""
    if not isinstance(predicted, list) or not isinstance(gold, list):
        return None
    left = {canonical_json_text(item) for item in predicted}
    right = {canonical_json_text(item) for item in gold}
    if not left and not right:
        return 1.0
    return 2 * len(left & right) / (len(left) + len(right))


def set_f1_column(frame: pl.DataFrame, gold_column: str, index: int) -> pl.Series:
    """Per-row set F1 of field ``index`` (null where the prediction or gold is not a list)."""
    import orjson
    import polars as pl

    gold_values = frame[gold_column].to_list()
    if frame[gold_column].dtype == pl.String:
        gold_values = [_json_or_none(text) for text in gold_values]
    scores = []
    for kind, text, gold in zip(
        frame[f"k{index}"].to_list(), frame[f"v{index}"].to_list(), gold_values, strict=True
    ):
        predicted = orjson.loads(text) if kind == ARRAY else None
        scores.append(set_f1(predicted, gold))
    return pl.Series(f"f1.{index}", scores, dtype=pl.Float64)


def nested_equal_column(frame: pl.DataFrame, gold_column: str, index: int) -> pl.Series:
    """Per row: does predicted field ``index`` equal a list (or object) gold value, as JSON?

    Compared by :func:`canonical_json_text`, row by row: a gold column of
    lists is rare and short, and polars has no JSON equality of its own.
    """
    import orjson
    import polars as pl

    equal = []
    for kind, text, gold in zip(
        frame[f"k{index}"].to_list(),
        frame[f"v{index}"].to_list(),
        frame[gold_column].to_list(),
        strict=True,
    ):
        same = kind in (ARRAY, OBJECT) and gold is not None and text is not None
        equal.append(same and canonical_json_text(orjson.loads(text)) == canonical_json_text(gold))
    return pl.Series(f"nested_equal.{index}", equal, dtype=pl.Boolean)


def _json_or_none(text: str | None) -> Any:
    import orjson

    if text is None:
        return None
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return None


def normalized_equal_column(frame: pl.DataFrame, gold_column: str, index: int) -> pl.Series:
    """Per row: are predicted string and gold equal after :func:`normalize_text`?

    Normalising (NFKC, lower-casing, a regex) is the costliest matcher step,
    and most predicted strings equal their gold value as written; so only
    rows with a string that differs from a non-null gold are normalised, and
    every other row is False (for them the equality alone decides).
    """
    import polars as pl

    from evalkit.contract.labels import normalize_text

    kind, value, gold = pl.col(f"k{index}"), pl.col(f"v{index}"), pl.col(gold_column)
    differs = frame.select(((kind == STRING) & (value != gold)).fill_null(False)).to_series()
    rows = differs.arg_true()
    equal = pl.repeat(False, frame.height, dtype=pl.Boolean, eager=True)
    if len(rows):
        compared = frame.filter(differs).select(normalize_text(value) == normalize_text(gold))
        equal = equal.scatter(rows, compared.to_series().fill_null(False))
    return equal.alias(f"normalized_equal.{index}")


def field_match(
    spec: FieldSpec,
    index: int,
    gold_column: str,
    dtype: Any,
    where: str,
    f1: pl.Series | None,
    normalized_equal: pl.Series | None = None,
    nested_equal: pl.Series | None = None,
    label: bool = False,
) -> pl.Expr:
    """Expression: did field ``index`` match its gold value, on each row?

    Evaluated over a frame with the gold values in ``gold_column`` (of type
    ``dtype``) and the parsed ``error``, ``k<i>``, ``v<i>`` columns; ``f1``
    holds the per-row set F1 of a ``set`` field (:func:`set_f1_column`),
    ``normalized_equal`` (optional) the normalised comparison of a
    ``normalized`` string field (:func:`normalized_equal_column`), and
    ``nested_equal`` the comparison with list or object gold
    (:func:`nested_equal_column`). A ``label`` field (``parse: label``)
    compares the label's text with the gold value's text, so integer and
    Boolean gold labels work. A row whose output is not format-valid never
    matches.
    """
    import polars as pl

    from evalkit.contract.labels import normalize_text

    gold = pl.col(gold_column)
    kind, value = pl.col(f"k{index}"), pl.col(f"v{index}")
    if label and dtype != pl.String and dtype != pl.Null:
        gold, dtype = gold.cast(pl.String), pl.String
        if spec.match == "normalized":
            normalized_equal = None  # computed for a text column only
    if spec.match == "set":
        assert f1 is not None, "set fields need their F1 column"
        rule = pl.lit(f1) >= (spec.min_f1 if spec.min_f1 is not None else 1.0)
    elif spec.match == "number":
        rule = _number(gold, dtype, kind, value, spec.tolerance or 0.0, where)
    elif spec.match == "normalized" and dtype == pl.String:
        # Equal strings need no normalising; the rest are compared normalised.
        if normalized_equal is not None:
            rule = (kind == STRING) & ((value == gold) | pl.lit(normalized_equal))
        else:
            rule = (kind == STRING) & (
                (value == gold) | (normalize_text(value) == normalize_text(gold))
            )
    else:
        rule = _exact(gold, dtype, kind, value, nested_equal)
    expects_null = kind.is_in([ABSENT, NULL])
    valid = pl.col("error").is_null()
    matched = valid & pl.when(gold.is_null()).then(expects_null).otherwise(rule)
    return matched.fill_null(False)


# The gold types each matcher compares (the rest make no sense: exit 2 at gold load).
_MATCHER_KINDS = {
    "number": ("integer", "float", "string", "null"),
    "set": ("list", "string", "null"),
}
_WHAT = {"number": "numbers", "set": "lists (or the JSON text of arrays)"}
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
        allowed = _MATCHER_KINDS.get(spec.match)
        if allowed is not None and kind not in allowed:
            raise InvalidContract(
                f"{place}: match: {spec.match} compares {_WHAT[spec.match]}, but gold column "
                f"{spec.gold!r} holds {kind} values; use match: exact, or fix the gold column"
            )
        if kind != "string" or spec.match not in _MATCHER_KINDS:
            continue
        values = frame[column]
        if spec.match == "number":
            bad = values.is_not_null() & values.cast(pl.Float64, strict=False).is_null()
            if bad.any():
                row_id, value = _first_bad(frame, column, bad)
                raise InvalidContract(
                    f"{place}: match: number compares numbers, but gold column {spec.gold!r} "
                    f"holds {value!r} (id {row_id}); fix the value, or use match: exact"
                )
        else:
            parsed = [_json_or_none(text) for text in values.to_list()]
            flags = [text is not None and not isinstance(item, list)
                     for text, item in zip(values.to_list(), parsed, strict=True)]  # fmt: skip
            if any(flags):
                row_id, value = _first_bad(frame, column, pl.Series(flags))
                raise InvalidContract(
                    f"{place}: match: set compares lists, but gold column {spec.gold!r} holds "
                    f"{value!r} (id {row_id}), not the JSON text of an array"
                )
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
    "normalized_equal_column",
    "predicted_class",
    "set_f1",
    "slice_mask",
]
