"""Tool calls and tools reach the chat template in every renderer that takes conversations.

A template in the style of Qwen's (tools listed in the system turn with ``tojson``,
each call written as ``<tool_call>{"name": …, "arguments": <tojson of the
arguments>}</tool_call>``, tool answers as ``<tool_response>``) renders the
walkthrough-like tool conversations. ``split --tokenizer`` lengths, ``evalkit
tokens`` totals and ``generate``'s prompts must be what ``apply_chat_template(
messages, tools=tools)`` gives for messages built here independently from the raw
rows, and must change when the tools are dropped (so the test can fail).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from tokens_fixtures import build_tokenizer, write_jsonl

pytest.importorskip("transformers")

from evalkit.chat import read_chat
from evalkit.model.prompts import read_prompts
from evalkit.tokens.api import check_tokens
from evalkit.tokens.lengths import token_lengths
from evalkit.tokens.load import load_tokenizer

TOOL_TEMPLATE = (
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
    "{{- '<|im_start|>assistant\\n' + message.content }}"
    "{%- if message.tool_calls %}{%- for call in message.tool_calls %}"
    '{{- \'\\n<tool_call>\\n{"name": "\' + call.function.name + \'", "arguments": \' }}'
    "{{- call.function.arguments | tojson }}{{- '}\\n</tool_call>' }}"
    "{%- endfor %}{%- endif %}"
    "{{- '<|im_end|>\\n' }}"
    "{%- elif message.role == 'tool' %}"
    "{{- '<|im_start|>user\\n<tool_response>\\n' + message.content + '\\n</tool_response>"
    "<|im_end|>\\n' }}"
    "{%- else %}"
    "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)
LOOKUP_PARAMETERS = {"type": "object", "properties": {"order_id": {"type": "string"}}}
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup_order",
            "description": "Look up",
            "parameters": LOOKUP_PARAMETERS,
        },
    }
]


def rows(n: int) -> list[dict[str, Any]]:
    """Tool conversations: call-only and text+call turns, one or two calls, some without tools."""
    result = []
    for i in range(n):
        order = json.dumps({"order_id": f"ORD-{i:06d}"})
        calls = [{"id": f"c{i}", "type": "function", "function": {
            "name": "lookup_order", "arguments": order}}]  # fmt: skip
        if i % 3 == 0:
            calls.append({"id": f"d{i}", "type": "function", "function": {
                "name": "lookup_order", "arguments": '{"order_id": "ORD-000000"}'}})  # fmt: skip
        messages = [
            {"role": "system", "content": "Triage the ticket."},
            {"role": "user", "content": f"where is my order {i}"},
            {"role": "assistant", "content": "Looking." if i % 2 else None, "tool_calls": calls},
            *({"role": "tool", "tool_call_id": c["id"], "content": "shipped"} for c in calls),
            {"role": "assistant", "content": json.dumps({"category": "shipping"}),
             "weight": 1},
        ]  # fmt: skip
        row: dict[str, Any] = {"id": f"t{i}", "messages": messages}
        if i % 4:
            row["tools"] = TOOLS
        result.append(row)
    return result


def as_template_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The reference: OpenAI messages as apply_chat_template needs them, built here."""
    result = []
    for message in messages:
        out: dict[str, Any] = {"role": message["role"], "content": message["content"] or ""}
        if message.get("tool_calls"):
            out["tool_calls"] = [
                {"id": c["id"], "type": "function", "function": {
                    "name": c["function"]["name"],
                    "arguments": json.loads(c["function"]["arguments"])}}
                for c in message["tool_calls"]
            ]  # fmt: skip
        if message.get("tool_call_id"):
            out["tool_call_id"] = message["tool_call_id"]
        result.append(out)
    return result


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tokenizer(tmp_path_factory.mktemp("tok") / "tools", "chatml",
                           template=TOOL_TEMPLATE)  # fmt: skip


def expected_counts(tokenizer: Any, data: list[dict[str, Any]], tools: bool = True) -> list[int]:
    return [
        len(tokenizer.apply_chat_template(as_template_messages(row["messages"]),
                                          tools=row.get("tools") if tools else None,
                                          tokenize=True, return_dict=False))
        for row in data
    ]  # fmt: skip


def test_split_lengths_render_tool_calls_and_tools(folder: Path, tmp_path: Path) -> None:
    data = rows(12)
    path = write_jsonl(tmp_path / "tools.jsonl", data)
    tokenizer = load_tokenizer(folder)
    from evalkit.io import read_table

    chat = read_chat(read_table(path), "messages")
    counts = token_lengths(chat, tokenizer).to_list()
    assert counts == expected_counts(tokenizer, data)
    assert counts != expected_counts(tokenizer, data, tools=False)
    # the arguments reach the template as objects: no quoted JSON string in the render
    render = tokenizer.apply_chat_template(
        as_template_messages(data[0]["messages"]), tools=None, tokenize=False
    )
    assert '"arguments": {"order_id": "ORD-000000"}' in render


def test_tokens_totals_are_the_renders_with_tools(folder: Path, tmp_path: Path) -> None:
    data = rows(12)
    path = write_jsonl(tmp_path / "tools.jsonl", data)
    report = check_tokens([path], tokenizer=folder, text="messages").report
    tokens = report.splits["tools"].tokens
    assert tokens is not None
    assert tokens.total.max == max(expected_counts(load_tokenizer(folder), data))
    assert report.check("render_parity").status == "pass"


def test_generate_prompts_render_tool_calls_and_tools(folder: Path, tmp_path: Path) -> None:
    data = rows(6)
    path = write_jsonl(tmp_path / "tools.jsonl", data)
    tokenizer = load_tokenizer(folder)
    prompts = read_prompts(path, "id", ["messages"], tokenizer, tokenizer_folder=folder)
    for row, render in zip(data, prompts.renders, strict=True):
        expected = tokenizer.apply_chat_template(
            as_template_messages(row["messages"][:-1]),
            tools=row.get("tools"),
            tokenize=False,
            add_generation_prompt=True,
        )
        assert render == expected
        assert "<tool_response>" in render


def test_a_frame_of_text_arguments_renders_the_same_as_the_file(folder: Path) -> None:
    # Parquet/frames take the vectorised path: it must hand the template the same messages.
    data = rows(6)
    frame = pl.DataFrame({"messages": [row["messages"] for row in data]})
    chat = read_chat(frame, "messages", source="frame")
    tokenizer = load_tokenizer(folder)
    assert token_lengths(chat, tokenizer).to_list() == expected_counts(tokenizer, data, tools=False)
