"""No folder's own Python ever runs, even with "y" on stdin.

A model, adapter or tokenizer folder may name Python files of its own in
``auto_map`` (config.json, tokenizer_config.json, adapter_config.json);
transformers imports them only with ``trust_remote_code``, and without it
asks on stdin, where a "y" runs them. Each test plants such a folder whose
modules write a marker file when imported, runs the command as a user does
(a subprocess, "y" fed on stdin) and checks: exit 2, one line naming the
file and the key, and no marker. transformers itself is asked first that the
planted folder really would run its code when trusted.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT
from model_fixtures import TinyModels

pytest.importorskip("torch")
pytest.importorskip("peft")

PLANT = """import pathlib
pathlib.Path({marker!r}).write_text("ran")
"""
TOKENIZER_MODULE = (
    PLANT
    + """from transformers import PreTrainedTokenizerFast


class EvilTokenizer(PreTrainedTokenizerFast):
    pass
"""
)
CONFIG_MODULE = (
    PLANT
    + """from transformers import LlamaConfig


class EvilConfig(LlamaConfig):
    model_type = "evil"
"""
)
MODEL_MODULE = (
    PLANT
    + """from transformers import LlamaForCausalLM


class EvilForCausalLM(LlamaForCausalLM):
    pass
"""
)


def _plant_tokenizer(folder: Path, marker: Path) -> Path:
    """tokenizer_config.json names tokenization_evil.py, which writes ``marker``."""
    (folder / "tokenization_evil.py").write_text(TOKENIZER_MODULE.format(marker=str(marker)))
    path = folder / "tokenizer_config.json"
    config = json.loads(path.read_text())
    config["tokenizer_class"] = "EvilTokenizer"
    config["auto_map"] = {"AutoTokenizer": [None, "tokenization_evil.EvilTokenizer"]}
    path.write_text(json.dumps(config))
    return path


def _plant_model(folder: Path, marker: Path) -> Path:
    """config.json is of an architecture only the folder's own code defines."""
    (folder / "configuration_evil.py").write_text(CONFIG_MODULE.format(marker=str(marker)))
    (folder / "modeling_evil.py").write_text(MODEL_MODULE.format(marker=str(marker)))
    path = folder / "config.json"
    config = json.loads(path.read_text())
    config["model_type"] = "evil"
    config["architectures"] = ["EvilForCausalLM"]
    config["auto_map"] = {
        "AutoConfig": "configuration_evil.EvilConfig",
        "AutoModelForCausalLM": "modeling_evil.EvilForCausalLM",
    }
    path.write_text(json.dumps(config))
    return path


def _evalkit(cwd: Path, *args: object) -> subprocess.CompletedProcess[str]:
    """``python -m evalkit ARGS`` with "y" waiting on stdin, as a user at a terminal answers."""
    return subprocess.run(
        [sys.executable, "-m", "evalkit", *map(str, args)],
        input="y\ny\ny\n",
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
    )


def _refused(done: subprocess.CompletedProcess[str], planted: Path, marker: Path) -> None:
    assert not marker.exists(), "the folder's own code ran"
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert str(planted) in lines[0] and "'auto_map'" in lines[0], lines[0]
    assert "never" in lines[0] and "Traceback" not in done.stderr


def test_transformers_would_run_the_planted_code_if_trusted(tiny: TinyModels, tmp_path: Path):
    """The reference: the planted folders are real remote-code folders."""
    from transformers import AutoConfig, AutoTokenizer

    marker = tmp_path / "marker"
    tokenizer = tiny.copy("base", tmp_path)
    _plant_tokenizer(tokenizer, marker)
    loaded = AutoTokenizer.from_pretrained(str(tokenizer), trust_remote_code=True)
    assert type(loaded).__name__ == "EvilTokenizer" and marker.exists()
    marker.unlink()
    model = tmp_path / "model"
    shutil.copytree(tiny.base, model)
    _plant_model(model, marker)
    assert type(AutoConfig.from_pretrained(str(model), trust_remote_code=True)).__name__ == (
        "EvilConfig"
    )
    assert marker.exists()


def test_tokens(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    folder = tmp_path / "tok"
    shutil.copytree(ROOT / "examples" / "tokenizer", folder, ignore=shutil.ignore_patterns("*.py"))
    planted = _plant_tokenizer(folder, marker)
    data = ROOT / "examples" / "tickets" / "tickets_chat.jsonl"
    done = _evalkit(tmp_path, "tokens", data, "--tokenizer", folder, "--text", "messages")
    _refused(done, planted, marker)


def _generate(tiny: TinyModels, tmp_path: Path, *extra: object) -> list[object]:
    return ["generate", "--base", tiny.base, "--data", tiny.data, "--id", "ticket_id",
            "--text", "messages", "--out", tmp_path / "out", "--max-new-tokens", 2,
            "--device", "cpu", *extra]  # fmt: skip


def test_generate_base(tiny: TinyModels, tmp_path: Path) -> None:
    """The case that ran: the tokenizer loaded from the base read config.json's auto_map."""
    marker = tmp_path / "marker"
    base = tiny.copy("base", tmp_path)
    planted = _plant_model(base, marker)
    done = _evalkit(tmp_path, *_generate(tiny, tmp_path, "--base", base))
    _refused(done, planted, marker)
    assert "never runs remote code" not in done.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("where", ["tokenizer_config.json", "adapter_config.json"])
def test_generate_adapter(tiny: TinyModels, tmp_path: Path, where: str) -> None:
    """An adapter folder with its own tokenizer (a fine-tune that added tokens saves one)."""
    marker = tmp_path / "marker"
    adapter = tiny.copy("adapter", tmp_path)
    for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja"):
        shutil.copyfile(tiny.base / name, adapter / name)
    if where == "tokenizer_config.json":
        planted = _plant_tokenizer(adapter, marker)
    else:
        planted = adapter / where
        config = json.loads(planted.read_text())
        config["auto_map"] = {"AutoPeftModel": "modeling_evil.EvilForCausalLM"}
        planted.write_text(json.dumps(config))
        (adapter / "modeling_evil.py").write_text(PLANT.format(marker=str(marker)))
    done = _evalkit(tmp_path, *_generate(tiny, tmp_path, "--adapter", adapter))
    _refused(done, planted, marker)


def test_smoke(tiny: TinyModels, tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    base = tiny.copy("base", tmp_path)
    planted = _plant_tokenizer(base, marker)
    done = _evalkit(tmp_path, "smoke", "--base", base, "--data", tiny.data, "--text", "messages",
                    "--steps", 1, "--seq-len", 64, "--device", "cpu")  # fmt: skip
    _refused(done, planted, marker)


def test_reload_check(tiny: TinyModels, tmp_path: Path) -> None:
    """A run whose pins were rewritten to match a planted folder: the pins hold, the code
    still never runs."""
    from evalkit.model.folders import model_pins, tokenizer_pins

    marker = tmp_path / "marker"
    base = tiny.copy("base", tmp_path)
    run = tmp_path / "run"
    shutil.copytree(tiny.run, run)
    planted = _plant_tokenizer(base, marker)
    record = json.loads((run / "run.json").read_text())
    record["base"]["path"] = str(base)
    record["base"]["files"] = model_pins(base).files
    record["tokenizer"]["path"] = str(base)
    record["tokenizer"]["files"] = tokenizer_pins(base).files
    (run / "run.json").write_text(json.dumps(record))
    done = _evalkit(tmp_path, "reload-check", run, "--device", "cpu", "--n", 1)
    _refused(done, planted, marker)
