"""Tool calls, tool answers, names and training flags: kept, checked, and one semantics.

The reference normaliser (per value) and the vectorised column path must give the
same conversations, and find a planted fault in the same row; every malformed
message is exit 2 naming the file, the line and the message.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pytest
from conftest import assert_one_line_error
from hypothesis import given, settings
from hypothesis import strategies as st

from evalkit.chat import read_chat, template_conversations
from evalkit.chat.frame import BadRow, normalize_column, normalize_values
from evalkit.errors import InvalidConversation
from evalkit.io import read_table


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def chat_of(path: Path, *columns: str, **options: Any):
    return read_chat(read_table(path), list(columns) or ["messages"], **options)


def call(identifier: str | None, name: str, arguments: Any) -> dict[str, Any]:
    item: dict[str, Any] = {"type": "function", "function": {"name": name, "arguments": arguments}}
    if identifier is not None:
        item = {"id": identifier, **item}
    return item


LOOKUP = [
    {"role": "user", "content": "Where is ORD-123456?"},
    {"role": "assistant", "content": None,
     "tool_calls": [call("c1", "lookup_order", '{"order_id": "ORD-123456"}')]},
    {"role": "tool", "tool_call_id": "c1", "content": '{"status": "shipped"}'},
    {"role": "assistant", "content": "It has shipped."},
]  # fmt: skip


def test_tool_calls_answers_and_names_are_kept(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "c.jsonl", [{"messages": LOOKUP}])
    chat = chat_of(path)
    messages = chat.messages()[0]
    assert messages[1]["tool_calls"] == [
        {"id": "c1", "name": "lookup_order", "arguments": '{"order_id": "ORD-123456"}',
         "arguments_text": True}
    ]  # fmt: skip
    assert messages[1]["content"] == ""
    assert messages[2]["tool_call_id"] == "c1"
    assert chat.tool_call_count == 1
    # the compared text holds the call: two examples calling other tools differ
    assert chat.compared_text().to_list() == [
        'Where is ORD-123456?\n\nlookup_order {"order_id": "ORD-123456"}\n'
        '{"status": "shipped"}\nIt has shipped.'
    ]
    # lengths count the call's name and arguments (independently: sum of the parts)
    expected = (
        sum(len(m["content"] or "") for m in LOOKUP)
        + len("lookup_order")
        + len('{"order_id": "ORD-123456"}')
    )
    assert chat.char_lengths().to_list() == [expected]


def test_the_template_receives_openai_messages_with_arguments_as_objects(tmp_path: Path) -> None:
    rows = [
        {"messages": LOOKUP},
        {"messages": [
            {"role": "user", "content": "hi", "name": "ann"},
            {"role": "assistant", "content": "Let me look.", "tool_calls": [
                call(None, "search", "not json"), call("k", "count", "[1, 2]")]},
            {"role": "tool", "content": "x"},
            {"role": "tool", "content": "y"},
            {"role": "assistant", "content": "ok", "weight": 0},
        ]},
    ]  # fmt: skip
    chat = chat_of(write_jsonl(tmp_path / "c.jsonl", rows))
    first, second = template_conversations(chat)
    assert first.messages == [
        {"role": "user", "content": "Where is ORD-123456?"},
        {"role": "assistant", "content": "",  # a call-only turn: empty text, not null
         "tool_calls": [{"id": "c1", "type": "function", "function": {
             "name": "lookup_order", "arguments": {"order_id": "ORD-123456"}}}]},
        {"role": "tool", "content": '{"status": "shipped"}', "tool_call_id": "c1"},
        {"role": "assistant", "content": "It has shipped."},
    ]  # fmt: skip
    assert [a.handed for a in first.arguments] == ["parsed"]
    # text that is not a JSON object is handed over as written; no key the data lacks
    calls = second.messages[1]["tool_calls"]
    assert calls[0] == {"type": "function", "function": {"name": "search", "arguments": "not json"}}
    assert calls[1]["function"]["arguments"] == "[1, 2]"
    assert [a.handed for a in second.arguments] == ["text", "text"]
    assert second.messages[0] == {"role": "user", "content": "hi", "name": "ann"}
    assert second.train == [None, None, None, None, False]
    assert first.tools is None


def test_arguments_written_as_objects_are_handed_over_as_written(tmp_path: Path) -> None:
    # TRL and LLaMA-Factory write arguments as objects; keys differ from call to call,
    # so the column is read from the file (polars would add the other calls' keys as null).
    rows = [
        {"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "tool_calls": [
            call(None, "f", {"order_id": "ORD-1"})]}]},
        {"messages": [{"role": "user", "content": "b"}, {"role": "assistant", "tool_calls": [
            call(None, "g", {"amount": 5, "nested": {"x": [1, 2]}})]}]},
    ]  # fmt: skip
    chat = chat_of(write_jsonl(tmp_path / "c.jsonl", rows))
    conversations = template_conversations(chat)
    assert conversations[0].messages[1]["tool_calls"][0]["function"]["arguments"] == {
        "order_id": "ORD-1"
    }
    assert conversations[1].messages[1]["tool_calls"][0]["function"]["arguments"] == {
        "amount": 5, "nested": {"x": [1, 2]}
    }  # fmt: skip
    assert [c.arguments[0].handed for c in conversations] == ["as_written", "as_written"]


def test_prompt_conversations_stop_before_the_last_assistant_turn(tmp_path: Path) -> None:
    chat = chat_of(write_jsonl(tmp_path / "c.jsonl", [{"messages": LOOKUP}]))
    (prompt,) = template_conversations(chat, prompt=True)
    assert [m["role"] for m in prompt.messages] == ["user", "assistant", "tool"]
    assert template_conversations(chat, range(0, 0)) == []


def test_weight_and_training_flags(tmp_path: Path) -> None:
    rows = [{"messages": [
        {"role": "user", "content": "q", "training": True},
        {"role": "assistant", "content": "a", "weight": 0},
        {"role": "user", "content": "q2"},
        {"role": "assistant", "content": "b", "weight": 1, "training": True},
    ]}]  # fmt: skip
    chat = chat_of(write_jsonl(tmp_path / "c.jsonl", rows))
    assert [m["train"] for m in chat.messages()[0]] == [True, False, None, True]
    assert chat.flagged_untrained == 1


BAD = [
    ({"role": "assistant", "content": None, "tool_calls": {"id": "x"}},
     ["message 1", "'tool_calls' is an object"]),
    ({"role": "assistant", "content": None, "tool_calls": [{"id": "x", "function": {"name": "f",
      "arguments": "{}"}}]}, ["message 1", "tool call 0 has no 'type'"]),
    ({"role": "assistant", "content": None, "tool_calls": [{"type": "function", "function": {
      "arguments": "{}"}}]}, ["message 1", "tool call 0", "'name' is null"]),
    ({"role": "assistant", "content": None, "tool_calls": [{"type": "function", "function": {
      "name": "f"}}]}, ["message 1", "tool call 0 (f) has no 'arguments'"]),
    ({"role": "assistant", "content": None, "tool_calls": [{"type": "function", "function": "f"}]},
     ["message 1", "'function' is text"]),
    ({"role": "user", "content": "x", "tool_calls": [call("a", "f", "{}")]},
     ["message 1", "a user message has 'tool_calls'"]),
    ({"role": "tool", "tool_call_id": "nope", "content": "x"},
     ["message 1", "comes before any tool call"]),
    ({"role": "assistant", "content": "x", "weight": 2}, ["message 1", "'weight' is 2", "0"]),
    ({"role": "assistant", "content": "x", "weight": 0.5}, ["message 1", "'weight' is 0.5"]),
    ({"role": "user", "content": "x", "weight": 1}, ["message 1", "a user message has 'weight'"]),
    ({"role": "assistant", "content": "x", "training": "yes"}, ["message 1", "'training' is"]),
    ({"role": "assistant", "content": "x", "weight": 0, "training": True},
     ["message 1", "disagree"]),
]  # fmt: skip


@pytest.mark.parametrize(("message", "fragments"), BAD)
def test_malformed_tool_messages_name_file_line_and_message(
    tmp_path: Path, message: dict[str, Any], fragments: list[str]
) -> None:
    good = {"messages": [{"role": "user", "content": "fine"}]}
    bad = {"messages": [{"role": "user", "content": "q"}, message]}
    path = write_jsonl(tmp_path / "c.jsonl", [good, bad])
    with pytest.raises(InvalidConversation) as raised:
        chat_of(path)
    text = str(raised.value)
    assert "\n" not in text and text.startswith(f"{path}:2: column 'messages', ")
    for fragment in fragments:
        assert fragment in text, (fragment, text)
    # the same row and words from Parquet (the vectorised path where the types allow)
    parquet = tmp_path / "c.parquet"
    read_table(path).frame.write_parquet(parquet)
    with pytest.raises(InvalidConversation, match=r"c\.parquet, row 2: column 'messages', "):
        read_chat(read_table(parquet), "messages", source=str(parquet))


def test_a_tool_answer_must_follow_its_call(tmp_path: Path) -> None:
    # The call is made later in the conversation: the answer answers no *earlier* call.
    messages = [
        {"role": "user", "content": "q"},
        {"role": "tool", "tool_call_id": "c1", "content": "early"},
        {"role": "assistant", "content": None, "tool_calls": [call("c1", "f", "{}")]},
    ]
    path = write_jsonl(tmp_path / "c.jsonl", [{"messages": messages}])
    with pytest.raises(InvalidConversation, match=r"c\.jsonl:1: .*message 1: tool message"):
        chat_of(path)


def test_cli_reports_a_bad_tool_call_in_one_line(tmp_path: Path, run_cli) -> None:
    rows = [{"id": "a", "g": "1", "messages": LOOKUP},
            {"id": "b", "g": "2", "messages": [{"role": "user", "content": "q"},
             {"role": "assistant", "content": "x", "weight": 3}]}]  # fmt: skip
    path = write_jsonl(tmp_path / "c.jsonl", rows)
    result = run_cli("split", path, "--out", tmp_path / "out", "--group", "g", "--text",
                     "messages", "--ratios", "0.5,0.5", "--names", "a,b")  # fmt: skip
    assert_one_line_error(result, "c.jsonl:2", "message 1", "'weight' is 3")
    assert not (tmp_path / "out").exists()


# --- one semantics: the vectorised path equals the reference, tool calls included --------

texts = st.text(max_size=8)
ids = st.sampled_from(["c1", "c2", "c3"])


@st.composite
def tool_conversation(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A well-formed conversation with tool calls, answers, names and flags."""
    messages: list[dict[str, Any]] = []
    made: list[str] = []
    for index in range(draw(st.integers(1, 5))):
        role = draw(st.sampled_from(["system", "user", "assistant", "tool"]))
        message: dict[str, Any] = {"role": role, "content": draw(texts)}
        if role == "assistant" and draw(st.booleans()):
            calls = []
            for number in range(draw(st.integers(1, 2))):
                identifier = draw(st.one_of(st.just(f"c{index}{number}"), st.none()))
                name = draw(st.sampled_from(["f", "g"]))
                calls.append(call(identifier, name, draw(texts)))
                made += [identifier] if identifier else []
            message["tool_calls"] = calls
            if draw(st.booleans()):
                message["content"] = None
        if role == "tool" and made and draw(st.booleans()):
            message["tool_call_id"] = draw(st.sampled_from(made))
        if draw(st.integers(0, 2)) == 0:
            message["name"] = draw(texts)
        if role == "assistant" and draw(st.booleans()):
            message["weight"] = draw(st.sampled_from([0, 1]))
        if draw(st.integers(0, 2)) == 0:
            message["training"] = (
                message["weight"] == 1 if "weight" in message else draw(st.booleans())
            )
        messages.append(message)
    return messages


FAULTS: list[tuple[str, Any]] = [
    ("weight", 2),
    ("weight", 0.5),
    ("tool_call_id", "unknown"),
    ("content", None),
    ("tool_calls", [{"type": "other", "function": {"name": "f", "arguments": "{}"}}]),
    ("tool_calls", [{"type": "function", "function": {"name": "", "arguments": "{}"}}]),
    ("tool_calls", [{"type": "function", "function": {"name": "f", "arguments": None}}]),
]


@st.composite
def tool_column(draw: st.DrawFn) -> list[list[dict[str, Any]]]:
    """Conversations, one of them (sometimes) with a planted fault."""
    conversations = draw(st.lists(tool_conversation(), min_size=1, max_size=6))
    if draw(st.booleans()):
        row = draw(st.integers(0, len(conversations) - 1))
        index = draw(st.integers(0, len(conversations[row]) - 1))
        key, value = draw(st.sampled_from(FAULTS))
        conversations[row][index] = {**conversations[row][index], key: value}
    return conversations


@settings(max_examples=150, deadline=None)
@given(tool_column())
def test_vectorised_path_equals_the_reference_with_tool_calls(
    conversations: list[list[dict[str, Any]]],
) -> None:
    # pyarrow types the column from every value, as Parquet (or a clean JSONL file) does.
    series = pl.Series("m", pa.array(conversations))
    values = series.to_list()  # the values as the frame holds them (missing keys are null)
    try:
        reference = normalize_values(values)
    except BadRow as bad:
        with pytest.raises(BadRow) as fast:
            normalize_column(series)
        assert fast.value.row == bad.row
        return
    fast_column = normalize_column(series)
    assert fast_column.conversations.to_list() == reference.conversations.to_list()
    assert fast_column.conversations.dtype == reference.conversations.dtype


def test_a_column_of_no_rows_normalises_to_no_conversations() -> None:
    # An empty split file: no rows, the column typed from the other splits.
    from evalkit.chat.dtypes import conversation_dtype

    empty = pl.Series("m", [], dtype=pl.List(pl.Struct({"role": pl.String, "content": pl.String})))
    result = normalize_column(empty)
    assert len(result.conversations) == 0
    assert result.conversations.dtype == conversation_dtype()
    assert result.conversations.dtype == normalize_values([]).conversations.dtype
