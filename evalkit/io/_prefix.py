"""Reading JSONL with the types of its first lines, and the same result as reading all.

polars infers a JSONL file's types either from a prefix (fast) or from every
line (``infer_schema_length=None``: a single-threaded pass that took 0.8 s of
a 1.0 s read of a 44 MB gold file). Whole-file inference is the semantics
evalkit promises: a column whose type shows only late must not fail half-way
or lose values. This module gets that result at the cost of a prefix read,
by checking where a prefix schema could differ, and says "no" (``None``)
whenever it could, so the caller falls back to whole-file inference:

* a value that does not fit the prefix type (a string in an integer column,
  a float in an integer column, a list where a number was) makes polars'
  read fail: fall back (and the fallback reports a real error in its words);
* a value that fits by conversion (a number in a string column) is converted
  exactly as whole-file inference converts it, since the column's type is
  string either way;
* what a prefix schema would lose silently is ruled out before trusting it:
  a column typed ``Null`` (no value seen yet) or holding a struct (a struct
  field first seen later would be dropped), at any depth; and, when every
  column is read, a key first seen after the prefix (it would be dropped):
  every line must consist only of keys of the prefix schema, checked by one
  anchored pattern per line (a line of flat values whose keys are written
  ``"key":``; anything else, such as a nested object, an escaped key or a
  space before a colon, falls back). The lines so checked are handed back, so
  that :mod:`evalkit.tables` can count each key in them (a key given twice)
  without reading the file again.

When only some ``columns`` are wanted, keys outside the prefix schema do not
matter and the key check is skipped; every known column is still read with
its type, so its late values are checked as whole-file inference checks them.
(A key first seen after the prefix is not read at all. Should its values mix
types that polars cannot unify, the whole-file read would fail and
:func:`evalkit.io.read_table` would read each column on its own, which gives
the wanted columns exactly as read here.)

CSV is not read this way: polars' CSV parser accepts values that its
inference types differently (``+1`` in an integer column, ``nan`` in a float
one), so a prefix schema could change values without an error.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import polars as pl
    from polars._typing import PolarsDataType

    Source = str | bytes

# Lines whose types set the schema; whole-file inference is the fallback.
PREFIX_LINES = 1_000

_WS = r"[ \t\r]*"
_STRING = r'"(?:[^"\\\x00-\x1f]|\\.)*"'
_SCALAR = r'[^"{}\[\],:\s]+'  # a number, true, false, null
_ATOM = f"(?:{_STRING}|{_SCALAR})"
_ARRAY = rf"\[{_WS}(?:{_ATOM}{_WS}(?:,{_WS}{_ATOM}{_WS})*)?\]"


def known_keys_pattern(names: Sequence[str]) -> str:
    """A pattern that matches a whole line only if it is blank or an object of flat
    values whose keys are all among ``names``, written as they are (no escapes,
    the colon right after the key's closing quote).

    The line is also valid JSON (polars read it), and the pattern's tokens are
    JSON's own (a string ends at its first unescaped quote), so a match means
    the line's keys are the ones the pattern names.
    """
    key = '"(?:' + "|".join(re.escape(name) for name in names) + ')"'
    member = f"{key}:{_WS}(?:{_ATOM}|{_ARRAY}){_WS}"
    return rf"^{_WS}(?:\{{{_WS}(?:{member}(?:,{_WS}{member})*)?\}}{_WS})?$"


def _settled(dtype: PolarsDataType) -> bool:
    """False for a type that later lines can change without an error: ``Null`` (no
    value seen yet) or a struct (new fields are dropped), at any depth."""
    import polars as pl

    if dtype == pl.Null or isinstance(dtype, pl.Struct):
        return False
    if isinstance(dtype, pl.List | pl.Array):
        return _settled(dtype.inner)
    return True


@dataclass(frozen=True)
class PrefixRead:
    """A JSONL table read with the types of its first lines."""

    frame: pl.DataFrame
    flat_lines: pl.Series | None
    """Every line, when each was checked to be a flat object of the frame's keys."""


def read_with_prefix_types(
    source: Source, columns: Sequence[str] | None = None
) -> PrefixRead | None:
    """The JSONL table at ``source`` (a path or the file's bytes) read with the types
    of its first lines, or None when that might differ from whole-file inference.

    With ``columns``, only those are returned (None also when one of them is not
    in the first lines).
    """
    import polars as pl

    try:
        schema = pl.scan_ndjson(source, infer_schema_length=PREFIX_LINES).collect_schema()
    except (pl.exceptions.PolarsError, OSError, ValueError):
        return None
    wanted = list(dict.fromkeys(columns)) if columns is not None else list(schema)
    if not schema or any(name not in schema for name in wanted):
        return None
    if not all(_settled(schema[name]) for name in wanted):
        return None
    lines = None
    try:
        if columns is None:
            lines = pl.read_lines(source)
            if not lines.select(
                pl.col("line").str.contains(known_keys_pattern(wanted)).all()
            ).item():
                return None
        frame = pl.read_ndjson(source, schema=schema)
    except (pl.exceptions.PolarsError, OSError, ValueError):
        return None
    if columns is not None:
        return PrefixRead(frame.select(wanted), None)
    return PrefixRead(frame, lines.to_series() if lines is not None else None)
