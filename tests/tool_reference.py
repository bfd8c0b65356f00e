"""An independent reference for tool-call verdicts, written apart from evalkit's scorer.

It follows the Berkeley Function Calling Leaderboard's AST checker in spirit
(read, not copied): the function must be one of the row's functions; every
required parameter present; no parameter the function does not declare when
its schema says ``additionalProperties: false``; each value of its declared
type, and one of its ``enum`` when it has one; parallel calls matched as a
set, in any order (every permutation is tried). Types are JSON Schema's (what
``parameters`` means): an integer is a number without a fraction (``2.0`` is
one), a Boolean is no number, a number is an integer or a float.

Nothing here imports evalkit: the calls are read from the raw text with
``re`` and ``json``, knowing which syntax each test output was written in,
the schema subset the tests' tools use is checked by hand, and values are
compared by the contract's rules written out again (``normalized``: NFKC,
lower case, whitespace collapsed; ``number``: within the tolerance, inclusive,
1e-9 of slack; anything else: equal JSON values, ``1 == 1.0``, ``true != 1``).
"""

from __future__ import annotations

import itertools
import json
import re
import unicodedata
from dataclasses import dataclass
from typing import Any

Call = tuple[str, dict[str, Any]]


class Unparsable(Exception):
    """The output holds a call attempt that does not parse."""


def _object(text: str) -> Any:
    try:
        value = json.loads(text)
    except ValueError as error:
        raise Unparsable(str(error)) from None
    return value


def _call(item: Any, key: str = "arguments") -> Call:
    if not isinstance(item, dict) or not isinstance(item.get("name"), str) or key not in item:
        raise Unparsable("not a call object")
    arguments = item[key]
    if isinstance(arguments, str):
        arguments = _object(arguments)
    if not isinstance(arguments, dict):
        raise Unparsable("arguments are not an object")
    return item["name"], arguments


def read_calls(syntax: str, text: str | None, structured: list[Any] | None) -> list[Call]:
    """The calls an output holds, in the syntax it was written in ([] for a text answer)."""
    if syntax == "batch":
        return [_call(item["function"]) for item in structured or []]
    text = text or ""
    if syntax == "qwen":
        opened = text.count("<tool_call>")
        blocks = re.findall(r"<tool_call>(.*?)</tool_call>", text, flags=re.S)
        if len(blocks) != opened:
            raise Unparsable("a <tool_call> block is not closed")
        return [_call(_object(block.strip())) for block in blocks]
    if syntax == "llama3":
        body = text.strip()
        if not body.startswith("{"):
            return []
        return [_call(_object(body), "parameters")]
    if syntax == "mistral":
        if "[TOOL_CALLS]" not in text:
            return []
        items = _object(text.split("[TOOL_CALLS]", 1)[1].strip())
        if not isinstance(items, list):
            raise Unparsable("not a list")
        return [_call(item) for item in items]
    raise AssertionError(f"unknown planted syntax {syntax}")


_TYPES = {
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "integer": lambda v: (
        not isinstance(v, bool)
        and (isinstance(v, int) or (isinstance(v, float) and v.is_integer()))
    ),
    "number": lambda v: not isinstance(v, bool) and isinstance(v, int | float),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
}


def _value_ok(schema: dict[str, Any], value: Any) -> bool:
    if "type" in schema and not _TYPES[schema["type"]](value):
        return False
    if "enum" in schema and value not in schema["enum"]:
        return False
    if schema.get("type") == "array" and "items" in schema:
        return all(_value_ok(schema["items"], item) for item in value)
    return True


def arguments_ok(parameters: dict[str, Any] | None, arguments: dict[str, Any]) -> bool:
    """The BFCL checks on one call's arguments, against its function's parameters."""
    if parameters is None:  # no parameters: an empty parameter list
        return not arguments
    properties = parameters.get("properties", {})
    if any(name not in arguments for name in parameters.get("required", [])):
        return False
    closed = parameters.get("additionalProperties") is False
    if closed and any(name not in properties for name in arguments):
        return False
    return all(
        _value_ok(properties[name], v) for name, v in arguments.items() if name in properties
    )


def _same(left: Any, right: Any) -> bool:
    """Equal JSON values: numbers by value (not Booleans), lists in order, objects by key."""
    if isinstance(left, bool) or isinstance(right, bool):
        return type(left) is type(right) and left == right
    if isinstance(left, int | float) and isinstance(right, int | float):
        return left == right
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(map(_same, left, right))
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(_same(left[k], right[k]) for k in left)
    return type(left) is type(right) and left == right


def _normal(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).lower().split())


@dataclass(frozen=True)
class Rules:
    """The contract's content rules, as the reference reads them."""

    normalized: tuple[str, ...] = ()
    """Argument names compared after normalising."""
    numbers: tuple[tuple[str, float], ...] = ()
    """(argument name, tolerance) compared as numbers."""

    def value(self, key: str, predicted: Any, gold: Any) -> bool:
        tolerance = dict(self.numbers).get(key)
        if gold is None:
            return predicted is None
        if tolerance is not None:
            is_number = isinstance(predicted, int | float) and not isinstance(predicted, bool)
            return is_number and abs(predicted - gold) <= tolerance + 1e-9
        if key in self.normalized and isinstance(predicted, str) and isinstance(gold, str):
            return _normal(predicted) == _normal(gold)
        return _same(predicted, gold)

    def call(self, predicted: Call, gold: Call) -> bool:
        """Same function; listed arguments by their rule (a null or absent gold value wants
        null or absent), every other argument present on both sides and equal."""
        if predicted[0] != gold[0]:
            return False
        listed = set(self.normalized) | {key for key, _ in self.numbers}
        for key in set(predicted[1]) | set(gold[1]):
            if key not in listed and (key not in predicted[1] or key not in gold[1]):
                return False
            if not self.value(key, predicted[1].get(key), gold[1].get(key)):
                return False
        return True


def verdict(
    syntax: str,
    text: str | None,
    structured: list[Any] | None,
    tools: dict[str, dict[str, Any] | None],
    gold: list[Call],
    rules: Rules,
) -> tuple[bool, bool, str | None]:
    """(format valid, content correct, error category) of one output."""
    try:
        calls = read_calls(syntax, text, structured)
    except Unparsable:
        return False, False, "unparsable_call" if gold else "unexpected_call"
    if not calls:
        return (False, False, "no_call") if gold else (True, True, None)
    if not gold:
        return False, False, "unexpected_call"
    if any(name not in tools for name, _ in calls):
        return False, False, "unknown_tool"
    if not all(arguments_ok(tools[name], arguments) for name, arguments in calls):
        return False, False, "invalid_arguments"
    if len(calls) != len(gold):
        return True, False, None
    correct = any(
        all(rules.call(p, g) for p, g in zip(order, gold, strict=True))
        for order in itertools.permutations(calls)
    )
    return True, correct, None
