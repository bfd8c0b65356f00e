"""Planted tool-calling examples for the tests: gold rows, outputs and what each plants.

Every example is one gold row (its tools, its expected calls) and one model
output written in one syntax - OpenAI Batch's structured ``message.tool_calls``,
Qwen/Hermes ``<tool_call>`` text, Llama 3's JSON, Mistral's ``[TOOL_CALLS]`` - with
one planted defect (or none). The defects are the ones a function-calling model
makes: the wrong function, an unknown one, a missing required argument, a
value of the wrong type, an extra argument where ``additionalProperties`` is
false, a number off by more than the tolerance (or within it), text where a
call is expected, a call where none is, parallel calls reordered (right) or
one of them missing, arguments that do not parse.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any

from tool_reference import Rules


def _tool(name: str, parameters: dict[str, Any] | None) -> dict[str, Any]:
    function: dict[str, Any] = {"name": name, "description": f"the {name} tool"}
    if parameters is not None:
        function["parameters"] = parameters
    return {"type": "function", "function": function}


TOOLS = [
    _tool(
        "get_weather",
        {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "unit": {"type": "string", "enum": ["c", "f"]},
            },
            "required": ["city"],
            "additionalProperties": False,
        },
    ),
    _tool(
        "convert",
        {
            "type": "object",
            "properties": {
                "amount": {"type": "number"},
                "currency": {"type": "string"},
                "rounding": {"type": "integer"},
            },
            "required": ["amount", "currency"],
        },
    ),
    _tool(
        "book_flight",
        {
            "type": "object",
            "properties": {
                "origin": {"type": "string"},
                "destination": {"type": "string"},
                "passengers": {"type": "integer"},
                "refundable": {"type": "boolean"},
                "stops": {"type": "array", "items": {"type": "string"}},
            },
            "required": ["origin", "destination"],
            "additionalProperties": False,
        },
    ),
    _tool("ping", None),
]
SCHEMAS = {tool["function"]["name"]: tool["function"].get("parameters") for tool in TOOLS}
RULES = Rules(normalized=("city",), numbers=(("amount", 0.01),))
CONTRACT = """\
name: planted-calls
version: 1
id: id
class: function
gold_calls: expected
output:
  parse: tool_calls
  tools: tools
  calls: set
fields:
  name: {match: exact}
  arguments.city: {match: normalized}
  arguments.amount: {match: number, tolerance: 0.01}
"""
SYNTAXES = ("batch", "qwen", "llama3", "mistral")
DEFECTS = (
    "correct",
    "normalized",
    "within_tolerance",
    "int_as_float",
    "wrong_function",
    "unknown_tool",
    "missing_required",
    "wrong_type",
    "extra_argument",
    "off_tolerance",
    "wrong_value",
    "text_where_call_expected",
    "call_where_none",
    "text_where_none",
    "parallel_reordered",
    "parallel_missing",
    "unparsable",
)
PARALLEL = {"parallel_reordered", "parallel_missing"}
CITIES = ["Paris", "Oslo", "Rome", "São Paulo", "New York"]
TEXT = "I am sorry, I cannot do that for you."


def random_call(rng: random.Random, name: str | None = None) -> tuple[str, dict[str, Any]]:
    """A valid call of one of the tools (``name`` chosen or random), with random values."""
    name = name or rng.choice(["get_weather", "convert", "book_flight"])
    if name == "get_weather":
        arguments: dict[str, Any] = {"city": rng.choice(CITIES)}
        if rng.random() < 0.5:
            arguments["unit"] = rng.choice(["c", "f"])
    elif name == "convert":
        arguments = {
            "amount": round(rng.uniform(1, 500), 2),
            "currency": rng.choice(["EUR", "USD"]),
        }
        if rng.random() < 0.3:
            arguments["rounding"] = rng.randint(0, 4)
    elif name == "book_flight":
        arguments = {"origin": rng.choice(CITIES), "destination": rng.choice(CITIES)}
        if rng.random() < 0.5:
            arguments["passengers"] = rng.randint(1, 5)
        if rng.random() < 0.3:
            arguments["refundable"] = rng.random() < 0.5
        if rng.random() < 0.3:
            arguments["stops"] = rng.sample(CITIES, 2)
    else:
        arguments = {}
    return name, arguments


@dataclass(frozen=True)
class Planted:
    """One planted example."""

    id: str
    syntax: str
    defect: str
    gold: list[tuple[str, dict[str, Any]]]
    calls: list[tuple[str, dict[str, Any]]] | None
    """What the model calls (None: it answers in text)."""
    broken: bool = False
    """The calls are written so that they do not parse."""

    def gold_row(self) -> dict[str, Any]:
        expected = [{"name": name, "arguments": args} for name, args in self.gold]
        return {"id": self.id, "tools": TOOLS, "expected": expected}

    def text(self) -> str:
        """The raw output in the example's text syntax."""
        if self.calls is None:
            return TEXT
        if self.syntax == "qwen":
            blocks = [
                "<tool_call>\n" + json.dumps({"name": n, "arguments": a}) + "\n</tool_call>"
                for n, a in self.calls
            ]
            if self.broken:
                blocks[-1] = blocks[-1][: blocks[-1].index("{") + 25] + "\n</tool_call>"
            return "\n".join(blocks)
        if self.syntax == "llama3":
            name, arguments = self.calls[0]
            text = json.dumps({"name": name, "parameters": arguments})
            return text[: len(text) - 4] if self.broken else text
        items = json.dumps([{"name": n, "arguments": a} for n, a in self.calls])
        return "[TOOL_CALLS]" + (items[: len(items) - 3] if self.broken else items)

    def structured(self) -> list[dict[str, Any]] | None:
        """The Batch output's ``message.tool_calls`` (None: a text answer)."""
        if self.calls is None:
            return None
        calls = []
        for index, (name, arguments) in enumerate(self.calls):
            text = json.dumps(arguments)
            if self.broken and index == len(self.calls) - 1:
                text = text[: max(1, len(text) - 3)]
            calls.append(
                {
                    "id": f"call_{index}",
                    "type": "function",
                    "function": {"name": name, "arguments": text},
                }
            )
        return calls

    def batch_line(self) -> dict[str, Any]:
        """One line of an OpenAI Batch output file answering this example."""
        message: dict[str, Any] = {
            "role": "assistant",
            "content": TEXT if self.calls is None else None,
        }
        if self.calls is not None:
            message["tool_calls"] = self.structured()
        body = {"object": "chat.completion", "choices": [{"index": 0, "message": message}]}
        return {"custom_id": self.id, "response": {"status_code": 200, "body": body}, "error": None}


def _defective(defect: str, rng: random.Random) -> tuple[list[Any], list[Any] | None, bool]:
    """(gold calls, predicted calls, broken) for one defect."""
    if defect in ("call_where_none", "text_where_none"):
        return [], ([random_call(rng)] if defect == "call_where_none" else None), False
    if defect in PARALLEL:
        gold = [random_call(rng), random_call(rng)]
        while gold[1] == gold[0]:
            gold[1] = random_call(rng)
        calls = list(reversed(gold)) if defect == "parallel_reordered" else gold[:1]
        return gold, calls, False
    wanted = {
        "normalized": "get_weather",
        "within_tolerance": "convert",
        "int_as_float": "book_flight",
        "missing_required": None,
        "wrong_type": "book_flight",
        "extra_argument": rng.choice(["get_weather", "book_flight"]),
        "off_tolerance": "convert",
        "wrong_value": "get_weather",
    }.get(defect)
    name, arguments = random_call(rng, wanted)
    gold = [(name, dict(arguments))]
    predicted = dict(arguments)
    if defect == "text_where_call_expected":
        return gold, None, False
    if defect == "normalized":
        predicted["city"] = "  " + predicted["city"].upper().replace(" ", "   ") + " "
    elif defect == "within_tolerance":
        predicted["amount"] = round(predicted["amount"] + rng.choice([-0.004, 0.009]), 3)
    elif defect == "off_tolerance":
        predicted["amount"] = round(predicted["amount"] + rng.choice([-0.05, 0.02, 1.5]), 3)
    elif defect == "int_as_float":
        gold[0][1]["passengers"] = predicted["passengers"] = 2
        predicted["passengers"] = 2.0
    elif defect == "wrong_type":  # text for an integer, for a Boolean; a number for text
        key, value = rng.choice([("passengers", "two"), ("refundable", "yes"), ("origin", 7)])
        predicted[key] = value
    elif defect == "extra_argument":
        predicted["country"] = "FR"
    elif defect == "missing_required":
        required = SCHEMAS[name]["required"]  # type: ignore[index]
        del predicted[rng.choice(required)]
    elif defect == "wrong_value":
        predicted["city"] = rng.choice([c for c in CITIES if c != predicted["city"]])
    elif defect == "wrong_function":
        return gold, [random_call(rng, "ping" if name != "ping" else "convert")], False
    elif defect == "unknown_tool":
        return gold, [(name + "_v2", predicted)], False
    return gold, [(name, predicted)], defect == "unparsable"


def planted(count: int, seed: int = 0) -> list[Planted]:
    """``count`` examples, every (syntax, defect) pair in turn (Llama 3: one call per turn)."""
    examples = []
    pairs = [(s, d) for d in DEFECTS for s in SYNTAXES if not (s == "llama3" and d in PARALLEL)]
    for number in range(count):
        syntax, defect = pairs[number % len(pairs)]
        rng = random.Random(f"{seed}:{number}")
        gold, calls, broken = _defective(defect, rng)
        examples.append(Planted(f"P{number:04d}", syntax, defect, gold, calls, broken))
    return examples
