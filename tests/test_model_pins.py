"""``run.json`` pins are read only inside the folders the run recorded.

``reload-check`` rehashes every file ``run.json`` pins before it loads
anything; a pinned name that leaves its folder (``../secret``, an absolute
path, a backslash or NUL trick) would make it hash, and print the hash of,
any file on the machine. Such a record is refused, naming it, before any
file is read.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from conftest import ROOT, assert_one_line_error
from model_fixtures import TinyModels

from evalkit.errors import MalformedFile
from evalkit.provenance.artifacts import inside

pytest.importorskip("torch")
pytest.importorskip("peft")


@pytest.mark.parametrize(
    ("block", "name"),
    [
        ("tokenizer", "../secret.txt"),
        ("base", "../secret.txt"),
        ("adapter", "../../secret.txt"),
        ("tokenizer", "{secret}"),  # absolute
        ("tokenizer", "additional_chat_templates/../../secret.txt"),
    ],
)
def test_a_pin_outside_its_folder_is_refused_unread(
    run_cli, tiny: TinyModels, tmp_path: Path, block: str, name: str
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("not evalkit's to read\n")
    digest = hashlib.sha256(secret.read_bytes()).hexdigest()
    run = tmp_path / "run"
    shutil.copytree(tiny.run, run)
    record = json.loads((run / "run.json").read_text())
    pinned = name.format(secret=secret)
    record[block]["files"][pinned] = "0" * 64
    (run / "run.json").write_text(json.dumps(record))
    result = run_cli("reload-check", run)
    assert_one_line_error(result, str(run / "run.json"), repr(pinned), "not a file of")
    assert digest[:12] not in result.stderr


def test_names_inside_a_folder_pass(tmp_path: Path) -> None:
    assert inside(tmp_path, "tokenizer.json", "r") == tmp_path / "tokenizer.json"
    nested = "additional_chat_templates/tool_use.jinja"
    assert inside(tmp_path, nested, "r") == tmp_path / nested
    for bad in ("", ".", "..", "a/../../b", "/etc/passwd", "a\\..\\b", "a\0b", "a/b/c"):
        with pytest.raises(MalformedFile):
            inside(tmp_path, bad, "r")


def test_a_shard_index_naming_a_file_outside_the_folder_is_refused(run_cli, tmp_path: Path) -> None:
    """``card --base`` (and every model load) reads the shards an index names: only its own."""
    base = Path(shutil.copytree(ROOT / "examples" / "model" / "base", tmp_path / "base"))
    outside = tmp_path / "elsewhere.safetensors"
    (base / "model.safetensors").rename(outside)
    index = base / "model.safetensors.index.json"
    index.write_text(json.dumps({"weight_map": {"lm_head.weight": "../elsewhere.safetensors"}}))
    adapter = ROOT / "examples" / "model" / "adapter"
    result = run_cli("card", adapter, "--base", base)
    assert_one_line_error(result, str(index), "'../elsewhere.safetensors'", "not a file of")
