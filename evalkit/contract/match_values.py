"""JSON values compared as the matchers compare them, one at a time and by column.

The built-in matchers (:mod:`evalkit.contract.matchers`) share these: the
canonical text of a JSON value (``1 == 1.0``, key order ignored), the F1 of
two lists taken as sets, and the per-row comparisons that polars cannot do
by itself (lists and objects, normalised strings, set F1).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson

from evalkit.contract.parsed import ARRAY, OBJECT, STRING

if TYPE_CHECKING:
    import polars as pl

FLOAT_SLACK = 1e-9
_SORT = orjson.OPT_SORT_KEYS


def json_bytes(value: Any) -> bytes:
    """Sorted-key JSON bytes of a value as written (a tool call's argument)."""
    return orjson.dumps(value, option=_SORT)


def is_number(value: Any) -> bool:
    """Whether a decoded JSON value is a number (a Boolean is not)."""
    return type(value) in (int, float)


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
    if value is None:
        return None
    return orjson.dumps(_same_numbers(value), option=_SORT).decode()


def set_f1(predicted: Any, gold: Any) -> float | None:
    """F1 of two collections compared as sets of JSON values (None when predicted is not a list)."""
    if not isinstance(predicted, list) or not isinstance(gold, list):
        return None
    left = {canonical_json_text(item) for item in predicted}
    right = {canonical_json_text(item) for item in gold}
    if not left and not right:
        return 1.0
    return 2 * len(left & right) / (len(left) + len(right))


def call_set_f1(predicted: Any, gold: Any) -> float | None:
    """F1 of two tool-call argument lists as sets of JSON values (None when either is no list)."""
    if type(predicted) is not list or type(gold) is not list:
        return None
    left = {json_bytes(item) for item in predicted}
    right = {json_bytes(item) for item in gold}
    if not left and not right:
        return 1.0
    return 2 * len(left & right) / (len(left) + len(right))


def json_or_none(text: str | None) -> Any:
    """The JSON value of a text, or None when it is not JSON."""
    if text is None:
        return None
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return None


def set_f1_column(frame: pl.DataFrame, gold_column: str, index: int) -> pl.Series:
    """Per-row set F1 of field ``index`` (null where the prediction or gold is not a list)."""
    import polars as pl

    gold_values = frame[gold_column].to_list()
    if frame[gold_column].dtype == pl.String:
        gold_values = [json_or_none(text) for text in gold_values]
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


def normalize_text(expression: pl.Expr) -> pl.Expr:
    """The ``normalized`` matcher's form of a string: NFKC, lower case, whitespace collapsed.

    One polars expression applied to gold and prediction alike (and to
    lenient ``parse: label`` outputs), so both sides go through the same code.
    """
    return (
        expression.str.normalize("NFKC")
        .str.to_lowercase()
        .str.replace_all(r"\s+", " ")
        .str.strip_chars()
    )


def normalized_equal_column(frame: pl.DataFrame, gold_column: str, index: int) -> pl.Series:
    """Per row: are predicted string and gold equal after :func:`normalize_text`?

    Normalising (NFKC, lower-casing, a regex) is the costliest matcher step,
    and most predicted strings equal their gold value as written; so only
    rows with a string that differs from a non-null gold are normalised, and
    every other row is False (for them the equality alone decides).
    """
    import polars as pl

    kind, value, gold = pl.col(f"k{index}"), pl.col(f"v{index}"), pl.col(gold_column)
    differs = frame.select(((kind == STRING) & (value != gold)).fill_null(False)).to_series()
    rows = differs.arg_true()
    equal = pl.repeat(False, frame.height, dtype=pl.Boolean, eager=True)
    if len(rows):
        compared = frame.filter(differs).select(normalize_text(value) == normalize_text(gold))
        equal = equal.scatter(rows, compared.to_series().fill_null(False))
    return equal.alias(f"normalized_equal.{index}")
