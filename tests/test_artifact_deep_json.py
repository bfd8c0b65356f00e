"""A 100k-deep JSON config of a model, adapter or tokenizer folder is exit 2, never a
RecursionError (exit 3): Python's json module recurses once per nesting level."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import ROOT, assert_one_line_error

DEEP = "[" * 100_000 + "]" * 100_000


def test_python_json_really_overflows() -> None:
    with pytest.raises(RecursionError):
        json.loads(DEEP)


@pytest.mark.parametrize("name", ["adapter_config.json", "tokenizer_config.json"])
def test_card(run_cli, tmp_path: Path, name: str) -> None:
    adapter = Path(shutil.copytree(ROOT / "examples" / "model" / "adapter", tmp_path / "a"))
    if name == "tokenizer_config.json":
        shutil.copyfile(
            ROOT / "examples" / "tokenizer" / "tokenizer.json", adapter / "tokenizer.json"
        )
    (adapter / name).write_text(DEEP)
    assert_one_line_error(run_cli("card", adapter), str(adapter / name), "JSON")


def test_tokens(run_cli, tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    folder = Path(shutil.copytree(ROOT / "examples" / "tokenizer", tmp_path / "t"))
    (folder / "tokenizer_config.json").write_text(DEEP)
    data = ROOT / "examples" / "tickets" / "tickets_chat.jsonl"
    result = run_cli("tokens", data, "--tokenizer", folder, "--text", "messages")
    assert_one_line_error(result, str(folder / "tokenizer_config.json"), "not valid JSON")
