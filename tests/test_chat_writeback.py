"""What evalkit writes back is what it read: split files and prompt requests.

* ``split --format jsonl`` writes each input line byte for byte, on lines a
  re-serialiser would change (key order, unicode escapes, spacing, number forms);
* Parquet output keeps the input's values: no key added to a message or a tool
  schema, Parquet in -> Parquet out keeps every value;
* ``prompts`` requests keep tool calls, tool answers and names, carry the row's
  tools, and obey the Chat Completions API's rules on every row (checked here by
  an independent reading of those rules).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import assert_one_line_error

from evalkit.chat import read_chat, template_conversations
from evalkit.io import read_table

TOOLS_A = [{"type": "function", "function": {"name": "lookup_order", "parameters": {
    "type": "object", "properties": {"order_id": {"type": "string"}}}}}]  # fmt: skip
TOOLS_B = [{"type": "function", "function": {"name": "refund", "description": "Refund",
            "parameters": {"type": "object", "properties": {"amount": {"type": "number"}},
                           "required": ["amount"]}}}]  # fmt: skip


def conversation(index: int) -> list[dict[str, Any]]:
    """A tool-calling conversation; odd rows make two calls, every third row has no tools."""
    lookup = json.dumps({"order_id": f"ORD-{index}"})
    calls = [{"id": f"c{index}a", "type": "function", "function": {
        "name": "lookup_order", "arguments": lookup}}]  # fmt: skip
    if index % 2:
        calls.append({"id": f"c{index}b", "type": "function", "function": {
            "name": "refund", "arguments": '{"amount": 12.5}'}})  # fmt: skip
    answers = [{"role": "tool", "tool_call_id": c["id"], "content": "ok"} for c in calls]
    return [
        {"role": "system", "content": "Café support, répondez en JSON."},
        {"role": "user", "content": f"Où est ma commande ORD-{index} ?"},
        {"role": "assistant", "content": "Je regarde." if index % 3 else None, "tool_calls": calls},
        *answers,
        {"role": "assistant", "content": '{"status": "shipped"}', "weight": 1},
    ]


def awkward_lines(n: int) -> list[bytes]:
    """JSONL lines a re-serialiser would change: key order, escapes, spacing, number forms."""
    lines = []
    for index in range(n):
        record: dict[str, Any] = {"messages": conversation(index), "id": f"t{index:02d}",
                                  "g": str(index // 2)}  # fmt: skip
        if index % 3:
            record["tools"] = TOOLS_A if index % 2 else TOOLS_B
        text = json.dumps(record, ensure_ascii=index % 2 == 0)  # \u00e9 escapes on even rows
        if index % 4 == 0:
            text = text.replace('": ', '" :  ').replace(", ", ",")  # odd spacing
        if index % 5 == 0:
            text = text.replace('"amount": 12.5', '"amount": 1.25e1')
        lines.append(text.encode("utf-8"))
    return lines


def write_lines(path: Path, lines: list[bytes]) -> Path:
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    return path


SPLIT = ["--group", "g", "--id", "id", "--text", "messages", "--sizes", "14,6",
         "--names", "train,test", "--seed", "3"]  # fmt: skip


def test_jsonl_split_files_hold_the_input_lines_byte_for_byte(tmp_path: Path, run_cli) -> None:
    lines = awkward_lines(20)
    data = write_lines(tmp_path / "tools.jsonl", lines)
    out = tmp_path / "out"
    result = run_cli("split", data, "--out", out, *SPLIT, "--format", "jsonl")
    assert result.exit_code == 0, result.stderr
    by_id = {json.loads(line)["id"]: line for line in lines}
    assignments = pl.read_parquet(out / "assignments.parquet")
    for name in ("train", "test"):
        written = (out / f"{name}.jsonl").read_bytes().split(b"\n")[:-1]
        ids = sorted(assignments.filter(pl.col("split") == name)["id"].to_list())
        assert written == [by_id[i] for i in ids]
    # and the frame's own writer would not have kept them: the test can fail
    frame_lines = read_table(data).frame.write_ndjson().encode().split(b"\n")
    assert sum(line not in lines for line in frame_lines if line) == 20


def test_parquet_split_files_add_no_keys(tmp_path: Path, run_cli) -> None:
    data = write_lines(tmp_path / "tools.jsonl", awkward_lines(20))
    out = tmp_path / "out"
    result = run_cli("split", data, "--out", out, *SPLIT)
    assert result.exit_code == 0, result.stderr
    assert "written as JSON text: messages, tools" in result.stdout
    assert json.loads((out / "manifest.json").read_text())["json_text_columns"] == [
        "messages", "tools"
    ]  # fmt: skip
    records = {r["id"]: r for r in map(json.loads, data.read_text().splitlines())}
    for name in ("train", "test"):
        table = pl.read_parquet(out / f"{name}.parquet")
        for row in table.iter_rows(named=True):
            original = records[row["id"]]
            assert json.loads(row["messages"]) == original["messages"]
            tools = json.loads(row["tools"]) if row["tools"] is not None else None
            assert tools == original.get("tools")
    # Read back, the Parquet split gives the template what the JSONL input gives it.
    jsonl = read_chat(read_table(data), "messages")
    expected = {r["id"]: c for r, c in zip(records.values(), template_conversations(jsonl),
                                           strict=True)}  # fmt: skip
    for name in ("train", "test"):
        path = out / f"{name}.parquet"
        written = read_table(path)
        chat = read_chat(written, "messages")
        assert chat.json_text
        for identifier, got in zip(written.frame["id"], template_conversations(chat),
                                   strict=True):  # fmt: skip
            assert got == expected[identifier]


def test_parquet_in_parquet_out_keeps_every_value(tmp_path: Path, run_cli) -> None:
    records = [json.loads(line) for line in awkward_lines(20)]
    table = pa.Table.from_pylist(records)  # pyarrow unifies the structs, as HF datasets does
    pq.write_table(table, tmp_path / "tools.parquet")
    out = tmp_path / "out"
    result = run_cli("split", tmp_path / "tools.parquet", "--out", out, *SPLIT)
    assert result.exit_code == 0, result.stderr
    written = pa.concat_tables(
        [pq.read_table(out / f"{name}.parquet") for name in ("train", "test")]
    ).to_pylist()
    original = {row["id"]: row for row in table.to_pylist()}
    assert len(written) == 20
    for row in written:
        assert row == original[row["id"]]


# --- prompts: valid Chat Completions requests on every row -------------------------------

ROLE_KEYS = {
    "system": {"role", "content", "name"},
    "developer": {"role", "content", "name"},
    "user": {"role", "content", "name"},
    "assistant": {"role", "content", "name", "tool_calls"},
    "tool": {"role", "content", "tool_call_id", "name"},
}


def assert_valid_chat_request(body: dict[str, Any]) -> None:
    """The OpenAI chat API's rules for a request's messages and tools, read independently."""
    messages = body["messages"]
    assert messages, "a request needs messages"
    pending: set[str] | None = None
    for index, message in enumerate(messages):
        role = message["role"]
        assert set(message) <= ROLE_KEYS[role], (index, message)
        if role == "tool":
            assert pending is not None, f"message {index}: a tool message answers no call"
            assert message["tool_call_id"] in pending, (index, message, pending)
            pending.discard(message["tool_call_id"])
            assert isinstance(message["content"], str)
            continue
        assert not pending, f"message {index}: calls {pending} are not answered"
        pending = None
        if role == "assistant":
            calls = message.get("tool_calls")
            assert message.get("content") or calls, f"message {index}: an empty assistant turn"
            if calls:
                ids = [c["id"] for c in calls]
                assert all(isinstance(i, str) and i for i in ids) and len(set(ids)) == len(ids)
                for item in calls:
                    assert item["type"] == "function"
                    assert isinstance(item["function"]["name"], str)
                    assert isinstance(item["function"]["arguments"], str)
                pending = set(ids)
        else:
            assert isinstance(message["content"], str)
    assert not pending, f"calls {pending} are not answered"
    if "tools" in body:
        assert body["tools"], "an empty tools list is refused"
        for tool in body["tools"]:
            assert tool["type"] == "function" and isinstance(tool["function"]["name"], str)


def read_requests(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_prompts_of_tool_data_are_valid_requests(tmp_path: Path, run_cli) -> None:
    data = write_lines(tmp_path / "tools.jsonl", awkward_lines(20))
    out = tmp_path / "p.jsonl"
    result = run_cli("prompts", data, "--id", "id", "--text", "messages", "--out", out,
                     "--model", "ft")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert "tools: 13 prompts send the row's tools (column tools)" in result.stdout
    records = {r["id"]: r for r in map(json.loads, data.read_text().splitlines())}
    requests = read_requests(out)
    assert len(requests) == 20
    for request in requests:
        body = request["body"]
        assert_valid_chat_request(body)
        original = records[request["custom_id"]]
        assert body.get("tools") == original.get("tools")
        # everything before the reference answer, calls and answers as written
        sent = body["messages"]
        expected = original["messages"][:-1]
        assert len(sent) == len(expected)
        for got, want in zip(sent, expected, strict=True):
            assert got.get("tool_calls") == want.get("tool_calls")
            assert got.get("tool_call_id") == want.get("tool_call_id")
            assert got["content"] == want["content"]  # null beside calls stays null
            assert "weight" not in got


def test_sharegpt_prompts_get_call_ids_and_stay_valid(tmp_path: Path, run_cli) -> None:
    from test_chat_dialects import RECIPE_TOOLS, llama_factory_row

    rows = [{"id": i, **llama_factory_row(i)} for i in range(3)]
    data = tmp_path / "lf.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "p.jsonl"
    result = run_cli("prompts", data, "--id", "id", "--text", "conversations", "--out", out,
                     "--model", "ft")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert "call ids made up: 18" in result.stdout  # 3 calls and 3 answers per row
    assert "tool schemas wrapped: 3" in result.stdout
    for request in read_requests(out):
        body = request["body"]
        assert_valid_chat_request(body)
        assert body["tools"] == [{"type": "function", "function": RECIPE_TOOLS[0]}]
        assert body["messages"][0] == {"role": "system", "content": "You are a cook."}
        first_call = body["messages"][2]
        assert first_call["content"] is None and first_call["tool_calls"][0]["id"] == "call_2_0"
        assert json.loads(first_call["tool_calls"][0]["function"]["arguments"]) == {
            "ingredients": ["chicken", "tomatoes", "garlic"]
        }


@pytest.mark.parametrize(
    ("messages", "fragments"),
    [
        ([{"role": "user", "content": "q"}, {"role": "tool", "content": "x"},
          {"role": "assistant", "content": "a"}],
         ["message 1", "comes before any tool call"]),
        ([{"role": "user", "content": "q"}, {"role": "assistant", "content": ""},
          {"role": "user", "content": "q2"}, {"role": "assistant", "content": "a"}],
         ["message 1", "neither text nor tool calls"]),
        ([{"role": "user", "content": "q"}, {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
          {"role": "user", "content": "q2"}, {"role": "assistant", "content": "a"}],
         ["message 1", "calls f (c) but no tool message answers before message 2"]),
    ],
)  # fmt: skip
def test_a_prompt_the_api_would_refuse_is_bad_input(
    tmp_path: Path, run_cli, messages: list[dict[str, Any]], fragments: list[str]
) -> None:
    good = {"id": "a", "messages": [{"role": "user", "content": "q"},
                                    {"role": "assistant", "content": "a"}]}  # fmt: skip
    data = tmp_path / "c.jsonl"
    data.write_text(json.dumps(good) + "\n" + json.dumps({"id": "b", "messages": messages}) + "\n")
    result = run_cli("prompts", data, "--id", "id", "--text", "messages", "--out",
                     tmp_path / "p.jsonl", "--model", "m")  # fmt: skip
    assert_one_line_error(result, "c.jsonl:2", "column 'messages'", *fragments)
    assert not (tmp_path / "p.jsonl").exists()


def test_jsonl_prompts_carry_tools_beside_the_messages(tmp_path: Path, run_cli) -> None:
    data = write_lines(tmp_path / "tools.jsonl", awkward_lines(6))
    out = tmp_path / "p.jsonl"
    result = run_cli("prompts", data, "--id", "id", "--text", "messages", "--out", out,
                     "--format", "jsonl")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    lines = read_requests(out)
    assert [("tools" in line) for line in lines] == [bool(i % 3) for i in range(6)]
    for line in lines:
        assert_valid_chat_request(line)
