"""evalkit.chat: every shape, every malformed conversation, and one semantics on every path."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalkit.chat import normalize_value, parse_roles, read_chat
from evalkit.chat.frame import BadRow, normalize_column, normalize_values
from evalkit.errors import InvalidConversation, InvalidTable, UsageError
from evalkit.io import read_table

SYSTEM = {"role": "system", "content": "You triage support tickets."}


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def column(values: list[Any]) -> pl.Series:
    """A polars column typed from every value (pyarrow unions struct fields over rows)."""
    return pl.Series("m", pa.array(values))


def chat_from_file(path: Path, *columns: str):
    return read_chat(read_table(path), list(columns) or ["messages"])


def as_pairs(conversation: list[dict[str, str]]) -> list[tuple[str, str]]:
    return [(message["role"], message["content"]) for message in conversation]


# --- shapes ---------------------------------------------------------------------------


def test_openai_messages_with_string_content(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "chat.jsonl",
        [
            {
                "messages": [
                    SYSTEM,
                    {"role": "user", "content": "hi"},
                    {"role": "assistant", "content": "A"},
                ]
            },
            {
                "messages": [
                    SYSTEM,
                    {"role": "user", "content": "yo"},
                    {"role": "assistant", "content": "B"},
                ]
            },
        ],
    )
    chat = chat_from_file(path)
    assert chat.kind == "conversation" and chat.shape == "messages"
    assert as_pairs(chat.messages()[0]) == [
        ("system", "You triage support tickets."),
        ("user", "hi"),
        ("assistant", "A"),
    ]
    assert chat.compared_text().to_list() == ["hi\nA", "yo\nB"]
    assert chat.compared_text(("user",)).to_list() == ["hi", "yo"]
    # lengths count every turn, the system prompt included
    assert chat.char_lengths().to_list() == [len(SYSTEM["content"]) + 3] * 2
    assert chat.reference_answers().to_list() == ["A", "B"]
    assert as_pairs(chat.prompts().to_list()[0]) == [
        ("system", SYSTEM["content"]),
        ("user", "hi"),
    ]


def test_content_parts_join_text_and_count_the_rest(tmp_path: Path) -> None:
    parts = [
        {"type": "text", "text": "look at "},
        {"type": "image_url", "image_url": {"url": "file:///a.png"}},
        {"type": "text", "text": "this"},
    ]
    path = write_jsonl(
        tmp_path / "parts.jsonl", [{"messages": [{"role": "user", "content": parts}]}]
    )
    chat = chat_from_file(path)
    assert [as_pairs(c) for c in chat.messages()] == [[("user", "look at this")]]
    assert chat.skipped_parts == 1


def test_string_and_parts_content_mixed_across_rows_are_read_exactly(tmp_path: Path) -> None:
    # polars alone would read the parts as their JSON text here
    path = write_jsonl(
        tmp_path / "mixed.jsonl",
        [
            {"messages": [{"role": "user", "content": "plain"}]},
            {"messages": [{"role": "user", "content": [{"type": "text", "text": "parts"}]}]},
        ],
    )
    assert [as_pairs(c) for c in chat_from_file(path).messages()] == [
        [("user", "plain")],
        [("user", "parts")],
    ]


def test_sharegpt_roles_are_mapped(tmp_path: Path) -> None:
    # function_call is the assistant's own call (LLaMA-Factory's function_tag), observation
    # the tool's answer.
    call = json.dumps({"name": "lookup", "arguments": {"order": 1}})
    conversation = [
        {"from": "system", "value": "S"},
        {"from": "human", "value": "q"},
        {"from": "function_call", "value": call},
        {"from": "observation", "value": "obs"},
        {"from": "gpt", "value": "a"},
    ]
    path = write_jsonl(tmp_path / "sharegpt.jsonl", [{"conversations": conversation}])
    chat = chat_from_file(path, "conversations")
    assert chat.shape == "sharegpt"
    assert [m["role"] for m in chat.messages()[0]] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
    ]
    assert chat.compared_text().to_list() == ['q\n\nlookup {"order": 1}\nobs\na']


def test_prompt_completion_conversations_are_joined(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "pc.jsonl",
        [
            {
                "prompt": [{"role": "user", "content": "q1"}],
                "completion": [{"role": "assistant", "content": "a1"}],
            }
        ],
    )
    chat = chat_from_file(path, "prompt", "completion")
    assert chat.paired and chat.kind == "conversation"
    assert as_pairs(chat.messages()[0]) == [("user", "q1"), ("assistant", "a1")]
    assert chat.prompt_turns is not None and chat.prompt_turns.to_list() == [1]


def test_prompt_completion_text_columns() -> None:
    frame = pl.DataFrame({"prompt": ["q1", None], "completion": ["a1", None]})
    chat = read_chat(frame, ["prompt", "completion"], source="frame")
    assert chat.kind == "text" and chat.paired
    assert chat.compared_text().to_list() == ["q1\na1", None]
    assert chat.char_lengths().to_list() == [4, None]


def test_text_column_stays_text_even_when_it_starts_like_json(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "t.jsonl", [{"text": "[URGENT] refund"}, {"text": "{name} here"}])
    chat = chat_from_file(path, "text")
    assert chat.kind == "text"
    assert chat.compared_text().to_list() == ["[URGENT] refund", "{name} here"]


def test_tool_call_message_without_content_has_empty_text() -> None:
    call = {"id": "1", "type": "function", "function": {"name": "weather", "arguments": "{}"}}
    frame = pl.DataFrame(
        {
            "messages": [
                [
                    {"role": "user", "content": "weather?", "tool_calls": None},
                    {"role": "assistant", "content": None, "tool_calls": [call]},
                ]
            ]
        }
    )
    chat = read_chat(frame, "messages", source="frame")
    assert as_pairs(chat.messages()[0]) == [("user", "weather?"), ("assistant", "")]


def test_parquet_and_jsonl_give_the_same_conversations(tmp_path: Path) -> None:
    rows = [
        {
            "messages": [
                SYSTEM,
                {"role": "user", "content": f"q{i}"},
                {"role": "assistant", "content": f"a{i}"},
            ]
        }
        for i in range(20)
    ]
    jsonl = write_jsonl(tmp_path / "c.jsonl", rows)
    frame = read_table(jsonl).frame
    frame.write_parquet(tmp_path / "c.parquet")
    from_jsonl = chat_from_file(jsonl)
    from_parquet = chat_from_file(tmp_path / "c.parquet")
    assert from_jsonl.messages() == from_parquet.messages()


# --- --roles ------------------------------------------------------------------------


def test_roles_default_leaves_out_the_system_prompt() -> None:
    assert parse_roles(None) == ("user", "assistant", "tool")
    assert parse_roles("assistant,user") == ("user", "assistant")
    with pytest.raises(UsageError, match="unknown role 'bot'"):
        parse_roles("user,bot")
    with pytest.raises(UsageError, match="at least one"):
        parse_roles(" , ")


# --- bad input ----------------------------------------------------------------------

GOOD = {"messages": [{"role": "user", "content": "fine"}]}


@pytest.mark.parametrize(
    ("bad", "fragments"),
    [
        ({"messages": {"role": "user", "content": "x"}}, ["c.jsonl:2", "is an object, not a list"]),
        ({"messages": []}, ["c.jsonl:2", "empty list"]),
        ({"messages": [{"content": "x"}]}, ["c.jsonl:2", "message 0", "no 'role'"]),
        ({"messages": [{"role": "user"}]}, ["c.jsonl:2", "message 0", "no 'content'"]),
        (
            {"messages": [{"role": "user", "content": "a"}, {"role": "bot", "content": "x"}]},
            ["c.jsonl:2", "message 1", "unknown role 'bot'"],
        ),
        ({"messages": "just text"}, ["c.jsonl:2", "holds text here but a conversation at line 1"]),
        ({"messages": [{"role": "user", "content": 3}]}, ["c.jsonl:2", "message 0", "is a number"]),
        ({"messages": [{"from": "human", "value": "x"}]}, ["c.jsonl:2", "one shape per column"]),
        (
            {"messages": [{"role": "user", "content": [{"type": "text"}]}]},
            ["c.jsonl:2", "message 0", "content part 0"],
        ),
        ({"messages": None}, ["c.jsonl:2", "is null, not a list"]),
    ],
)
def test_malformed_conversations_name_file_line_and_message(
    tmp_path: Path, bad: dict[str, Any], fragments: list[str]
) -> None:
    path = write_jsonl(tmp_path / "c.jsonl", [GOOD, bad])
    with pytest.raises(InvalidConversation) as raised:
        chat_from_file(path)
    message = str(raised.value)
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message, (fragment, message)


def test_blank_lines_do_not_shift_the_reported_line(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps(GOOD) + "\n\n\n" + json.dumps({"messages": []}) + "\n")
    with pytest.raises(InvalidConversation, match=r"c\.jsonl:4: "):
        chat_from_file(path)


def test_frames_name_the_row() -> None:
    frame = pl.DataFrame(
        {"m": [[{"role": "user", "content": "a"}], [{"role": "x", "content": "b"}]]}
    )
    with pytest.raises(InvalidConversation, match="my table, row 2: column 'm', message 0"):
        read_chat(frame, "m", source="my table")


def test_text_and_conversation_columns_cannot_pair() -> None:
    frame = pl.DataFrame({"p": ["q"], "c": [[{"role": "assistant", "content": "a"}]]})
    with pytest.raises(InvalidConversation, match="text p holds text but text c"):
        read_chat(frame, ["p", "c"], source="f")


def test_a_number_column_is_not_text() -> None:
    with pytest.raises(InvalidTable, match="holds Int64 values"):
        read_chat(pl.DataFrame({"n": [1, 2]}), "n", source="f")


def test_four_text_columns_are_refused() -> None:
    frame = pl.DataFrame({"a": ["x"], "b": ["y"], "c": ["z"], "d": ["w"]})
    with pytest.raises(UsageError, match=r"one column, two .* or three"):
        read_chat(frame, ["a", "b", "c", "d"], source="f")


# --- one semantics: the vectorised path equals the reference --------------------------

# No "tool": a tool message answers a call an earlier turn made (tested on its own below).
roles = st.sampled_from(["system", "user", "assistant", "developer"])
texts = st.text(max_size=12)
part = st.one_of(
    st.builds(lambda t: {"type": "text", "text": t}, texts),
    st.just({"type": "image_url", "image_url": {"url": "u"}}),
)
content = st.one_of(texts, st.lists(part, min_size=0, max_size=3))
message = st.builds(lambda r, c: {"role": r, "content": c}, roles, content)
conversation = st.lists(message, min_size=1, max_size=5)


string_message = st.builds(lambda r, c: {"role": r, "content": c}, roles, texts)
parts_message = st.builds(
    lambda r, c: {"role": r, "content": c}, roles, st.lists(part, min_size=1, max_size=3)
)


@settings(max_examples=80, deadline=None)
@given(
    st.one_of(
        st.lists(st.lists(string_message, min_size=1, max_size=5), min_size=1, max_size=6),
        st.lists(st.lists(parts_message, min_size=1, max_size=5), min_size=1, max_size=6),
    )
)
def test_vectorised_path_equals_the_reference(conversations: list[list[dict[str, Any]]]) -> None:
    # A column of one content type, as Parquet (or a clean JSONL file) gives it.
    reference = normalize_values(conversations)
    fast = normalize_column(column(conversations))
    assert fast.conversations.to_list() == reference.conversations.to_list()
    assert fast.skipped_parts == reference.skipped_parts
    assert fast.shape == reference.shape == "messages"


@settings(max_examples=60, deadline=None)
@given(conversation)
def test_normalising_is_idempotent_and_keeps_the_order(value: list[dict[str, Any]]) -> None:
    once = normalize_value(value)
    again = normalize_value([{"role": role, "content": text} for role, text in once.pairs])
    assert again.messages == once.messages
    assert len(once.messages) == len(value)
    mapped = {"developer": "system"}
    assert [role for role, _ in once.pairs] == [mapped.get(m["role"], m["role"]) for m in value]


@settings(max_examples=40, deadline=None)
@given(st.lists(conversation, min_size=1, max_size=5), st.data())
def test_a_planted_fault_is_found_at_the_same_row_on_both_paths(
    conversations: list[list[dict[str, Any]]], data: st.DataObject
) -> None:
    rows = [[{"role": m["role"], "content": "x"} for m in c] for c in conversations]
    row = data.draw(st.integers(0, len(rows) - 1))
    index = data.draw(st.integers(0, len(rows[row]) - 1))
    rows[row][index] = {"role": "narrator", "content": "x"}
    with pytest.raises(BadRow) as fast:
        normalize_column(column(rows))
    with pytest.raises(BadRow) as reference:
        normalize_values(rows)
    assert fast.value.row == reference.value.row == row


sharegpt_names = st.sampled_from(["system", "human", "user", "gpt", "assistant"])
sharegpt_conversation = st.lists(
    st.builds(lambda name, value: {"from": name, "value": value}, sharegpt_names, texts),
    min_size=1,
    max_size=5,
)


@settings(max_examples=60, deadline=None)
@given(sharegpt_conversation)
def test_sharegpt_normalising_is_idempotent_and_keeps_the_order(
    value: list[dict[str, Any]],
) -> None:
    from evalkit.chat.sharegpt import SHAREGPT

    once = normalize_value(value)
    assert once.shape == "sharegpt"
    assert once.pairs == [(SHAREGPT.roles[m["from"]], m["value"]) for m in value]
    again = normalize_value([{"role": role, "content": text} for role, text in once.pairs])
    assert again.messages == once.messages


@settings(max_examples=30, deadline=None)
@given(st.lists(conversation, min_size=1, max_size=5))
def test_a_normalised_column_written_and_read_again_is_unchanged(
    conversations: list[list[dict[str, Any]]],
) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        first_path = write_jsonl(Path(folder) / "a.jsonl", [{"m": c} for c in conversations])
        first = chat_from_file(first_path, "m").messages()
        pairs = [[{"role": m["role"], "content": m["content"]} for m in c] for c in first]
        second_path = write_jsonl(Path(folder) / "b.jsonl", [{"m": c} for c in pairs])
        assert chat_from_file(second_path, "m").messages() == first


def test_split_keeps_content_types_a_frame_cannot_hold(tmp_path: Path, run_cli) -> None:
    # OpenAI's vision fine-tuning files: string content in some messages, parts in others.
    # polars converts such a column, so a split file written from the frame would change
    # the values: JSONL output holds the input's own lines, Parquet and CSV the values'
    # JSON text, which evalkit reads back as the same conversations.
    def row(index: int) -> dict[str, Any]:
        parts = [{"type": "text", "text": f"what is in picture {index}"}]
        parts.append({"type": "image_url", "image_url": {"url": f"file:///{index}.png"}})
        messages = [
            {"role": "user", "content": parts},
            {"role": "assistant", "content": f"a cat {index}"},
        ]
        return {"id": f"i{index}", "g": str(index // 2), "messages": messages}

    rows = [row(index) for index in (5, 1, 4, 0, 3, 2)]
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(b"".join(json.dumps(r).encode() + b"\r\n" for r in rows))
    args = ["split", path, "--group", "g", "--id", "id", "--text", "messages",
            "--sizes", "4,2", "--names", "train,test"]  # fmt: skip
    result = run_cli(*args, "--out", tmp_path / "csv", "--format", "csv")
    assert result.exit_code == 0, result.stderr
    from_jsonl = chat_from_file(path)
    for name in ("train", "test"):
        from_csv = chat_from_file(tmp_path / "csv" / f"{name}.csv")
        csv_ids = pl.read_csv(tmp_path / "csv" / f"{name}.csv")["id"].to_list()
        by_row = dict(zip([r["id"] for r in rows], from_jsonl.messages(), strict=True))
        assert from_csv.messages() == [by_row[i] for i in csv_ids]
    result = run_cli(*args, "--out", tmp_path / "parquet", "--format", "parquet")
    assert result.exit_code == 0, result.stderr
    assert "written as JSON text: messages" in result.stdout
    by_id = {r["id"]: r for r in rows}
    for name in ("train", "test"):
        table = pl.read_parquet(tmp_path / "parquet" / f"{name}.parquet")
        assert table.schema["messages"] == pl.String
        for identifier, text in zip(table["id"], table["messages"], strict=True):
            assert json.loads(text) == by_id[identifier]["messages"]
    out = tmp_path / "out"
    result = run_cli(*args, "--out", out, "--format", "jsonl")
    assert result.exit_code == 0, result.stderr
    assignments = pl.read_parquet(out / "assignments.parquet")
    for name in ("train", "test"):
        written = [json.loads(line) for line in (out / f"{name}.jsonl").read_text().splitlines()]
        ids = sorted(assignments.filter(pl.col("split") == name)["id"].to_list())
        assert written == [by_id[i] for i in ids]  # the values as written, sorted by id
    assert "\r" not in (out / "train.jsonl").read_text()
    audit = run_cli("audit", out, "--id", "id", "--text", "messages", "--group", "g")
    assert audit.exit_code == 0, audit.stderr
    # The Parquet split reads back as the same conversations (JSON text in a string column).
    again = run_cli("audit", tmp_path / "parquet", "--id", "id", "--text", "messages",
                    "--group", "g")  # fmt: skip
    assert again.exit_code == 0, again.stderr
    assert "conversations (messages, JSON text)" in again.stdout


def test_text_parts_whose_text_is_null_in_every_row_are_bad_input(tmp_path: Path) -> None:
    # polars types a field that is null in every row as Null, not String: the
    # vectorised path must still report the message, not fail on the type.
    rows = [{"messages": [{"role": "user", "content": [{"type": "text", "text": None}]}]}]
    path = write_jsonl(tmp_path / "c.jsonl", rows)
    with pytest.raises(InvalidConversation, match=r"c\.jsonl:1: .*message 0: content part 0"):
        chat_from_file(path)
    frame = read_table(path).frame
    frame.write_parquet(tmp_path / "c.parquet")
    with pytest.raises(InvalidConversation, match=r"row 1: .*message 0: content part 0"):
        read_chat(read_table(tmp_path / "c.parquet"), "messages", source="c.parquet")


@pytest.mark.parametrize(
    ("message", "fragment"),
    [
        ({"role": None, "content": "x"}, "no 'role'"),
        ({"from": None, "value": "x"}, "no 'role'"),
        ({"role": "user", "content": None}, "no 'content'"),
        ({"from": "human", "value": None}, "no 'value'"),
    ],
)
def test_message_keys_null_in_every_row_are_bad_input(
    tmp_path: Path, message: dict[str, Any], fragment: str
) -> None:
    # A key null in every row is typed Null; the role names (replace_strict)
    # must still be read as text and the message reported, on either format.
    path = write_jsonl(tmp_path / "c.jsonl", [{"messages": [message]}] * 2)
    with pytest.raises(InvalidConversation, match=rf"c\.jsonl:1: .*message 0: .*{fragment}"):
        chat_from_file(path)
    read_table(path).frame.write_parquet(tmp_path / "c.parquet")
    with pytest.raises(InvalidConversation, match=rf"row 1: .*message 0: .*{fragment}"):
        read_chat(read_table(tmp_path / "c.parquet"), "messages", source="c.parquet")


def test_a_text_column_null_in_every_row_is_text() -> None:
    # Typed Null, it must read as the String column it stands for (null texts).
    frame = pl.DataFrame(
        {"t": [None, None], "c": ["a", "b"]}, schema={"t": pl.Null, "c": pl.String}
    )
    chat = read_chat(frame, "t", source="f")
    assert chat.kind == "text"
    assert chat.char_lengths().to_list() == [None, None]
    assert chat.compared_text().to_list() == [None, None]
    paired = read_chat(frame, ["c", "t"], source="f")
    assert paired.char_lengths().to_list() == [1, 1]
    assert paired.compared_text().to_list() == ["a", "b"]


def test_a_categorical_text_column_is_text() -> None:
    # pandas' category dtype reaches polars from Parquet as Categorical.
    frame = pl.DataFrame({"t": ["ab", "cde"]}).with_columns(pl.col("t").cast(pl.Categorical))
    chat = read_chat(frame, "t", source="f")
    assert chat.kind == "text"
    assert chat.char_lengths().to_list() == [2, 3]


def test_binary_content_is_named_binary_data() -> None:
    # Parquet can hold bytes where text belongs; the message must not read "is a bytes".
    frame = pl.DataFrame({"m": [[{"role": "user", "content": "x"}]]}).with_columns(
        pl.col("m").list.eval(
            pl.struct(
                pl.element().struct.field("role"),
                pl.element().struct.field("content").cast(pl.Binary),
            )
        )
    )
    with pytest.raises(InvalidConversation, match="message 0: 'content' is binary data; it must"):
        read_chat(frame, "m", source="f")


@pytest.mark.parametrize(
    ("bad", "fix"),
    [
        ({"messages": None}, 'write each conversation as [{"role": ..., "content": ...}, ...]'),
        ({"messages": [3]}, 'write each message as {"role": ..., "content": ...}'),
        ({"messages": [{"role": "user"}]}, "give every message its text"),
        (
            {"messages": [{"role": "user", "content": [{"type": "text", "text": None}]}]},
            "give the part its text, or remove it",
        ),
    ],
)
def test_malformed_conversations_say_how_to_fix_them(
    tmp_path: Path, bad: dict[str, Any], fix: str
) -> None:
    path = write_jsonl(tmp_path / "c.jsonl", [GOOD, bad])
    with pytest.raises(InvalidConversation, match=r"c\.jsonl:2: ") as raised:
        chat_from_file(path)
    assert fix in str(raised.value)


def test_a_tool_message_before_any_call_is_refused_on_both_paths() -> None:
    """An observation that answers no call (issue 32): the same row on either path."""
    import polars as pl

    good = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]
    bad = [{"role": "user", "content": "q"}, {"role": "tool", "content": "42"}]
    rows = [good, good, bad, good]
    with pytest.raises(BadRow) as fast:
        normalize_column(pl.Series("m", rows))
    with pytest.raises(BadRow) as reference:
        normalize_values(rows)
    assert fast.value.row == reference.value.row == 2
    assert "comes before any tool call" in str(reference.value.__cause__)
    sharegpt = [{"from": "human", "value": "q"}, {"from": "observation", "value": "42"}]
    with pytest.raises(BadRow) as caught:
        normalize_values([sharegpt])
    assert caught.value.row == 0
