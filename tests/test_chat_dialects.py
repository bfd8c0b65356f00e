"""The data people fine-tune with, as their tools write it, read as the trainer reads it.

Each form is written here the way its tool documents it: OpenAI's fine-tuning
files (function calling with tools, ``weight``), TRL's ``messages`` + ``tools``,
axolotl's chat_template data (per-message ``training``, a ``system`` field),
LLaMA-Factory's ShareGPT (``function_call``/``observation`` turns, ``system`` and
``tools`` columns) and Alpaca. LLaMA-Factory ShareGPT and Alpaca must hand the
chat template exactly the messages of their equivalent OpenAI form.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from conftest import assert_one_line_error

from evalkit.chat import read_chat, template_conversations
from evalkit.errors import InvalidConversation, UnknownColumn, UsageError
from evalkit.io import read_table

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_current_weather",
        "description": "Get the current weather",
        "parameters": {
            "type": "object",
            "properties": {
                "location": {
                    "type": "string",
                    "description": "The city and country, eg. San Francisco, USA",
                },
                "format": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["location", "format"],
        },
    },
}
# OpenAI's fine-tuning guide, "Fine-tuning examples: function calling": an assistant
# message with tool_calls and no content key at all, and the conversation's tools.
OPENAI_FUNCTION_CALLING = {
    "messages": [
        {"role": "user", "content": "What is the weather in San Francisco?"},
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "id": "call_id",
                    "type": "function",
                    "function": {
                        "name": "get_current_weather",
                        "arguments": '{"location": "San Francisco, USA", "format": "celsius"}',
                    },
                }
            ],
        },
    ],
    "parallel_tool_calls": False,
    "tools": [WEATHER_TOOL],
}
# OpenAI's guide, multi-turn chat with weight: the first answer is not trained on.
OPENAI_WEIGHTS = {
    "messages": [
        {"role": "system", "content": "Marv is a factual chatbot that is also sarcastic."},
        {"role": "user", "content": "What's the capital of France?"},
        {"role": "assistant", "content": "Paris", "weight": 0},
        {"role": "user", "content": "Can you be more sarcastic?"},
        {"role": "assistant", "content": "Paris, as if everyone doesn't know that already.",
         "weight": 1},
    ]
}  # fmt: skip


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def chat_of(path: Path, *columns: str, **options: Any):
    return read_chat(read_table(path), list(columns), **options)


def test_openai_fine_tuning_file_with_tools_and_weights(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "ft.jsonl", [OPENAI_FUNCTION_CALLING, OPENAI_WEIGHTS])
    chat = chat_of(path, "messages")
    assert chat.tools_column == "tools" and chat.tool_call_count == 1
    called, weighted = template_conversations(chat)
    assert called.messages[1] == {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": "call_id", "type": "function", "function": {
            "name": "get_current_weather",
            "arguments": {"location": "San Francisco, USA", "format": "celsius"}}}],
    }  # fmt: skip
    assert called.tools == [WEATHER_TOOL]
    assert weighted.tools is None  # the second row has no tools
    assert weighted.train == [None, None, False, None, True]
    assert chat.flagged_untrained == 1


def test_trl_messages_and_tools(tmp_path: Path) -> None:
    # TRL's "tool calling" dataset format: arguments as objects, no ids, a tools column.
    tool = {"type": "function", "function": {"name": "control_light", "description": "Turn a "
            "light on or off", "parameters": {"type": "object", "properties": {
                "room": {"type": "string"}, "state": {"type": "string"}}}}}  # fmt: skip
    row = {
        "messages": [
            {"role": "user", "content": "Turn on the living room lights."},
            {"role": "assistant", "tool_calls": [{"type": "function", "function": {
                "name": "control_light", "arguments": {"room": "living room", "state": "on"}}}]},
            {"role": "tool", "name": "control_light",
             "content": "The lights in the living room are now on."},
            {"role": "assistant", "content": "Done!"},
        ],
        "tools": [tool],
    }  # fmt: skip
    path = write_jsonl(tmp_path / "trl.jsonl", [row])
    (conversation,) = template_conversations(chat_of(path, "messages"))
    assert conversation.messages == [
        {"role": "user", "content": "Turn on the living room lights."},
        {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {
            "name": "control_light", "arguments": {"room": "living room", "state": "on"}}}]},
        {"role": "tool", "content": "The lights in the living room are now on.",
         "name": "control_light"},
        {"role": "assistant", "content": "Done!"},
    ]  # fmt: skip
    assert conversation.tools == [tool]


def test_axolotl_training_flags_and_system_field(tmp_path: Path) -> None:
    # axolotl's chat_template strategy: message_field_training ("training") overrides
    # roles_to_train per message; field_system is put first when the first turn is no system.
    rows = [
        {"system": "You are terse.", "messages": [
            {"role": "user", "content": "hi", "training": False},
            {"role": "assistant", "content": "hello", "training": False},
            {"role": "user", "content": "again"},
            {"role": "assistant", "content": "hi again", "training": True},
        ]},
        {"system": "Ignored: the row has its own.", "messages": [
            {"role": "system", "content": "own prompt"},
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": "a"},
        ]},
        {"system": None, "messages": [{"role": "user", "content": "q"},
                                      {"role": "assistant", "content": "a"}]},
    ]  # fmt: skip
    chat = chat_of(write_jsonl(tmp_path / "axolotl.jsonl", rows), "messages")
    first, second, third = template_conversations(chat)
    assert first.messages[0] == {"role": "system", "content": "You are terse."}
    assert first.train == [None, False, False, None, True]
    assert second.messages[0] == {"role": "system", "content": "own prompt"}
    assert [m["role"] for m in third.messages] == ["user", "assistant"]
    assert (chat.system_column, chat.system_added, chat.system_kept) == ("system", 1, 1)


# LLaMA-Factory's glaive_toolcall demo, in its sharegpt form: a function_call turn whose
# value is the JSON of {name, arguments}, an observation, tools as JSON text of bare schemas.
RECIPE_TOOLS = [
    {
        "name": "search_recipes",
        "description": "Search for recipes based on ingredients",
        "parameters": {
            "type": "object",
            "properties": {"ingredients": {"type": "array", "items": {"type": "string"}}},
            "required": ["ingredients"],
        },
    }
]
CALL = {"name": "search_recipes", "arguments": {"ingredients": ["chicken", "tomatoes", "garlic"]}}
OBSERVATION = '{"recipes": [{"name": "Chicken Tomato Garlic Pasta"}]}'


def llama_factory_row(index: int) -> dict[str, Any]:
    return {
        "conversations": [
            {"from": "human", "value": f"I have chicken, tomatoes and garlic ({index})."},
            {"from": "function_call", "value": json.dumps(CALL)},
            {"from": "observation", "value": OBSERVATION},
            {"from": "gpt", "value": "Try Chicken Tomato Garlic Pasta."},
            {"from": "human", "value": "Two more?"},
            {"from": "function_call", "value": json.dumps([CALL, CALL])},
            {"from": "observation", "value": OBSERVATION},
            {"from": "observation", "value": OBSERVATION},
            {"from": "gpt", "value": "Both say pasta."},
        ],
        "system": "You are a cook.",
        "tools": json.dumps(RECIPE_TOOLS),
    }


def openai_equivalent(index: int) -> dict[str, Any]:
    """The same conversation in OpenAI form (system message, tool calls, tool messages)."""

    def calls(n: int) -> list[dict[str, Any]]:
        return [{"type": "function", "function": CALL} for _ in range(n)]

    return {
        "messages": [
            {"role": "system", "content": "You are a cook."},
            {"role": "user", "content": f"I have chicken, tomatoes and garlic ({index})."},
            {"role": "assistant", "content": None, "tool_calls": calls(1)},
            {"role": "tool", "content": OBSERVATION},
            {"role": "assistant", "content": "Try Chicken Tomato Garlic Pasta."},
            {"role": "user", "content": "Two more?"},
            {"role": "assistant", "content": None, "tool_calls": calls(2)},
            {"role": "tool", "content": OBSERVATION},
            {"role": "tool", "content": OBSERVATION},
            {"role": "assistant", "content": "Both say pasta."},
        ],
        "tools": RECIPE_TOOLS,
    }


def test_llama_factory_sharegpt_hands_the_template_its_openai_equivalent(tmp_path: Path) -> None:
    sharegpt = chat_of(
        write_jsonl(tmp_path / "lf.jsonl", [llama_factory_row(i) for i in range(3)]),
        "conversations",
    )
    openai = chat_of(
        write_jsonl(tmp_path / "oa.jsonl", [openai_equivalent(i) for i in range(3)]), "messages"
    )
    assert sharegpt.shape == "sharegpt" and sharegpt.tool_call_count == 9
    ours, theirs = template_conversations(sharegpt), template_conversations(openai)
    assert [c.messages for c in ours] == [c.messages for c in theirs]
    assert [c.tools for c in ours] == [c.tools for c in theirs] == [RECIPE_TOOLS] * 3
    assert [c.train for c in ours] == [c.train for c in theirs]
    prompts = template_conversations(sharegpt, prompt=True)
    assert prompts == template_conversations(openai, prompt=True)
    # the function_call turn is the assistant's, trained on: an assistant turn
    assert ours[0].messages[2]["role"] == "assistant"


def test_alpaca_hands_the_template_its_openai_equivalent(tmp_path: Path) -> None:
    rows = [
        {"instruction": "Translate to French.", "input": "cheese", "output": "fromage",
         "system": "You translate."},
        {"instruction": "Name a prime.", "input": "", "output": "7", "system": None},
        {"instruction": "", "input": "only input", "output": "ok", "system": ""},
        {"instruction": "No answer yet.", "input": None, "output": None, "system": None},
    ]  # fmt: skip
    equivalent = [
        {"messages": [{"role": "system", "content": "You translate."},
                      {"role": "user", "content": "Translate to French.\ncheese"},
                      {"role": "assistant", "content": "fromage"}]},
        {"messages": [{"role": "user", "content": "Name a prime."},
                      {"role": "assistant", "content": "7"}]},
        {"messages": [{"role": "user", "content": "only input"},
                      {"role": "assistant", "content": "ok"}]},
        {"messages": [{"role": "user", "content": "No answer yet."}]},
    ]  # fmt: skip
    alpaca = chat_of(write_jsonl(tmp_path / "alpaca.jsonl", rows), "instruction", "input", "output")
    openai = chat_of(write_jsonl(tmp_path / "oa.jsonl", equivalent), "messages")
    assert alpaca.shape == "alpaca" and alpaca.is_conversation and not alpaca.paired
    assert template_conversations(alpaca) == template_conversations(openai)
    assert template_conversations(alpaca, prompt=True) == template_conversations(
        openai, prompt=True
    )
    assert alpaca.reference_answers().to_list() == ["fromage", "7", "ok", None]


def test_alpaca_columns_missing_is_bad_input(tmp_path: Path, run_cli) -> None:
    path = write_jsonl(tmp_path / "a.jsonl", [{"id": "1", "instruction": "x", "output": "y"}])
    with pytest.raises(UnknownColumn, match="no column 'input' for Alpaca's input"):
        chat_of(path, "instruction", "input", "output")
    result = run_cli("prompts", path, "--id", "id", "--text", "instruction", "--text", "input",
                     "--text", "output", "--out", tmp_path / "p.jsonl", "--model", "m")  # fmt: skip
    assert_one_line_error(result, "a.jsonl", "no column 'input'", "Alpaca")


@pytest.mark.parametrize(
    ("value", "fragments"),
    [
        ("lookup(order=1)", ["message 1", "function_call 'value' is not JSON", "lookup(order=1)"]),
        (json.dumps({"arguments": {}}), ["message 1", "without a 'name'"]),
        (json.dumps({"name": "f"}), ["message 1", "(f) has no 'arguments'"]),
        ("[]", ["message 1", "empty list"]),
    ],
)
def test_a_bad_function_call_value_is_bad_input(
    tmp_path: Path, value: str, fragments: list[str]
) -> None:
    good = {"conversations": [{"from": "human", "value": "q"}]}
    bad = {"conversations": [{"from": "human", "value": "q"},
                             {"from": "function_call", "value": value}]}  # fmt: skip
    path = write_jsonl(tmp_path / "c.jsonl", [good, bad])
    with pytest.raises(InvalidConversation) as raised:
        chat_of(path, "conversations")
    text = str(raised.value)
    assert text.startswith(f"{path}:2: column 'conversations', ") and "\n" not in text
    for fragment in fragments:
        assert fragment in text


@pytest.mark.parametrize(
    ("tools", "fragments"),
    [
        ({"name": "f"}, [":2: column 'tools': the value is an object", "a list of function"]),
        ("[{not json", [":2: column 'tools': the value is text that is not JSON"]),
        (
            [{"type": "function", "function": {"description": "no name"}}],
            [":2: column 'tools', tool 0: the function's 'name' is null"],
        ),
        ([{"type": "web_search"}], [":2: column 'tools', tool 0: has type 'web_search'"]),
        ([{"name": "f", "parameters": "{}"}], [":2: column 'tools', tool 0: (f) 'parameters' is"]),
        ([3], [":2: column 'tools', tool 0: is a number"]),
    ],
)
def test_a_bad_tools_value_is_bad_input(tmp_path: Path, tools: Any, fragments: list[str]) -> None:
    messages = [{"role": "user", "content": "q"}]
    rows = [{"messages": messages, "tools": [WEATHER_TOOL]}, {"messages": messages, "tools": tools}]
    if isinstance(tools, str):
        rows[0]["tools"] = json.dumps([WEATHER_TOOL])
    path = write_jsonl(tmp_path / "c.jsonl", rows)
    with pytest.raises(InvalidConversation) as raised:
        chat_of(path, "messages")
    text = str(raised.value)
    assert "\n" not in text
    for fragment in fragments:
        assert fragment in text, (fragment, text)


def test_tools_keep_each_rows_schema(tmp_path: Path) -> None:
    # polars merges the schemas of differing rows into one struct (missing keys as null);
    # each row's tools must reach the template as that row wrote them.
    other = {"type": "function", "function": {"name": "refund", "parameters": {
        "type": "object", "properties": {"amount": {"type": "number"}}}}}  # fmt: skip
    rows = [{"messages": [{"role": "user", "content": "a"}], "tools": [WEATHER_TOOL]},
            {"messages": [{"role": "user", "content": "b"}], "tools": [other]},
            {"messages": [{"role": "user", "content": "c"}]}]  # fmt: skip
    chat = chat_of(write_jsonl(tmp_path / "c.jsonl", rows), "messages")
    assert [c.tools for c in template_conversations(chat)] == [[WEATHER_TOOL], [other], None]


def test_system_and_tools_options_name_other_columns(tmp_path: Path) -> None:
    rows = [{"messages": [{"role": "user", "content": "q"}], "prompt_text": "Be brief.",
             "functions": json.dumps([WEATHER_TOOL]), "system": "not this one"}]  # fmt: skip
    path = write_jsonl(tmp_path / "c.jsonl", rows)
    chat = chat_of(path, "messages", system="prompt_text", tools="functions")
    (conversation,) = template_conversations(chat)
    assert conversation.messages[0] == {"role": "system", "content": "Be brief."}
    assert conversation.tools == [WEATHER_TOOL]
    with pytest.raises(UnknownColumn, match=": tools nope: no such column"):
        chat_of(path, "messages", tools="nope")
    text_frame = pl.DataFrame({"t": ["x"], "system": ["s"]})
    assert read_chat(text_frame, "t", source="f").kind == "text"  # the default is not forced
    with pytest.raises(UsageError, match=r"^system system: applies to conversations"):
        read_chat(text_frame, "t", source="f", system="system")


# --- conversations as JSON text in CSV and Parquet string columns --------------------------


def test_json_text_columns_read_as_the_same_conversations(tmp_path: Path) -> None:
    rows = [openai_equivalent(i) for i in range(4)]
    jsonl = chat_of(write_jsonl(tmp_path / "c.jsonl", rows), "messages")
    flat = pl.DataFrame(
        {
            "messages": [json.dumps(r["messages"]) for r in rows],
            "tools": [json.dumps(r["tools"]) for r in rows],
        }
    )
    flat.write_csv(tmp_path / "c.csv")
    flat.write_parquet(tmp_path / "c.parquet")
    for name in ("c.csv", "c.parquet"):
        chat = chat_of(tmp_path / name, "messages")
        assert chat.kind == "conversation" and chat.json_text
        assert template_conversations(chat) == template_conversations(jsonl)
        assert chat.compared_text().to_list() == jsonl.compared_text().to_list()


def test_a_text_column_that_only_looks_like_json_stays_text(tmp_path: Path) -> None:
    frame = pl.DataFrame({"t": ['[{"role": "user", "content": "x"}]', "[URGENT] refund", None]})
    assert read_chat(frame, "t", source="f").kind == "text"
    frame = pl.DataFrame({"t": ["[1, 2]", "[]"]})
    assert read_chat(frame, "t", source="f").kind == "text"


def test_a_bad_conversation_in_a_csv_names_its_row(tmp_path: Path) -> None:
    flat = pl.DataFrame({"messages": [json.dumps([{"role": "user", "content": "q"}]),
                                      json.dumps([{"role": "bot", "content": "q"}])]})  # fmt: skip
    flat.write_csv(tmp_path / "c.csv")
    with pytest.raises(InvalidConversation, match=r"c\.csv, row 2: column 'messages', message 0"):
        chat_of(tmp_path / "c.csv", "messages")


def test_roles_on_a_text_column_is_bad_input(tmp_path: Path, run_cli) -> None:
    rows = [{"id": str(i), "g": str(i), "text": f"ticket {i}"} for i in range(6)]
    path = write_jsonl(tmp_path / "t.jsonl", rows)
    result = run_cli("split", path, "--out", tmp_path / "s", "--group", "g", "--text", "text",
                     "--roles", "user", "--ratios", "0.5,0.5", "--names", "a,b")  # fmt: skip
    assert_one_line_error(result, "--roles user", "plain text, not conversations")
    write_jsonl(tmp_path / "a.jsonl", rows[:3])
    write_jsonl(tmp_path / "b.jsonl", rows[3:])
    result = run_cli("audit", tmp_path / "a.jsonl", tmp_path / "b.jsonl", "--id", "id",
                     "--text", "text", "--roles", "user")  # fmt: skip
    assert_one_line_error(result, "--roles user", "plain text, not conversations")


def test_json_text_in_csv_gives_the_figures_of_the_same_jsonl(tmp_path: Path, run_cli) -> None:
    rows = [{"id": f"r{i:02d}", "g": str(i // 2), **openai_equivalent(i % 7)} for i in range(30)]
    write_jsonl(tmp_path / "data.jsonl", rows)
    flat = pl.DataFrame(
        {
            "id": [r["id"] for r in rows],
            "g": [r["g"] for r in rows],
            "messages": [json.dumps(r["messages"]) for r in rows],
            "tools": [json.dumps(r["tools"]) for r in rows],
        }
    )
    flat.write_csv(tmp_path / "data.csv")
    args = ["--group", "g", "--id", "id", "--text", "messages", "--sizes", "20,10",
            "--names", "train,test", "--near-dup", "0.9"]  # fmt: skip
    manifests = {}
    for name in ("data.jsonl", "data.csv"):
        out = tmp_path / f"out-{name}"
        result = run_cli("split", tmp_path / name, "--out", out, *args)
        assert result.exit_code == 0, result.stderr
        manifest = json.loads((out / "manifest.json").read_text())
        manifests[name] = manifest
        assignments = pl.read_parquet(out / "assignments.parquet").sort("id")
        manifest["assigned"] = assignments["split"].to_list()
    a, b = manifests["data.jsonl"], manifests["data.csv"]
    assert b["text"]["json_text"] and not a["text"]["json_text"]
    for key in ("splits", "merging", "quality", "assigned"):
        assert a[key] == b[key], key
    assert a["text"]["tool_calls"] == b["text"]["tool_calls"] == 30 * 3
    reports = []
    for name in ("data.jsonl", "data.csv"):
        report = tmp_path / f"{name}.audit.json"
        audit_args = ["--id", "id", "--text", "messages", "--json", report]
        result = run_cli("audit", tmp_path / f"out-{name}", *audit_args)
        assert result.exit_code == 0, result.stderr  # --near-dup kept the copies together
        reports.append(json.loads(report.read_text()))
    assert reports[0]["counts"] == reports[1]["counts"]


# --- LLaMA-Factory v1: content parts {type, value} and loss_weight ------------------------
# data/v1_sft_demo.jsonl of LLaMA-Factory (src/llamafactory/v1/utils/types.py: Content,
# Message): text parts are joined, reasoning parts become the message's reasoning, each
# tool_call part is the JSON text of {name, arguments}, and loss_weight 0 is not trained on.
LF_V1 = {
    "messages": [
        {"role": "user", "content": [{"type": "text", "value": "Weather in "},
                                     {"type": "text", "value": "Paris?"}], "loss_weight": 0.0},
        {"role": "assistant", "content": [
            {"type": "reasoning", "value": "I should call the tool."},
            {"type": "tool_call",
             "value": json.dumps({"name": "get_current_weather",
                                  "arguments": {"location": "Paris, FR", "format": "celsius"}})},
        ], "loss_weight": 1.0},
        {"role": "tool", "content": [{"type": "text", "value": "18 C"}], "loss_weight": 0.0},
        {"role": "assistant", "content": [{"type": "text", "value": "It is 18 C."}],
         "loss_weight": 0.0},
    ],
    "tools": json.dumps([WEATHER_TOOL]),
}  # fmt: skip


def test_llamafactory_v1_parts_read_as_llamafactory_reads_them(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "lf.jsonl", [LF_V1, LF_V1])
    chat = chat_of(path, "messages")
    (conversation, _) = template_conversations(chat)
    user, call, answer, final = conversation.messages
    assert user == {"role": "user", "content": "Weather in Paris?"}
    assert call["reasoning_content"] == "I should call the tool."
    assert call["tool_calls"] == [
        {"type": "function", "function": {"name": "get_current_weather",
                                          "arguments": {"location": "Paris, FR",
                                                        "format": "celsius"}}}
    ]  # fmt: skip
    assert answer["content"] == "18 C" and final["content"] == "It is 18 C."
    assert conversation.train == [False, True, False, False]  # loss_weight 0: not trained on
    assert conversation.tools == [WEATHER_TOOL]
    assert chat.tool_call_count == 2 and chat.flagged_untrained == 6  # 3 turns a row


@pytest.mark.parametrize(
    ("message", "fragment"),
    [
        ({"role": "assistant", "content": [{"type": "text", "value": "x"}], "loss_weight": -1},
         "'loss_weight' is -1"),
        ({"role": "assistant", "content": [{"type": "tool_call", "value": "{bad"}]},
         "content part 0 is not JSON"),
        ({"role": "user", "content": [{"type": "tool_call",
                                       "value": '{"name": "f", "arguments": {}}'}]},
         "a user message has tool_call parts"),
        ({"role": "assistant", "content": [{"type": "text", "value": 5}]},
         "content part 0 has type 'text' but its 'value' is a number"),
    ],
)  # fmt: skip
def test_malformed_llamafactory_v1_messages_name_line_and_message(
    tmp_path: Path, message: dict[str, Any], fragment: str
) -> None:
    rows = [LF_V1, {"messages": [{"role": "user", "content": "q"}, message]}]
    path = write_jsonl(tmp_path / "lf.jsonl", rows)
    with pytest.raises(InvalidConversation, match=r"lf\.jsonl:2: column 'messages', message 1"):
        chat_of(path, "messages")
    with pytest.raises(InvalidConversation) as raised:
        chat_of(path, "messages")
    assert fragment in str(raised.value)


# --- keys given twice inside JSON text, and tool answers that answer nothing ----------------


def test_arguments_text_that_gives_a_key_twice_is_refused(tmp_path: Path) -> None:
    twice = '{"location": "Paris", "location": "Rome"}'
    row = json.loads(json.dumps(OPENAI_FUNCTION_CALLING))
    row["messages"][1]["tool_calls"][0]["function"]["arguments"] = twice
    path = write_jsonl(tmp_path / "c.jsonl", [OPENAI_FUNCTION_CALLING, row])
    with pytest.raises(InvalidConversation) as raised:
        chat_of(path, "messages")
    message = str(raised.value)
    assert "c.jsonl:2: column 'messages', message 1: tool call 0 (get_current_weather)" in message
    assert "'location' twice" in message
    # the same call with the key once reads (the check can pass)
    row["messages"][1]["tool_calls"][0]["function"]["arguments"] = '{"location": "Paris"}'
    assert chat_of(write_jsonl(tmp_path / "ok.jsonl", [row]), "messages").tool_call_count == 1


def test_a_sharegpt_function_call_that_gives_a_key_twice_is_refused(tmp_path: Path) -> None:
    value = '{"name": "f", "arguments": {"a": 1, "a": 2}}'
    row = {"conversations": [{"from": "human", "value": "q"},
                             {"from": "function_call", "value": value},
                             {"from": "observation", "value": "r"}]}  # fmt: skip
    path = write_jsonl(tmp_path / "s.jsonl", [row])
    with pytest.raises(InvalidConversation, match=r"s\.jsonl:1: .*message 1: .*'a' twice"):
        chat_of(path, "conversations")


def test_a_tool_message_answering_an_unknown_id_after_a_call_is_refused(tmp_path: Path) -> None:
    row = json.loads(json.dumps(OPENAI_FUNCTION_CALLING))
    row["messages"].append({"role": "tool", "tool_call_id": "nope", "content": "18 C"})
    path = write_jsonl(tmp_path / "c.jsonl", [row])
    with pytest.raises(InvalidConversation, match="answers tool_call_id 'nope', which no earlier"):
        chat_of(path, "messages")


def test_an_alpaca_output_that_is_a_list_is_refused(tmp_path: Path) -> None:
    rows = [
        {"instruction": "Sum", "input": "1 2", "output": "3"},
        {"instruction": "Sum", "input": "2 2", "output": ["4"]},
    ]
    path = write_jsonl(tmp_path / "a.jsonl", rows)
    with pytest.raises(
        Exception, match=r"a\.jsonl:2: column 'output' \(Alpaca's output\) holds a list"
    ):
        chat_of(path, "instruction", "input", "output")
