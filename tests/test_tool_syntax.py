"""Each call syntax on hand-worked outputs: what it finds, and what it leaves as text.

The planted tests (tests/test_tool_calls.py) hold the syntaxes to an
independent reader on generated outputs; these pin the forms those do not
write: Mistral's v11 form (with and without its control tokens), Llama 3's
python tag and joined calls, the json syntax's fences and OpenAI shape, a
syntax chosen explicitly, and the registry itself.
"""

from __future__ import annotations

import pytest

from evalkit.contract.tool_names import AUTO_ORDER, SYNTAX_CHOICES, TEXT_SYNTAXES
from evalkit.contract.tool_syntax import SYNTAXES, find_calls

W = ("get_weather", {"city": "Paris"})
P = ("ping", {})


@pytest.mark.parametrize(
    ("syntax", "text", "found", "calls"),
    [
        ("auto", "The weather is fine.", None, None),
        ("auto", '{"category": "billing"}', None, None),  # JSON, but no call
        (
            "auto",
            '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
            "qwen",
            [W],
        ),
        (
            "auto",
            'Sure.<tool_call>{"name": "get_weather", "arguments": "{\\"city\\": \\"Paris\\"}"}</tool_call>',  # noqa: E501
            "qwen",
            [W],
        ),
        (
            "auto",
            '<think>\nhm\n</think>\n\n<tool_call>\n{"name": "ping", "arguments": {}}\n</tool_call>',
            "qwen",
            [P],
        ),
        (
            "hermes",
            '<tool_call>{"name": "ping", "arguments": {}}</tool_call><tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}',  # noqa: E501
            "qwen",
            [P, W],
        ),
        ("auto", '{"name": "get_weather", "parameters": {"city": "Paris"}}', "llama3", [W]),
        (
            "auto",
            '<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}',
            "llama3",
            [W],
        ),
        (
            "llama3",
            '{"name": "ping", "parameters": {}}; {"name": "get_weather", "parameters": {"city": "Paris"}}',  # noqa: E501
            "llama3",
            [P, W],
        ),
        (
            "auto",
            '[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "a1b2c3d4e"}]',  # noqa: E501
            "mistral",
            [W],
        ),
        (
            "auto",
            '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}[TOOL_CALLS]ping[ARGS]{}',
            "mistral",
            [W, P],
        ),
        (
            "auto",
            '[TOOL_CALLS]get_weather[CALL_ID]a1b2c3d4e[ARGS]{"city": "Paris"}',
            "mistral",
            [W],
        ),
        ("auto", 'get_weather{"city": "Paris"}', "mistral", [W]),  # v11, control tokens skipped
        ("auto", '[{"name": "get_weather", "arguments": {"city": "Paris"}}]', "json", [W]),
        ("auto", '```json\n{"name": "ping", "arguments": {}}\n```', "json", [P]),
        (
            "json",
            '{"type": "function", "function": {"name": "ping", "arguments": "{}"}}',
            "json",
            [P],
        ),
        (
            "qwen",
            '{"name": "get_weather", "parameters": {"city": "Paris"}}',
            None,
            None,
        ),  # not its syntax
    ],
)
def test_a_syntax_finds_the_calls_it_writes(syntax, text, found, calls) -> None:
    result = find_calls(text, None, syntax)
    if found is None:
        assert result is None
        return
    assert result is not None and result.problem is None, result
    assert result.syntax == found
    assert [list(call) for call in result.calls] == [list(call) for call in calls]


@pytest.mark.parametrize(
    ("syntax", "text", "found"),
    [
        (
            "auto",
            '<tool_call>{"name": "get_weather", "arguments": {"city": "Par</tool_call>',
            "qwen",
        ),
        ("auto", '<tool_call>{"name": "get_weather"}</tool_call>', "qwen"),  # no arguments
        ("auto", '<tool_call>{"name": "x", "name": "y", "arguments": {}}</tool_call>', "qwen"),
        ("auto", '<tool_call>{"name": "x", "arguments": [1]}</tool_call>', "qwen"),
        ("auto", '<tool_call>{"arguments": {}}</tool_call>', "qwen"),
        ("auto", '{"name": "get_weather", "parameters": {"city": "Par', "llama3"),
        ("auto", '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}', "mistral"),
        ("auto", "[TOOL_CALLS]get_weather[ARGS]{city: Paris}", "mistral"),
        ("auto", '[{"name": "get_weather", "arguments": {"city"', "json"),
    ],
)
def test_calls_that_do_not_parse_are_the_models_error(syntax, text, found) -> None:
    result = find_calls(text, None, syntax)
    assert result is not None and result.problem is not None and not result.calls
    assert result.syntax == found


def test_structured_calls_come_first_under_auto_and_alone_under_structured() -> None:
    structured = [{"id": "c", "type": "function", "function": {"name": "ping", "arguments": "{}"}}]
    text = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'
    assert find_calls(text, structured, "auto").calls == (P,)
    assert find_calls(text, structured, "structured").calls == (P,)
    assert find_calls(text, None, "structured") is None  # text is not read
    assert find_calls(text, structured, "qwen").calls == (W,)  # one text syntax reads text only
    assert find_calls(text, [], "auto").syntax == "qwen"  # no structured call: the text
    broken = find_calls("", [{"function": {"name": "ping", "arguments": "{"}}], "auto")
    assert broken.problem and broken.syntax == "structured"


def test_the_registry_names_every_text_syntax_once() -> None:
    assert set(SYNTAXES) == set(TEXT_SYNTAXES)
    assert SYNTAXES["hermes"].name == SYNTAXES["qwen"].name == "qwen"
    assert set(AUTO_ORDER) == {syntax.name for syntax in SYNTAXES.values()}
    assert set(SYNTAX_CHOICES) == {"auto", "structured", *TEXT_SYNTAXES}
