"""The inference prompt's ids, derived from the training ids, equal encoding the prompt whole.

``evalkit tokens`` encodes only the text after a prompt's last special token
(see ``evalkit/tokens/parity.py``); ``generate`` encodes the whole prompt
through ``encode_renders(prompt_renders(...))``. The two must give the same
ids, or render parity would be judged on ids the model never gets: tested
here on the three families, with answers that start with whitespace (where
BPE merges across the prompt's end) and templates that trim.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from tokens_fixtures import FAMILIES, build_tokenizer, conversations

pytest.importorskip("transformers")

from evalkit.tokens.encode import encode_batch
from evalkit.tokens.load import load_tokenizer
from evalkit.tokens.parity import compare, prompt_matches, split_token_ids
from evalkit.tokens.render import encode_renders, prompt_renders, render_all

ODD_STARTS = ["\n", "\n\n", " ", "  ", "\t", "", "refund", " refund", "\n refund"]


def odd_chats(seed: int) -> list[list[dict[str, str]]]:
    """Conversations whose answers start with whitespace or words, some multi-turn."""
    rng = random.Random(seed)
    chats = conversations(40, seed=seed, multi_turn=0.4)
    for chat in chats:
        chat[-1]["content"] = rng.choice(ODD_STARTS) + chat[-1]["content"]
    return chats


def derived_and_whole(
    tokenizer: Any, chats: list[list[dict[str, str]]], *, shortcut: bool = True
) -> tuple[list[Any], list[Any]]:
    """The prompt matches as tokens derives them, and as encoding every prompt whole gives."""
    trains = render_all(tokenizer, chats)
    prompts = prompt_renders(tokenizer, [chat[:-1] for chat in chats])
    whole = encode_renders(tokenizer, prompts)
    encodings = encode_batch(tokenizer, trains, add_special_tokens=False)
    ids = [e.ids for e in encodings]
    derived = prompt_matches(
        tokenizer,
        prompts,
        trains,
        encodings,
        ids,
        splits=split_token_ids(tokenizer),
        shortcut=shortcut,
    )
    return derived, [compare(w, i) for w, i in zip(whole, ids, strict=True)]


@pytest.mark.parametrize("family", list(FAMILIES))
@pytest.mark.parametrize("seed", [0, 1])
def test_derived_prompt_ids_equal_whole_prompt_encoding(tmp_path: Path, family: str, seed: int):
    tokenizer = load_tokenizer(build_tokenizer(tmp_path / family, family))
    chats = odd_chats(seed)
    derived, whole = derived_and_whole(tokenizer, chats)
    assert derived == whole
    assert derived_and_whole(tokenizer, chats, shortcut=False)[0] == whole


def test_split_tokens_exclude_stripping_tokens(tmp_path: Path):
    from tokenizers import AddedToken

    tokenizer = load_tokenizer(build_tokenizer(tmp_path / "t", "chatml"))
    tokenizer.add_tokens([AddedToken("<tool>", lstrip=True), AddedToken("<plain>")])
    splits = split_token_ids(tokenizer)
    assert tokenizer.convert_tokens_to_ids("<tool>") not in splits
    assert tokenizer.convert_tokens_to_ids("<|im_end|>") in splits


def test_derived_ids_find_the_same_divergence(tmp_path: Path):
    template = (
        "{%- for message in messages %}"
        "{%- if message['role'] == 'assistant' %}{{- '<|im_start|>assistant: ' }}"
        "{%- else %}{{- '<|im_start|>' + message['role'] + '\\n' }}{%- endif %}"
        "{{- message['content'] + '<|im_end|>\\n' }}{%- endfor %}"
        "{%- if add_generation_prompt %}{{- '<|im_start|>assistant: ' }}{%- endif %}"
    )
    tokenizer = load_tokenizer(build_tokenizer(tmp_path / "t", "chatml", template=template))
    derived, whole = derived_and_whole(tokenizer, odd_chats(2))
    assert derived == whole
    assert sum(m is not None and m.divergence is not None for m in derived) >= 3


@pytest.mark.parametrize("family", list(FAMILIES))
def test_batch_renders_equal_apply_chat_template(tmp_path: Path, family: str):
    tokenizer = load_tokenizer(build_tokenizer(tmp_path / family, family))
    chats = odd_chats(3)
    for prompt in (False, True):
        expected = [
            tokenizer.apply_chat_template(chat, tokenize=False, add_generation_prompt=prompt)
            for chat in chats
        ]
        assert render_all(tokenizer, chats, add_generation_prompt=prompt) == expected
    # Messages that are not plain strings take transformers' general path: same text.
    rich = [[{**message, "name": None} for message in chat] for chat in chats]
    assert render_all(tokenizer, rich) == render_all(tokenizer, chats)
