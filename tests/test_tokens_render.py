"""Loading a local tokenizer offline, and rendering/encoding as apply_chat_template does."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import ROOT

from evalkit.errors import MalformedFile, UnreadableFile, UsageError

pytest.importorskip("transformers")

from evalkit.tokens.load import chat_template_sha256, load_tokenizer
from evalkit.tokens.render import (
    encode_renders,
    prompt_renders,
    render_all,
    require_template,
)

EXAMPLE = ROOT / "examples" / "tokenizer"
CONVERSATIONS = [
    [
        {"role": "system", "content": "Triage the ticket."},
        {"role": "user", "content": "My order ORD-123456 never arrived."},
        {"role": "assistant", "content": '{"category": "shipping", "priority": "high"}'},
    ],
    [{"role": "user", "content": "Refund me!"}, {"role": "assistant", "content": "{}"}],
]


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer(EXAMPLE)


def test_batched_encoding_equals_apply_chat_template(tokenizer) -> None:
    renders = render_all(tokenizer, CONVERSATIONS)
    expected = [
        tokenizer.apply_chat_template(c, tokenize=True, return_dict=False) for c in CONVERSATIONS
    ]
    assert encode_renders(tokenizer, renders) == expected
    prompts = prompt_renders(tokenizer, [c[:-1] for c in CONVERSATIONS])
    expected_prompts = [
        tokenizer.apply_chat_template(
            c[:-1], tokenize=True, add_generation_prompt=True, return_dict=False
        )
        for c in CONVERSATIONS
    ]
    assert encode_renders(tokenizer, prompts) == expected_prompts
    assert prompts[1].endswith("<|im_start|>assistant\n")


def test_template_hash_is_of_the_template_text(tokenizer) -> None:
    import hashlib

    text = (EXAMPLE / "chat_template.jinja").read_text(encoding="utf-8")
    assert chat_template_sha256(tokenizer) == hashlib.sha256(text.encode()).hexdigest()


def test_a_hub_id_is_refused_not_downloaded() -> None:
    with pytest.raises(UnreadableFile, match="looks like a Hub id, and evalkit never downloads"):
        load_tokenizer("meta-llama/Llama-3.2-1B-Instruct")


def test_a_folder_without_tokenizer_files(tmp_path: Path) -> None:
    with pytest.raises(UnreadableFile, match="holds no tokenizer files"):
        load_tokenizer(tmp_path)


def test_a_corrupt_tokenizer_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "tokenizer.json").write_text("{not json")
    with pytest.raises(MalformedFile, match=r"tokenizer\.json:1: not valid JSON") as raised:
        load_tokenizer(tmp_path)
    assert "\n" not in str(raised.value)
    assert str(raised.value).startswith(str(tmp_path / "tokenizer.json"))


def test_no_chat_template_is_named(tmp_path: Path) -> None:
    shutil.copy(EXAMPLE / "tokenizer.json", tmp_path / "tokenizer.json")
    config = json.loads((EXAMPLE / "tokenizer_config.json").read_text())
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(config))
    bare = load_tokenizer(tmp_path)
    with pytest.raises(UsageError, match="has no chat template"):
        require_template(bare, str(tmp_path))


def test_a_template_in_tokenizer_config_renders_as_the_jinja_file(tokenizer, tmp_path) -> None:
    # Older folders keep the template in tokenizer_config.json; both places are read.
    shutil.copy(EXAMPLE / "tokenizer.json", tmp_path / "tokenizer.json")
    config = json.loads((EXAMPLE / "tokenizer_config.json").read_text())
    config["chat_template"] = (EXAMPLE / "chat_template.jinja").read_text(encoding="utf-8")
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(config))
    assert not (tmp_path / "chat_template.jinja").exists()
    inline = load_tokenizer(tmp_path)
    assert chat_template_sha256(inline) == chat_template_sha256(tokenizer)
    assert render_all(inline, CONVERSATIONS) == render_all(tokenizer, CONVERSATIONS)
