"""From raw model text to a structured answer, or to one error category.

Every output ends in exactly one of: format-valid (a parsed value that the
schema accepts), ``missing``, ``empty``, ``no_json``, ``invalid_json``,
``schema:<keyword>`` or (``parse: label``) ``unknown_label``. The rules, in
order (docs/contracts.md has the full semantics):

* no output -> ``missing``; only whitespace -> ``empty``;
* the trimmed text parses as JSON (RFC 8259, orjson: no ``NaN``/``Infinity``,
  at most 1,024 levels deep) -> that value;
* ``strict`` stops here: text that starts like JSON is ``invalid_json``,
  anything else ``no_json``;
* ``lenient`` then tries the first ``` fenced block, then the first complete
  JSON object that starts at a key-like ``{`` (at most 16 such starts, so a
  hostile 10 MB output costs linear time);
* a parsed value with a key given twice is ``invalid_json`` (which value a
  consumer keeps is undefined), else the schema decides (jsonschema-rs).

The same :meth:`OutputParser.parse` runs on every code path (one process or a
pool of workers), so a verdict never depends on how the work was split.
:func:`parse_frame` handles many outputs at once (:mod:`evalkit.contract.batch`):
it decides the common cases in bulk exactly as :meth:`OutputParser.parse`
would, and sends every other output through it.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evalkit.contract.batch import parse_outputs
from evalkit.contract.parsed import ABSENT as ABSENT
from evalkit.contract.parsed import ARRAY as ARRAY
from evalkit.contract.parsed import BOOLEAN as BOOLEAN
from evalkit.contract.parsed import FENCE as _FENCE
from evalkit.contract.parsed import JSON_START as _JSON_START
from evalkit.contract.parsed import KINDS as KINDS
from evalkit.contract.parsed import NOTHING as _NOTHING
from evalkit.contract.parsed import NULL as NULL
from evalkit.contract.parsed import NUMBER as NUMBER
from evalkit.contract.parsed import OBJECT as OBJECT
from evalkit.contract.parsed import STRING as STRING
from evalkit.contract.parsed import parsed_schema as parsed_schema
from evalkit.contract.parsed import value_cell
from evalkit.contract.validation import build_explainer, compile_fast, explain

if TYPE_CHECKING:
    import polars as pl

    from evalkit.contract.model import Contract

MISSING = "missing"
EMPTY = "empty"
NO_JSON = "no_json"
INVALID_JSON = "invalid_json"
UNKNOWN_LABEL = "unknown_label"
MAX_CANDIDATES = 16

DETAIL_LIMIT = 200

# A "{" that opens something key-like: a quoted key, an empty object, or a bare word and ":".
_OBJECT_START = re.compile(r"\{\s*(?:[\"'}]|[A-Za-z_][\w-]*\s*:)")


@dataclass(frozen=True)
class ParserSpec:
    """Everything a worker process needs to parse outputs the way the contract says."""

    extract: str
    schema: dict[str, Any]
    fields: tuple[str, ...]

    @classmethod
    def from_contract(cls, contract: Contract) -> ParserSpec:
        """The parsing rules of a (loaded, schema-complete) ``parse: json`` contract."""
        schema = contract.output.json_schema
        assert schema is not None, "load_contract inlines the schema"
        return cls(contract.output.extract, schema, tuple(contract.fields))

    def build(self) -> OutputParser:
        """The parser (one per process)."""
        return OutputParser(self)

    @property
    def parse_in_caller(self) -> bool:
        """The calling process parses chunks too while it waits for a worker's."""
        return True


class _DuplicateKey(Exception):
    pass


def _reject_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            raise _DuplicateKey(key)
        seen.add(key)
    return dict(pairs)


def duplicate_key(candidate: str, value: Any) -> str | None:
    """The first key given twice in an object of ``candidate``, or None.

    Cheap test first: every key is followed by a colon, so when the text has
    no more colons than the top-level object has keys, no key can repeat and
    there is no nested object. Only otherwise is the text decoded again with
    a hook that sees every key (Python's json, exact and bounded by the
    1,024 levels orjson already enforced).
    """
    colons = candidate.count(":")
    if colons == 0 or (type(value) is dict and colons == len(value)):
        return None
    import json

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 4000))
    try:
        json.loads(candidate, object_pairs_hook=_reject_duplicates)
    except _DuplicateKey as found:
        return str(found.args[0])
    finally:
        sys.setrecursionlimit(limit)
    return None


def _short(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= DETAIL_LIMIT else flat[: DETAIL_LIMIT - 1] + "…"


def _decode_error(error: Exception) -> str:
    message = getattr(error, "msg", str(error))
    position = getattr(error, "pos", None)
    document = getattr(error, "doc", None)
    if "depth limit" in message:
        return "nested deeper than 1,024 levels"
    if document is not None and position is not None and position >= len(document):
        return "truncated: the output ends inside the JSON value"
    return f"{message} at char {position}" if position is not None else str(message)


class OutputParser:
    """Parses raw outputs of one contract; build once per process, call many times."""

    def __init__(self, spec: ParserSpec) -> None:
        import orjson

        self.spec = spec
        self._loads = orjson.loads
        self._decode_error = orjson.JSONDecodeError
        self.validator = compile_fast(spec.schema)
        self._is_valid = self.validator.is_valid
        self._explainer: Any = None
        self._strict = spec.extract == "strict"
        self._absent = (ABSENT, None) * len(spec.fields)

    def parse(self, text: str | None) -> tuple[str | None, str | None, Any]:
        """``(error, detail, value)``: error is None exactly when the output is format-valid."""
        if text is None:
            return MISSING, "no output for this id", None
        stripped = text.strip()
        if not stripped:
            return EMPTY, "the output is blank", None
        value: Any = _NOTHING
        whole_error: Exception | None = None
        if stripped[0] in _JSON_START:  # otherwise the whole text cannot be JSON: skip the try
            try:
                value = self._loads(stripped)
            except self._decode_error as error:
                # Without its traceback: the exception outlives this block, and its
                # traceback's frames (this call's, and every caller's up to the
                # loop over a chunk) would form a cycle that keeps a whole chunk's
                # values alive until the garbage collector runs (GBs at 10M rows).
                whole_error = error.with_traceback(None)
        if value is _NOTHING:
            found = self._extract(stripped, whole_error)
            if len(found) == 3:
                return found
            candidate, value = found
        else:
            candidate = stripped
        repeated = duplicate_key(candidate, value)
        if repeated is not None:
            return INVALID_JSON, _short(f"key {repeated!r} is given twice"), None
        if not self._is_valid(value):
            return (*self.schema_error(value), None)
        return None, None, value

    def schema_error(self, value: Any) -> tuple[str, str]:
        """``(schema:<keyword>, message)`` of a parsed value that the schema rejects."""
        keyword, message = explain(self._python_validator, self.validator, value)
        return f"schema:{keyword}", message

    def _python_validator(self) -> Any:
        if self._explainer is None:
            self._explainer = build_explainer(self.spec.schema)
        return self._explainer

    def _extract(self, text: str, whole_error: Exception | None) -> tuple[Any, ...]:
        """Find the JSON in ``text`` (whole text failed): ``(candidate, value)`` or an error."""
        if not text.isascii():
            try:
                text.encode("utf-8")
            except UnicodeEncodeError:  # a lone surrogate: like invalid UTF-8 bytes in a file
                return INVALID_JSON, "the output is not valid Unicode (a lone surrogate)", None
        json_like = text[0] in "{["
        first_error = _decode_error(whole_error) if json_like and whole_error else None
        if self._strict:
            if json_like:
                return INVALID_JSON, _short(f"not valid JSON: {first_error}"), None
            hint = "; lenient extraction would look inside" if "{" in text else ""
            return NO_JSON, _short(f"the output is not JSON (strict extraction){hint}"), None
        fence = _FENCE.search(text) if "```" in text else None
        if fence is not None:
            body = fence.group(1).strip()
            if body:
                try:
                    return body, self._loads(body)
                except self._decode_error as error:
                    json_like = True
                    first_error = first_error or f"in the fenced block: {_decode_error(error)}"
        for attempt, start in enumerate(_OBJECT_START.finditer(text)):
            if attempt == MAX_CANDIDATES:
                first_error = first_error or "no complete JSON object in the first 16 candidates"
                break
            json_like = True
            found, truncated = self._object_at(text, start.start())
            if isinstance(found, tuple):
                return found
            first_error = first_error or found
            if truncated:  # a later "{" would sit inside this unfinished object
                break
        if not json_like:
            return NO_JSON, "no JSON object or fenced block in the output", None
        return INVALID_JSON, _short(f"not valid JSON: {first_error}"), None

    def _object_at(self, text: str, start: int) -> tuple[tuple[str, Any] | str, bool]:
        """``((candidate, value), False)`` for the complete JSON value at ``start``,
        else ``(reason, truncated)``; truncated when the text ends inside the value."""
        piece = text[start:]
        try:
            return (piece, self._loads(piece)), False
        except self._decode_error as error:
            end = getattr(error, "pos", 0)
            if end >= len(piece):
                return "truncated: the output ends inside the JSON value", True
            if end > 0:
                try:
                    head = piece[:end]
                    return (head, self._loads(head)), False
                except self._decode_error:
                    pass
            return _decode_error(error), False

    def parse_distinct(self, outputs: pl.Series) -> tuple[pl.DataFrame, pl.Series]:
        """Parsed columns per distinct output, and each output's row in them (in bulk)."""
        from evalkit.contract.batch import parse_distinct

        return parse_distinct(self, outputs)

    def parse_row(self, text: str | None) -> tuple[Any, ...]:
        """``(error, detail, k0, v0, k1, v1, ...)`` of one output, value by value.

        The reference for the bulk path (:func:`parse_frame`), which must give
        the same columns; per field ``i``, ``k<i>`` is the kind of the value
        (:data:`KINDS`; absent when the key is missing or the output invalid)
        and ``v<i>`` the value itself if it is a string, else its JSON text
        (keys sorted).
        """
        error, detail, value = self.parse(text)
        if error is not None or type(value) is not dict:
            return (error, detail, *self._absent)
        cells: list[Any] = [None, None]
        for key in self.spec.fields:
            cells.extend(value_cell(value.get(key, _NOTHING)))
        return tuple(cells)


def parse_frame(parser: OutputParser, texts: list[str | None] | pl.Series) -> pl.DataFrame:
    """Parsed columns of many outputs, one row per output (what workers return).

    Columns per :func:`parsed_schema`, values as :meth:`OutputParser.parse_row`
    gives them; computed in bulk by :func:`evalkit.contract.batch.parse_outputs`.
    """
    import polars as pl

    outputs = texts if isinstance(texts, pl.Series) else pl.Series(texts, dtype=pl.String)
    return parse_outputs(parser, outputs)
