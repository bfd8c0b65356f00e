"""Parsing many outputs at once: each distinct text once, the common cases in bulk.

:meth:`OutputParser.parse` is the one semantics of a verdict; this module
only decides how much Python runs per output. Per-output Python is what
bounds scoring (orjson and jsonschema-rs take ~0.5 µs of an output; the
bookkeeping around them took ~2 µs), so a batch is handled as:

* repeated texts are parsed once (a model answers many items identically);
* polars finds, for every text at once, the piece that
  :meth:`OutputParser.parse` would try (below); a piece that orjson parses to
  an object with as many keys as the piece has colons (so no key repeats and
  no nested object has keys) gets its verdict from one jsonschema-rs call,
  exactly as :meth:`OutputParser.parse` would give it;
* every other text - no such piece, a piece that does not parse, keys that
  may repeat - goes through :meth:`OutputParser.parse` itself;
* field values become columns per field, not per output: a field whose
  values are all strings (or null or absent) or all numbers is converted in
  bulk (numbers by one ``orjson.dumps`` of the column, so each number's text
  is orjson's own), other fields value by value (:func:`value_cell`).

The pieces, in the order :meth:`OutputParser.parse` tries them (the text is
trimmed as Python's ``str.strip`` does; ``lenient`` only for the last two):

* the whole text, when it starts with ``{`` and ends with ``}``;
* when it starts with no character that may begin JSON (so the whole text is
  not tried) and holds a fence: the first fenced block, trimmed (found with
  the parser's own pattern, whose syntax means the same to Rust's ``regex`` as
  to Python's ``re``; both prefer matches as a backtracking engine does);
* when it starts that way, holds no fence, and its first ``{`` is followed by
  ``"`` (so that ``{`` is the first key-like one): from that ``{`` to the last
  ``}``. If this parses, it is the first complete value from that ``{``:
  orjson stops the longer text exactly there and the parser retries what
  precedes, which is this piece plus JSON whitespace.

``tests/test_contract_batch.py`` checks the columns against
:meth:`OutputParser.parse_row` (output by output) on hostile and edge-case
outputs.
"""

from __future__ import annotations

from itertools import compress
from typing import TYPE_CHECKING, Any, Protocol

from evalkit.contract.parsed import (
    ABSENT,
    FENCE,
    JSON_START,
    NULL,
    NUMBER,
    STRING,
    parsed_schema,
    value_cell,
)

if TYPE_CHECKING:
    import polars as pl


class _Rules(Protocol):
    @property
    def extract(self) -> str: ...

    @property
    def fields(self) -> tuple[str, ...]: ...


class OutputParser(Protocol):
    """What parsing in bulk asks of :class:`evalkit.contract.parse.OutputParser`
    (which uses this module, so this module does not import it)."""

    @property
    def spec(self) -> _Rules: ...

    @property
    def validator(self) -> Any: ...

    def parse(self, text: str | None) -> tuple[str | None, str | None, Any]: ...

    def schema_error(self, value: Any) -> tuple[str, str]: ...


# Every character for which Python's str.isspace() is true (what str.strip()
# removes); polars' own whitespace differs (U+001C..U+001F). Pinned by a test.
PYTHON_WHITESPACE = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005"
    "\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
# The parser's fence pattern is ``OPENING (.*?)(?:```|\Z)``: the block's body
# runs from the end of the first opening to the next ``` (or the end). polars
# finds both ends with two replacements, which need no capture group (with one,
# its regex engine is ~4x slower). A test pins the pattern's shape.
FENCE_OPENING, FENCE_REST = FENCE.pattern.split("(.*?)")
UP_TO_BODY = "(?s)^.*?" + FENCE_OPENING
FROM_CLOSING = "(?s)```.*"


class _Absent:
    """The value of a key that an object does not have (distinct from JSON null)."""


_ABSENT = _Absent()
_STRINGS = frozenset({str, type(None), _Absent})
_NUMBERS = frozenset({int, float, type(None), _Absent})


def _only(values: pl.Series, keep: pl.Series) -> pl.Series:
    """``values`` where ``keep`` is true, else null."""
    return values.clone().set(~keep, None)


def _pieces(parser: OutputParser, outputs: pl.Series) -> pl.Series:
    """Per output, the piece :meth:`OutputParser.parse` would parse (see the module
    docstring), or null when it is not one of the bulk cases.

    The regular expressions run only on the outputs they may apply to (a
    capture group makes polars' regex engine slow).
    """
    import polars as pl

    text = outputs.str.strip_chars(PYTHON_WHITESPACE)
    whole = (text.str.starts_with("{") & text.str.ends_with("}")).fill_null(False)
    pieces = _only(text, whole)
    if parser.spec.extract == "strict" or not len(text):
        return pieces
    first = text.str.slice(0, 1)
    prose = ((first != "") & ~first.is_in(list(JSON_START) + list(PYTHON_WHITESPACE))).fill_null(
        False
    )
    fenced = text.str.contains("```", literal=True).fill_null(False)
    rows = pl.Series(range(len(text)), dtype=pl.UInt32)
    in_fence = prose & fenced
    if in_fence.any():
        bodies = (
            text.filter(in_fence)
            .str.replace(UP_TO_BODY, "")
            .str.replace(FROM_CLOSING, "")
            .str.strip_chars(PYTHON_WHITESPACE)
        )
        bodies = _only(bodies, (bodies != "").fill_null(False))
        pieces = pieces.scatter(rows.filter(in_fence), bodies)
    in_prose = prose & ~fenced
    if in_prose.any():
        # From the first "{" to the last "}", when that "{" opens a quoted key.
        braced = text.filter(in_prose).str.replace(r"^[^{]*", "").str.replace(r"[^}]*$", "")
        keep = braced.str.starts_with('{"') & braced.str.ends_with("}")
        braced = _only(braced, keep.fill_null(False))
        pieces = pieces.scatter(rows.filter(in_prose), braced)
    return pieces


def _bulk_verdicts(pieces: list[str]) -> tuple[list[bool], list[Any]]:
    """Per piece: is it decided here (only the schema is left to ask), and its value."""
    import orjson

    loads, decode_error = orjson.loads, orjson.JSONDecodeError

    def load(text: str) -> Any:
        try:
            value = loads(text)
        except decode_error:
            return None
        # As many colons as keys: no key repeats, nothing nested has keys.
        return value if type(value) is dict and text.count(":") == len(value) else None

    values = [load(piece) for piece in pieces]
    return [value is not None for value in values], values


def _field_column(values: list[dict[str, Any]], name: str) -> tuple[pl.Series, pl.Series]:
    """``(k, v)`` columns of one field over format-valid objects (see :func:`value_cell`)."""
    import orjson
    import polars as pl

    column = [value.get(name, _ABSENT) for value in values]
    types = set(map(type, column))
    absent: pl.Series | None = None
    if _Absent in types:
        absent = pl.Series([item is _ABSENT for item in column], dtype=pl.Boolean)
        column = [None if item is _ABSENT else item for item in column]
    if types <= _STRINGS:
        text = pl.Series(column, dtype=pl.String)
        kind = text.is_not_null().cast(pl.UInt8) * (STRING - NULL) + NULL
        text = text.fill_null("null")
    elif types <= _NUMBERS:
        # orjson writes each number as it would alone, and a number's JSON
        # text never holds a comma: the column's JSON array splits exactly.
        pieces = orjson.dumps(column)[1:-1].split(b",") if column else []
        text = pl.Series(pieces, dtype=pl.Binary).cast(pl.String)
        kind = (text != "null").cast(pl.UInt8) * (NUMBER - NULL) + NULL
    else:
        cells = [value_cell(item) for item in column]
        kind = pl.Series([cell[0] for cell in cells], dtype=pl.UInt8)
        text = pl.Series([cell[1] for cell in cells], dtype=pl.String)
    kind = kind.cast(pl.UInt8)
    if absent is not None:
        kind, text = pl.select(
            pl.when(pl.lit(absent))
            .then(pl.lit(ABSENT, pl.UInt8))
            .otherwise(pl.lit(kind))
            .alias("kind"),
            pl.when(pl.lit(absent)).then(None).otherwise(pl.lit(text)).alias("text"),
        )
    return kind, text


def _unique(outputs: pl.Series) -> tuple[pl.Series, pl.Series | None]:
    """The distinct outputs in order of first occurrence, and each output's index
    among them (None when every output is distinct)."""
    import polars as pl

    first = outputs.is_first_distinct()
    if first.all():
        return outputs, None
    distinct = outputs.filter(first)
    keyed = pl.DataFrame({"output": distinct}).with_row_index("index")
    index = (
        pl.DataFrame({"output": outputs})
        .join(keyed, on="output", how="left", nulls_equal=True, maintain_order="left")
        .get_column("index")
    )
    return distinct, index


def _frame(
    fields: tuple[str, ...],
    objects: list[dict[str, Any]],
    rest: list[tuple[str | None, str | None]],
) -> pl.DataFrame:
    """Parsed columns: a row per format-valid object, then a row per ``(error, detail)``."""
    import polars as pl

    errors = [None] * len(objects) + [error for error, _ in rest]
    details = [None] * len(objects) + [detail for _, detail in rest]
    columns = [pl.Series(errors, dtype=pl.String), pl.Series(details, dtype=pl.String)]
    for name in fields:
        kind, text = _field_column(objects, name)
        columns.append(kind.extend_constant(ABSENT, len(rest)))
        columns.append(text.extend_constant(None, len(rest)))
    names = parsed_schema(len(fields))
    return pl.DataFrame([column.rename(name) for column, name in zip(columns, names, strict=True)])


def parse_outputs(parser: OutputParser, outputs: pl.Series) -> pl.DataFrame:
    """Parsed columns (:func:`parsed_schema`) of ``outputs``, one row per output, in order."""
    import polars as pl

    frame, rows = parse_distinct(parser, outputs)
    return frame.select(pl.all().gather(rows))


def parse_distinct(parser: OutputParser, outputs: pl.Series) -> tuple[pl.DataFrame, pl.Series]:
    """Parsed columns with one row per distinct output, and each output's row in them.

    Repeated outputs share a row, so the frame is what a worker sends back
    (about half the bytes of one row per output on typical predictions) and
    the reader gathers rows where it needs them.
    """
    import polars as pl

    distinct, index = _unique(outputs.rename("output"))
    pieces = _pieces(parser, distinct)
    decided, values = _bulk_verdicts(pieces.drop_nulls().to_list())
    is_valid = parser.validator.is_valid
    valid = [found and is_valid(value) for found, value in zip(decided, values, strict=True)]
    rejected = [found and not ok for found, ok in zip(decided, valid, strict=True)]
    numbers = pl.Series(range(len(distinct)), dtype=pl.UInt32)
    bulk_rows = numbers.filter(pieces.is_not_null())
    valid_rows = bulk_rows.filter(pl.Series(valid, dtype=pl.Boolean))
    rejected_rows = bulk_rows.filter(pl.Series(rejected, dtype=pl.Boolean))
    decided_rows = bulk_rows.filter(pl.Series(decided, dtype=pl.Boolean))
    in_bulk = pl.repeat(False, len(distinct), dtype=pl.Boolean, eager=True)
    other_rows = numbers.filter(~in_bulk.scatter(decided_rows, True))
    verdicts = [parser.parse(text) for text in distinct.gather(other_rows).to_list()]
    # Rows of the frame built here: format-valid objects (bulk, then parser),
    # then the rest (all fields absent): rejected by the schema in bulk, then
    # the parser's other verdicts.
    with_fields = [error is None and type(value) is dict for error, _, value in verdicts]
    objects = list(compress(values, valid))
    objects += [value for _, _, value in compress(verdicts, with_fields)]
    rest: list[tuple[str | None, str | None]] = [
        parser.schema_error(value) for value in compress(values, rejected)
    ]
    rest += [
        (error, detail)
        for (error, detail, _), fields in zip(verdicts, with_fields, strict=True)
        if not fields
    ]
    frame = _frame(parser.spec.fields, objects, rest)
    fields_mask = pl.Series(with_fields, dtype=pl.Boolean)
    placed = pl.concat(
        [valid_rows, other_rows.filter(fields_mask), rejected_rows, other_rows.filter(~fields_mask)]
    )
    position = pl.repeat(0, len(distinct), dtype=pl.UInt32, eager=True).scatter(placed, numbers)
    return frame, position if index is None else position.gather(index)


__all__ = ["FENCE_OPENING", "FENCE_REST", "PYTHON_WHITESPACE", "parse_distinct", "parse_outputs"]
