"""``split --tokenizer`` counts what ``evalkit tokens`` counts, through the same loading."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest
from tokens_fixtures import build_tokenizer, conversations, write_jsonl

pytest.importorskip("transformers")

from evalkit.chat import read_chat
from evalkit.splitting.api import split
from evalkit.tokens.api import check_tokens
from evalkit.tokens.lengths import token_lengths
from evalkit.tokens.load import load_tokenizer


@pytest.fixture(scope="module")
def header(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tokenizer(tmp_path_factory.mktemp("tok") / "header", "header")


def test_split_lengths_of_text_agree_with_tokens(header: Path, tmp_path: Path) -> None:
    rows = [
        {"id": i, "g": i, "text": " ".join(["refund please"] * (i % 17 + 1))} for i in range(60)
    ]
    data = write_jsonl(tmp_path / "data.jsonl", rows)
    result = split(data, group=["g"], sizes=[60, 0], names=["all", "none"], text="text",
                   tokenizer=header)  # fmt: skip
    length = result.manifest.splits["all"].length
    assert length is not None and length.unit == "tokens"
    tokenizer = load_tokenizer(header)
    expected = [len(tokenizer(row["text"])["input_ids"]) for row in rows]  # BOS included
    assert (length.min, length.max) == (min(expected), max(expected))
    assert length.p50 == round(float(np.percentile(expected, 50)), 4)
    total = check_tokens([data], tokenizer=header, text="text").report.splits["data"].tokens
    assert total is not None
    assert (total.total.p50, total.total.p95, total.total.max) == (
        length.p50,
        length.p95,
        length.max,
    )


def test_conversation_lengths_are_the_template_render(header: Path, tmp_path: Path) -> None:
    chats = conversations(25, seed=8)
    frame = pl.DataFrame({"messages": chats})
    chat = read_chat(frame, "messages", source="frame")
    tokenizer = load_tokenizer(header)
    expected = [
        len(tokenizer.apply_chat_template(c, tokenize=True, return_dict=False)) for c in chats
    ]
    assert token_lengths(chat, tokenizer).to_list() == expected
    data = write_jsonl(tmp_path / "chat.jsonl", [{"messages": c} for c in chats])
    report = check_tokens([data], tokenizer=header, text="messages").report
    tokens = report.splits["chat"].tokens
    assert tokens is not None and tokens.total.max == max(expected)


def test_conversations_without_a_template_are_refused(tmp_path: Path) -> None:
    from evalkit.errors import UsageError

    bare = load_tokenizer(build_tokenizer(tmp_path / "bare", "chatml", template=None))
    chat = read_chat(pl.DataFrame({"m": conversations(2)}), "m", source="data.jsonl")
    with pytest.raises(UsageError, match=r"data\.jsonl: the tokenizer has no chat template"):
        token_lengths(chat, bare, source="data.jsonl")
