"""One definition of a tokenizer folder's files and hashes: card, tokens, generate, reload-check.

The same folder, laid out the ways tokenizers are saved (a template in
chat_template.jinja or in tokenizer_config.json, named templates in the
config's list or as files, a sentencepiece file beside tokenizer.json), must
give the same ``sha256``, ``chat_template_sha256`` and per-file hashes in
``card.json``, the tokens report and ``run.json``, and ``reload-check`` must
verify those pins. The expected values are computed here by hand from the
bytes; transformers itself says which templates each layout holds.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from conftest import ROOT
from model_fixtures import TinyModels

pytest.importorskip("torch")
pytest.importorskip("peft")

from evalkit.model.generate import generate
from evalkit.model.pins import verify_pins
from evalkit.provenance.artifacts import chat_templates, templates_of
from evalkit.provenance.card import adapter_card
from evalkit.records._run import read_run
from evalkit.tokens.api import check_tokens

EXAMPLE = ROOT / "examples" / "tokenizer"
TEMPLATE = (EXAMPLE / "chat_template.jinja").read_text()
TOOL_USE = TEMPLATE + "{%- if tools %}{{- '# tools: ' + tools | length | string }}{%- endif %}"
NAMED = {"default": TEMPLATE, "tool_use": TOOL_USE}
SPIECE = b"\n\x0b\n\x05<unk>\x15\x00\x00\x00\x00\x18\x02"  # the bytes of a sentencepiece proto
BASE_FILES = ["chat_template.jinja", "tokenizer.json", "tokenizer_config.json"]
LAYOUTS = {
    # name: (the files the folder holds, its templates)
    "jinja": (BASE_FILES, {"default": TEMPLATE}),
    "config": (["tokenizer.json", "tokenizer_config.json"], {"default": TEMPLATE}),
    "named_config": (["tokenizer.json", "tokenizer_config.json"], NAMED),
    "named_files": ([*BASE_FILES, "additional_chat_templates/tool_use.jinja"], NAMED),
    "sentencepiece": ([*BASE_FILES, "spiece.model"], {"default": TEMPLATE}),
}


def _layout(folder: Path, layout: str) -> Path:
    shutil.copytree(EXAMPLE, folder, ignore=shutil.ignore_patterns("*.py"))
    config_path = folder / "tokenizer_config.json"
    config = json.loads(config_path.read_text())
    if layout in ("config", "named_config"):
        (folder / "chat_template.jinja").unlink()
        config["chat_template"] = (
            TEMPLATE
            if layout == "config"  # the named list out of name order: order must not matter
            else [
                {"name": "tool_use", "template": TOOL_USE},
                {"name": "default", "template": TEMPLATE},
            ]
        )
        config_path.write_text(json.dumps(config, indent=2))
    if layout == "named_files":
        (folder / "additional_chat_templates").mkdir()
        (folder / "additional_chat_templates" / "tool_use.jinja").write_text(TOOL_USE)
    if layout == "sentencepiece":
        (folder / "spiece.model").write_bytes(SPIECE)
    return folder


def _expected_template_sha256(templates: dict[str, str]) -> str:
    if list(templates) == ["default"]:
        return hashlib.sha256(templates["default"].encode()).hexdigest()
    entries = [{"name": name, "template": templates[name]} for name in sorted(templates)]
    text = json.dumps(entries, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_the_templates_are_the_ones_transformers_loads(tmp_path: Path, layout: str) -> None:
    from transformers import AutoTokenizer

    folder = _layout(tmp_path / layout, layout)
    loaded = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    assert templates_of(loaded.chat_template) == LAYOUTS[layout][1]
    assert chat_templates(folder) == LAYOUTS[layout][1]


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_card_tokens_generate_and_reload_check_hash_alike(
    tiny: TinyModels, tmp_path: Path, layout: str
) -> None:
    folder = _layout(tmp_path / layout, layout)
    names, templates = LAYOUTS[layout]
    files = {name: hashlib.sha256((folder / name).read_bytes()).hexdigest() for name in names}
    lines = "".join(f"{name}:{files[name]}\n" for name in sorted(files))
    sha256 = hashlib.sha256(lines.encode()).hexdigest()
    template_sha256 = _expected_template_sha256(templates)

    adapter = tiny.copy("adapter", tmp_path)
    shutil.copytree(folder, adapter, dirs_exist_ok=True)
    card = adapter_card(adapter)
    assert card.tokenizer is not None
    assert (card.tokenizer.sha256, card.tokenizer.chat_template_sha256) == (
        sha256,
        template_sha256,
    )
    assert {name: card.files[name] for name in files} == files

    report = check_tokens([tiny.data], tokenizer=folder, text="messages").report
    assert (report.tokenizer.sha256, report.tokenizer.chat_template_sha256) == (
        sha256,
        template_sha256,
    )

    result = generate(tiny.base, tiny.data, id_column="ticket_id", text=["messages"],
                      tokenizer=folder, max_new_tokens=1, batch_size=10, device="cpu")  # fmt: skip
    result.write(tmp_path / "run")
    pinned = read_run(tmp_path / "run").tokenizer
    assert (pinned.files, pinned.sha256, pinned.chat_template_sha256) == (
        files,
        sha256,
        template_sha256,
    )
    checked = verify_pins(read_run(tmp_path / "run"), tmp_path / "run", merged=None)
    assert {str(folder / name) for name in files} <= set(checked)


def test_named_templates_hash_alike_wherever_they_are_stored(tmp_path: Path) -> None:
    from evalkit.provenance.artifacts import chat_template_sha256

    hashes = {
        layout: chat_template_sha256(chat_templates(_layout(tmp_path / layout, layout)))
        for layout in LAYOUTS
    }
    assert hashes["named_config"] == hashes["named_files"] != hashes["jinja"]
    assert hashes["jinja"] == hashes["config"] == hashes["sentencepiece"]
    assert hashes["jinja"] == hashlib.sha256(TEMPLATE.encode()).hexdigest()
