"""A hostile corpus of tool-call outputs and gold calls, for the bulk-equals-exact tests.

Every spelling a model, a server or a gold file may use for the same call, and
the ways each goes wrong: key order, JSON whitespace and other whitespace,
``\\u`` escapes beside raw Unicode, ``1`` beside ``1.0`` and ``-0``, long
integers, keys given twice, extra and missing members, wrong types and enum
values, nested arguments, unknown and empty names, parallel calls in either
order, truncated and interleaved ``<tool_call>`` blocks, the other syntaxes'
markers, structured calls beside null content, blanks and text answers.
"""

from __future__ import annotations

import json
import random
from typing import Any


def _tool(
    name: str, properties: dict[str, Any] | None, required: tuple[str, ...] = ()
) -> dict[str, Any]:
    function: dict[str, Any] = {"name": name}
    if properties is not None:
        function["parameters"] = {
            "type": "object",
            "properties": properties,
            "required": list(required),
            **({"additionalProperties": False} if name in ("legal", "track") else {}),
        }
    return {"type": "function", "function": function}


TOOLS = [
    _tool("lookup", {"order_id": {"type": "string"}}, ("order_id",)),
    _tool(
        "refund", {"order_id": {"type": "string"}, "history": {"type": "boolean"}}, ("order_id",)
    ),
    _tool(
        "track",
        {"order_id": {"type": "string"}, "carrier": {"type": "string", "enum": ["dhl", "ups"]}},
        ("order_id",),
    ),
    _tool("legal", {"priority": {"type": "string", "enum": ["high", "urgent"]}}, ("priority",)),
    _tool(
        "convert",
        {
            "amount": {"type": "number"},
            "currency": {"type": "string"},
            "round": {"type": "integer"},
        },
        ("amount", "currency"),
    ),
    _tool(
        "search",
        {"query": {"type": "string"}, "filters": {"type": "object"}, "tags": {"type": "array"}},
        ("query",),
    ),
    _tool("ping", None),
    _tool(
        "résumé",
        {"note": {"type": ["string", "null"]}, "b": {}, "a": {}, "é": {}, "aa": {}, "xs": {}},
    ),
]
OTHER_TOOLS = [TOOLS[0], TOOLS[3], TOOLS[6]]
"""A second tools value: some gold rows' calls name tools it lacks (for predictions)."""

GOLD: list[list[dict[str, Any]]] = [
    [],
    [{"name": "lookup", "arguments": {"order_id": "ORD-1"}}],
    [{"name": "lookup", "arguments": {"order_id": "Straße  Café"}}],
    [{"name": "lookup", "arguments": {"order_id": 'a"b\\c\nd\té\u2028\x7f/'}}],
    [
        {"name": "lookup", "arguments": {"order_id": "ORD-2"}},
        {"name": "refund", "arguments": {"order_id": "ORD-2", "history": True}},
    ],
    [
        {"name": "track", "arguments": {"order_id": "ORD-3", "carrier": "dhl"}},
        {"name": "lookup", "arguments": {"order_id": "ORD-3"}},
    ],
    [
        {"name": "lookup", "arguments": {"order_id": "ORD-4"}},
        {"name": "lookup", "arguments": {"order_id": "ORD-5"}},
    ],
    [{"name": "legal", "arguments": {"priority": "urgent"}}],
    [{"name": "convert", "arguments": {"amount": 10, "currency": "EUR", "round": 2}}],
    [{"name": "convert", "arguments": {"amount": 2.5, "currency": "eur"}}],
    [{"name": "convert", "arguments": {"amount": 123456789012345678, "currency": "X"}}],
    [{"name": "search", "arguments": {"query": "q", "filters": {"b": 1, "a": [1.0, 2]}}}],
    [{"name": "ping", "arguments": {}}],
    [{"name": "résumé", "arguments": {"note": None, "b": 1, "a": "x", "é": False, "aa": 0}}],
    [{"name": "résumé", "arguments": {"note": "Ｆｕｌｌ  Width"}}],
    [{"name": "résumé", "arguments": {"xs": None, "b": None}}, {"name": "ping", "arguments": {}}],
]
"""Valid gold calls (every call meets its tool's schema in :data:`TOOLS`)."""


def _dump(value: Any, style: str) -> str:
    if style == "compact":
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    if style == "ascii":
        return json.dumps(value)
    if style == "pretty":
        return json.dumps(value, ensure_ascii=False, indent=2)
    if style == "tabs":
        return json.dumps(value, ensure_ascii=False).replace(": ", ":\t\r\n ")
    return json.dumps(value, ensure_ascii=False)


STYLES = ("spaced", "compact", "ascii", "pretty", "tabs")


def gold_texts(calls: list[dict[str, Any]]) -> list[str]:
    """Spellings of one gold list: every style, arguments first, the OpenAI shape, arguments
    as JSON text."""
    texts = [_dump(calls, style) for style in STYLES]
    texts.append(_dump([{"arguments": c["arguments"], "name": c["name"]} for c in calls], "spaced"))
    texts.append(_dump([{"type": "function", "function": c} for c in calls], "compact"))
    texts.append(
        _dump([{"name": c["name"], "arguments": json.dumps(c["arguments"])} for c in calls], "")
    )
    return texts


def _changed(call: dict[str, Any], how: str) -> dict[str, Any]:
    """One call, changed the way a model gets it wrong (or right in another spelling)."""
    name, arguments = call["name"], dict(call["arguments"])
    first = next(iter(arguments), None)
    if how == "upper":
        arguments = {k: v.upper() if type(v) is str else v for k, v in arguments.items()}
    elif how == "spaces" and first is not None and type(arguments[first]) is str:
        arguments[first] = "  " + arguments[first].replace(" ", "\n ") + " "
    elif how == "float":
        arguments = {k: float(v) if type(v) is int else v for k, v in arguments.items()}
    elif how == "reordered":
        arguments = dict(reversed(list(arguments.items())))
    elif how == "extra":
        arguments["extra"] = 1
    elif how == "missing" and first is not None:
        del arguments[first]
    elif how == "null" and first is not None:
        arguments[first] = None
    elif how == "wrong_type" and first is not None:
        arguments[first] = 7
    elif how == "list_value" and first is not None:
        arguments[first] = [arguments[first]]
    elif how == "enum":
        arguments = {
            k: "fedex" if k in ("carrier", "priority") else v for k, v in arguments.items()
        }
    elif how == "wrong_name":
        name = "refund" if name != "refund" else "lookup"
    elif how == "unknown":
        name = "get_order"
    elif how == "case_name":
        name = name.upper()
    return {"name": name, "arguments": arguments}


CHANGES = (
    "same", "upper", "spaces", "float", "reordered", "extra", "missing", "null",
    "wrong_type", "list_value", "enum", "wrong_name", "unknown", "case_name",
)  # fmt: skip


def _block(body: str) -> str:
    return "<tool_call>\n" + body + "\n</tool_call>"


def _bodies(calls: list[dict[str, Any]], style: str) -> list[str]:
    return [_dump(call, style) for call in calls]


def outputs_for(calls: list[dict[str, Any]], rng: random.Random) -> list[str | None]:
    """Raw outputs that answer one gold list, in many spellings, right and wrong."""
    out: list[str | None] = []
    shown = calls or [{"name": "lookup", "arguments": {"order_id": "ORD-1"}}]
    for how in CHANGES:
        changed = [_changed(call, how) for call in shown]
        style = rng.choice(STYLES)
        bodies = _bodies(changed, style)
        out.append("\n".join(_block(b) for b in bodies))
        out.append("<think>\nok\n</think>\n\n" + "".join(_block(b) for b in reversed(bodies)))
    bodies = _bodies(shown, "spaced")
    joined = "\n".join(_block(b) for b in bodies)
    first = bodies[0]
    out += [
        # one call of several, calls repeated, calls in other syntaxes
        _block(first),
        joined + "\n" + _block(first),
        "[TOOL_CALLS]" + _dump(shown, "compact"),
        shown[0]["name"] + _dump(shown[0]["arguments"], "spaced"),
        _dump({"name": shown[0]["name"], "parameters": shown[0]["arguments"]}, "spaced"),
        "<|python_tag|>"
        + _dump({"name": shown[0]["name"], "parameters": shown[0]["arguments"]}, ""),
        _dump(shown, "spaced"),
        "```json\n" + _dump(shown[0], "pretty") + "\n```",
        # Hermes blocks with hostile surroundings
        "Sure! " + joined,
        "\u00a0" + joined,
        "\x0c" + joined,
        joined + " trailing text",
        joined[:-5],
        joined[: len(joined) // 2],
        "<tool_call><tool_call>" + first + "</tool_call>",
        "<tool_call>" + first + "</tool_call></tool_call>",
        "<tool_call>\u00a0" + first + "\u2028</tool_call>",
        "<tool_call>" + first + "</tool_call>[TOOL_CALLS]",
        joined.replace('"name"', '"name": "x", "name"', 1),
        joined.replace('"arguments": {', '"arguments": {"k": 1, "k": 2, ', 1),
        joined.replace('"arguments": {', '"arguments": {"k": 1, "k": 1, ', 1),
        joined.replace('"arguments": {', '"id": "c1", "arguments": {', 1),
        joined.replace('"arguments": {', '"arguments": {"n": -0, ', 1),
        joined.replace('"arguments": {', '"arguments": {"n": 1234567890123456789, ', 1),
        joined.replace('"arguments": {', '"arguments": {"n": -9999999999999999999, ', 1),
        joined.replace('"arguments": {', '"arguments": {"n": 99999999999999999999, ', 1),
        joined.replace('"arguments": {', '"arguments": {"n": 1e2, ', 1),
        joined.replace('"arguments": {', '"arguments": {"n": 01, ', 1),
        joined.replace('"arguments": {', '"arguments": {"s": "\\/\\u00e9\\b\\f", ', 1),
        joined.replace('"arguments": {', '"arguments": {"": "", ', 1),
        joined.replace('"arguments": {', '"arguments": {"s": "a\\/b", ', 1),
        joined.replace('"arguments": {', '"arguments": {"s": "\\"\\\\\\b\\f\\n\\r\\t", ', 1),
        "ok{} " + joined + " {}",
        joined.replace('"arguments": {', '"arguments": {"k\\"q": 1, ', 1),
        joined.replace('"arguments": {', '"arguments": {"t": true, "f": false, "z": 0, ', 1),
        joined.replace(f'"name": "{shown[0]["name"]}"', '"name": ""', 1),
        joined.replace(f'"name": "{shown[0]["name"]}"', '"name": "a\\u0062"', 1),
        joined.replace(f'"name": "{shown[0]["name"]}"', '"name": 5', 1),
        joined.replace('"arguments": {', '"arguments": "{', 1),
        _block(
            _dump({"name": shown[0]["name"], "arguments": json.dumps(shown[0]["arguments"])}, "")
        ),
        _block('{"name": "lookup", "arguments": null}'),
        _block('{"name": "lookup", "arguments": []}'),
        _block('{"name": "lookup"}'),
        _block("[]"),
        _block("not json"),
        _block(""),
        # text answers and blanks
        "The order is on its way.",
        '{"category": "account", "priority": "low"}',
        "[1, 2]",
        "",
        "   ",
        "\u00a0\n",
        "\u2003",
        None,
    ]
    return out


def structured_for(calls: list[dict[str, Any]]) -> list[str | None]:
    """Structured ``tool_calls`` JSON texts (OpenAI's shape, arguments as text), or none."""
    shown = calls or [{"name": "lookup", "arguments": {"order_id": "ORD-1"}}]
    api = [
        {"id": f"call_{i}", "type": "function",
         "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])}}
        for i, c in enumerate(shown)
    ]  # fmt: skip
    return [json.dumps(api), json.dumps(shown), "[]", "[{not json", None]


def corpus(seed: int = 0) -> list[dict[str, Any]]:
    """Rows of ``id``, ``tools``, ``expected`` (a gold spelling), ``output``, ``tool_calls``."""
    rng = random.Random(seed)
    rows = []
    for g, calls in enumerate(GOLD):
        spellings = gold_texts(calls)
        outputs = outputs_for(calls, rng)
        structured = structured_for(calls)
        for o, output in enumerate(outputs):
            given = structured[o % len(structured)] if o % 7 == 0 else None
            tools = OTHER_TOOLS if (g + o) % 11 == 0 and calls[:1] == GOLD[1] else TOOLS
            rows.append(
                {
                    "id": f"g{g}-o{o}",
                    "tools": json.dumps(tools),
                    "expected": spellings[o % len(spellings)],
                    "output": output,
                    "tool_calls": given,
                }
            )
    return rows


__all__ = ["GOLD", "TOOLS", "corpus", "gold_texts", "outputs_for", "structured_for"]
