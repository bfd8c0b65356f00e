"""The field matchers: one registry, one object per ``match:`` rule (docs/contracts.md).

A matcher says everything about its rule in one place: its name and one-line
description, the gold column types it compares (checked when the gold is
read), the JSON types a predicted value needs (checked against the output
schema when the contract loads), the option it owns (``tolerance``,
``min_f1``) and that option's default, its polars rule over every example at
once, and its comparison of one tool-call argument. The contract model, the
gold checks, the scorer and the tool-call verdicts all read :data:`MATCHERS`;
none names a matcher. Whatever the matcher, a null gold value expects null or
an absent key: the callers decide that before asking the rule.

A new matcher is one subclass of :class:`Matcher` decorated with
:func:`register_matcher`; see docs/development.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeVar

from evalkit.contract.match_values import (
    FLOAT_SLACK,
    call_set_f1,
    is_number,
    json_bytes,
    json_or_none,
    nested_equal_column,
    normalize_text,
    normalized_equal_column,
    set_f1_column,
)
from evalkit.contract.parsed import BOOLEAN, NUMBER, STRING
from evalkit.errors import InvalidContract

if TYPE_CHECKING:
    import polars as pl


class MatcherOptions(Protocol):
    """What a matcher reads of its field (a contract's ``FieldSpec``)."""

    match: str
    tolerance: float | None
    min_f1: float | None


@dataclass(frozen=True)
class FieldColumns:
    """One field of the examples frame, as a matcher's columnar rule sees it."""

    spec: MatcherOptions
    gold: pl.Expr
    """The gold value (text for a ``parse: label`` field whose gold column is not)."""
    dtype: Any
    """The polars type of ``gold``."""
    kind: pl.Expr
    """The predicted value's kind (``k<i>``; :mod:`evalkit.contract.parsed`)."""
    value: pl.Expr
    """The predicted value's text (``v<i>``)."""
    where: str
    """Where the field is in the contract (``fields.<name>``), for errors."""
    columns: Mapping[str, pl.Series] = field(default_factory=dict)
    """What :meth:`Matcher.columns` computed for this field (empty for a label cast to text)."""


class Matcher:
    """One ``match:`` rule. Subclass it, set the class attributes, register it."""

    name: ClassVar[str]
    """The name a contract writes (``match: <name>``)."""
    description: ClassVar[str]
    """One line: what matches (docs, errors)."""
    gold_kinds: ClassVar[tuple[str, ...] | None] = None
    """The gold column types it compares (:func:`~evalkit.contract.match.gold_kind`);
    None: every type. Another type is exit 2 when the gold is read."""
    compares: ClassVar[str] = "values"
    """What it compares, as errors say it (``match: number compares numbers``)."""
    gold_value: ClassVar[str] = "a value"
    """One gold value it compares, as errors say it (``compares a number``)."""
    output_types: ClassVar[frozenset[str] | None] = None
    """The JSON types a predicted value needs to match a non-null gold value; None: any."""
    needs: ClassVar[str] = ""
    """Such a value, as errors say it (``needs a number``)."""
    option: ClassVar[tuple[str, float] | None] = None
    """The ``FieldSpec`` option it owns and its default (only it may set the option)."""
    compares_names: ClassVar[bool] = True
    """Whether it can compare a tool call's function name (text)."""
    reports_f1: ClassVar[bool] = False
    """Whether it scores each row (an ``f1.<field>`` column and a mean F1)."""
    normalizes: ClassVar[bool] = False
    """Whether the tool-call comparison wants its strings normalised (``normal``)."""
    keyed: ClassVar[bool] = False
    """Whether two values match exactly when their canonical JSON texts (normalised when
    ``normalizes``) are equal: tool-call content is then decided by keys in bulk
    (:mod:`evalkit.contract.tool_content_keys`)."""

    def columns(
        self, frame: pl.DataFrame, gold_column: str, index: int, dtype: Any
    ) -> dict[str, pl.Series]:
        """Per-row comparisons the rule needs that polars cannot express (F1, JSON equality)."""
        return {}

    def rule(self, field: FieldColumns) -> pl.Expr:
        """Expression: does the predicted value match a non-null gold value, on each row?"""
        raise NotImplementedError

    def bad_gold_text(self, values: pl.Series) -> pl.Series | None:
        """For a text gold column: the rows it cannot compare (None: every text is fine)."""
        return None

    def bad_gold_text_message(self, place: str, gold: str, value: Any, row_id: str) -> str:
        """The error for the first row :meth:`bad_gold_text` found."""
        return (
            f"{place}: match: {self.name} compares {self.compares}, but gold column {gold!r} "
            f"holds {value!r} (id {row_id}); fix the value, or use match: exact"
        )

    def gold_value_fits(self, value: Any) -> bool:
        """Whether a (non-null) gold tool-call argument is a value it can compare."""
        return True

    def value_match(
        self, spec: MatcherOptions, predicted: Any, gold: Any, normal: Mapping[str, str]
    ) -> bool:
        """One present predicted value against a non-null gold value (tool-call arguments);
        ``normal`` maps strings to their normalised form when :attr:`normalizes`."""
        return json_bytes(predicted) == json_bytes(gold)

    def value_score(self, predicted: Any, gold: Any) -> float | None:
        """With :attr:`reports_f1`: one tool-call argument's score (None: not comparable)."""
        return None


MATCHERS: dict[str, Matcher] = {}
"""Every matcher by name, in registration order (the order docs and the schema list)."""

_M = TypeVar("_M", bound=type[Matcher])


def register_matcher(cls: _M) -> _M:
    """Class decorator: register one instance of a :class:`Matcher` under its ``name``."""
    name = cls.name
    if name in MATCHERS:
        raise ValueError(f"a matcher named {name!r} is already registered")
    MATCHERS[name] = cls()
    return cls


def matcher(name: str) -> Matcher:
    """The registered matcher of a (validated) field's ``match``."""
    return MATCHERS[name]


def matcher_names() -> tuple[str, ...]:
    """The names a contract may write, in registration order."""
    return tuple(MATCHERS)


def _numeric(dtype: Any) -> bool:
    return bool(dtype.is_numeric())


def _exact_rule(field: FieldColumns) -> pl.Expr:
    import polars as pl

    gold, dtype, kind, value = field.gold, field.dtype, field.kind, field.value
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
    nested_equal = field.columns.get("nested_equal")
    assert nested_equal is not None, "list and object gold need their comparison column"
    return pl.lit(nested_equal)


def _nested_columns(
    frame: pl.DataFrame, gold_column: str, index: int, dtype: Any
) -> dict[str, pl.Series]:
    import polars as pl

    if isinstance(dtype, pl.List | pl.Struct):
        return {"nested_equal": nested_equal_column(frame, gold_column, index)}
    return {}


@register_matcher
class Exact(Matcher):
    """Same JSON type and value (``1 == 1.0``; a string never equals a number)."""

    name = "exact"
    keyed = True
    description = "same JSON type and value (1 == 1.0; a string never equals a number)"

    def columns(
        self, frame: pl.DataFrame, gold_column: str, index: int, dtype: Any
    ) -> dict[str, pl.Series]:
        return _nested_columns(frame, gold_column, index, dtype)

    def rule(self, field: FieldColumns) -> pl.Expr:
        return _exact_rule(field)


@register_matcher
class Normalized(Matcher):
    """Strings equal after NFKC, lower-casing and whitespace collapsing; else as ``exact``."""

    name = "normalized"
    keyed = True
    description = (
        "strings equal after Unicode NFKC, lower-casing and whitespace collapsing; "
        "other types as exact"
    )
    normalizes = True

    def columns(
        self, frame: pl.DataFrame, gold_column: str, index: int, dtype: Any
    ) -> dict[str, pl.Series]:
        import polars as pl

        if dtype == pl.String:
            return {"normalized_equal": normalized_equal_column(frame, gold_column, index)}
        return _nested_columns(frame, gold_column, index, dtype)

    def rule(self, field: FieldColumns) -> pl.Expr:
        import polars as pl

        if field.dtype != pl.String:
            return _exact_rule(field)
        kind, value, gold = field.kind, field.value, field.gold
        # Equal strings need no normalising; the rest are compared normalised.
        normalized_equal = field.columns.get("normalized_equal")
        if normalized_equal is not None:
            return (kind == STRING) & ((value == gold) | pl.lit(normalized_equal))
        return (kind == STRING) & (
            (value == gold) | (normalize_text(value) == normalize_text(gold))
        )

    def value_match(
        self, spec: MatcherOptions, predicted: Any, gold: Any, normal: Mapping[str, str]
    ) -> bool:
        if type(predicted) is str and type(gold) is str:
            return predicted == gold or normal[predicted] == normal[gold]
        return super().value_match(spec, predicted, gold, normal)


@register_matcher
class Number(Matcher):
    """A JSON number within ``tolerance`` of the gold number, inclusive."""

    name = "number"
    description = (
        "a JSON number within tolerance of the gold number, inclusive "
        "(with 1e-9 of slack for binary floating point)"
    )
    gold_kinds = ("integer", "float", "string", "null")
    compares = "numbers"
    gold_value = "a number"
    output_types = frozenset({"integer", "number"})
    needs = "a number"
    option = ("tolerance", 0.0)
    compares_names = False

    def rule(self, field: FieldColumns) -> pl.Expr:
        import polars as pl

        dtype = field.dtype
        if dtype == pl.Null:
            return pl.lit(False)
        if not (_numeric(dtype) or dtype == pl.String):
            raise InvalidContract(
                f"{field.where}: match: number needs a numeric gold column, found {dtype}; "
                "use match: exact or normalized, or fix the gold column's type"
            )
        # A text column holds decimal numbers (checked by check_gold_types).
        expected = field.gold.cast(pl.Float64, strict=False)
        difference = (field.value.cast(pl.Float64, strict=False) - expected).abs()
        tolerance = field.spec.tolerance or 0.0
        return (field.kind == NUMBER) & (difference <= tolerance + FLOAT_SLACK)

    def bad_gold_text(self, values: pl.Series) -> pl.Series | None:
        import polars as pl

        return values.is_not_null() & values.cast(pl.Float64, strict=False).is_null()

    def gold_value_fits(self, value: Any) -> bool:
        return is_number(value)

    def value_match(
        self, spec: MatcherOptions, predicted: Any, gold: Any, normal: Mapping[str, str]
    ) -> bool:
        tolerance = spec.tolerance or 0.0
        return is_number(predicted) and abs(predicted - gold) <= tolerance + FLOAT_SLACK


@register_matcher
class Set(Matcher):
    """Two JSON arrays as sets; a match when their F1 reaches ``min_f1``."""

    name = "set"
    description = (
        "two JSON arrays as sets of JSON values; F1 = 2|P∩G|/(|P|+|G|) "
        "(1.0 when both are empty); a match when F1 reaches min_f1"
    )
    gold_kinds = ("list", "string", "null")
    compares = "lists (or the JSON text of arrays)"
    gold_value = "a list"
    output_types = frozenset({"array"})
    needs = "an array"
    option = ("min_f1", 1.0)
    compares_names = False
    reports_f1 = True

    def columns(
        self, frame: pl.DataFrame, gold_column: str, index: int, dtype: Any
    ) -> dict[str, pl.Series]:
        return {"f1": set_f1_column(frame, gold_column, index)}

    def rule(self, field: FieldColumns) -> pl.Expr:
        import polars as pl

        f1 = field.columns.get("f1")
        assert f1 is not None, "set fields need their F1 column"
        min_f1 = field.spec.min_f1
        return pl.lit(f1) >= (min_f1 if min_f1 is not None else 1.0)

    def bad_gold_text(self, values: pl.Series) -> pl.Series | None:
        import polars as pl

        texts = values.to_list()
        parsed = [json_or_none(text) for text in texts]
        flags = [text is not None and not isinstance(item, list)
                 for text, item in zip(texts, parsed, strict=True)]  # fmt: skip
        return pl.Series(flags, dtype=pl.Boolean)

    def bad_gold_text_message(self, place: str, gold: str, value: Any, row_id: str) -> str:
        return (
            f"{place}: match: set compares lists, but gold column {gold!r} holds "
            f"{value!r} (id {row_id}), not the JSON text of an array"
        )

    def gold_value_fits(self, value: Any) -> bool:
        return type(value) is list

    def value_match(
        self, spec: MatcherOptions, predicted: Any, gold: Any, normal: Mapping[str, str]
    ) -> bool:
        return (call_set_f1(predicted, gold) or 0.0) >= (spec.min_f1 or 1.0)

    def value_score(self, predicted: Any, gold: Any) -> float | None:
        return call_set_f1(predicted, gold)


__all__ = [
    "MATCHERS",
    "FieldColumns",
    "Matcher",
    "MatcherOptions",
    "matcher",
    "matcher_names",
    "register_matcher",
]
