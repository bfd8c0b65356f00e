"""The dialect registry: one registration adds a source form of conversations everywhere.

A throwaway message dialect registered here (``{speaker, text}`` messages)
is recognised by every reader path (a nested column read vectorised, JSON
text in a CSV column read value by value, JSON lines), its speakers become
the four roles, its refusals name its own keys, and a column mixing it with
OpenAI's messages is refused; the dialects the docs describe are exactly the
registered ones.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest

from evalkit.chat import read_chat
from evalkit.chat.alpaca import ALPACA
from evalkit.chat.dialect import MessageDialect
from evalkit.chat.dialects import (
    DIALECTS,
    columns_dialect,
    message_dialects,
    recognise_message,
    register_dialect,
)
from evalkit.chat.normalize import normalize_value
from evalkit.chat.prompt_completion import PROMPT_COMPLETION
from evalkit.errors import InvalidConversation

ROOT = Path(__file__).resolve().parent.parent

SPEAKER = MessageDialect(
    name="speaker",
    label="Helpdesk",
    role_key="speaker",
    content_key="text",
    roles={"customer": "user", "agent": "assistant", "note": "system"},
)

ROWS = [
    [{"speaker": "note", "text": "Be brief."}, {"speaker": "customer", "text": "Refund?"},
     {"speaker": "agent", "text": "Done."}],
    [{"speaker": "customer", "text": "Hello"}, {"speaker": "agent", "text": "Hi!"}],
]  # fmt: skip
EXPECTED = [
    [("system", "Be brief."), ("user", "Refund?"), ("assistant", "Done.")],
    [("user", "Hello"), ("assistant", "Hi!")],
]


@pytest.fixture
def speaker() -> Iterator[None]:
    register_dialect(SPEAKER)
    try:
        yield
    finally:
        del DIALECTS[SPEAKER.name]


def _pairs(chat) -> list[list[tuple[str, str]]]:
    return [[(m["role"], m["content"]) for m in row] for row in chat.messages()]


def test_a_registered_dialect_is_read_from_a_nested_column(speaker):
    frame = pl.DataFrame({"id": ["a", "b"], "chat": ROWS})
    chat = read_chat(frame, "chat")
    assert chat.shape == "speaker"
    assert _pairs(chat) == EXPECTED
    assert chat.prompts().to_list()[0] == chat.messages()[0][:2]


def test_a_registered_dialect_is_read_from_json_text_and_json_lines(tmp_path, speaker):
    csv = tmp_path / "chat.csv"
    pl.DataFrame({"id": ["a", "b"], "chat": [json.dumps(row) for row in ROWS]}).write_csv(csv)
    from_text = read_chat(csv, "chat")
    assert from_text.json_text and from_text.shape == "speaker"
    assert _pairs(from_text) == EXPECTED
    lines = tmp_path / "chat.jsonl"
    lines.write_text(
        "".join(json.dumps({"id": i, "chat": row}) + "\n" for i, row in enumerate(ROWS))
    )
    assert _pairs(read_chat(lines, "chat")) == EXPECTED


def test_a_registered_dialect_refuses_in_its_own_words(tmp_path, speaker):
    bad = [[{"speaker": "customer", "text": "Hi"}, {"speaker": "bot", "text": "?"}]]
    with pytest.raises(InvalidConversation) as caught:
        read_chat(pl.DataFrame({"chat": bad}), "chat")
    assert "message 1: unknown speaker 'bot'; use one of agent, customer, note" in str(caught.value)
    mixed = [{"speaker": "customer", "text": "Hi"}, {"role": "assistant", "content": "Hello"}]
    with pytest.raises(Exception, match=r"is written \{role, content\} but the column's messages "
                       r"are \{speaker, text\}"):  # fmt: skip
        normalize_value(mixed)
    with pytest.raises(Exception, match="nor ShareGPT's 'from', Helpdesk's 'speaker'"):
        normalize_value([{"who": "customer"}])


def test_the_built_in_dialects_are_recognised_through_the_registry():
    assert [dialect.name for dialect in message_dialects()] == ["messages", "sharegpt"]
    assert recognise_message({"role": "user", "from": "human"}).name == "messages"
    assert recognise_message({"from": "human"}).name == "sharegpt"
    assert recognise_message({"speaker": "customer"}) is None
    assert columns_dialect(1) is None
    assert columns_dialect(2) is PROMPT_COMPLETION
    assert columns_dialect(3) is ALPACA


def test_a_name_key_or_column_count_is_registered_once():
    with pytest.raises(ValueError, match="already registered"):
        register_dialect(DIALECTS["sharegpt"])
    with pytest.raises(ValueError, match="already uses key 'from'"):
        register_dialect(MessageDialect("other", "Other", "from", "text", {"a": "user"}))


def test_every_dialect_the_docs_describe_is_registered():
    assert list(DIALECTS) == ["messages", "sharegpt", "prompt_completion", "alpaca"]
    docs = (ROOT / "docs" / "conversations.md").read_text()
    described = docs.split("**What a chat template receives.**", 1)[0]
    for dialect in message_dialects():
        assert f"`{dialect.keys}` messages" in described, dialect.name
    assert "TRL's prompt–completion form: `--text prompt --text completion`" in described
    assert "Alpaca: `--text instruction --text input --text output`" in described
    assert PROMPT_COMPLETION.parts == ("prompt", "completion")
    assert ALPACA.parts == ("instruction", "input", "output")
