"""Model folders that transformers or PEFT refuse in their own words: evalkit names the file.

A damaged weight file, a config of an architecture transformers has no
causal LM for, weights of another model than the config describes, and a
bitsandbytes-quantized base on a machine that cannot load it. Each is one
line naming the file (or config.json key) and the fix, exit 2, for
``generate`` and ``smoke`` alike; the library itself is asked, in each
test, that the input really is one it cannot (or should not) use.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import assert_one_line_error
from model_fixtures import TinyModels

pytest.importorskip("torch")
pytest.importorskip("peft")

BNB_4BIT = {
    "quant_method": "bitsandbytes",
    "load_in_4bit": True,
    "bnb_4bit_quant_type": "nf4",
    "bnb_4bit_compute_dtype": "bfloat16",
}


def _generate(tiny: TinyModels, out: Path, *extra: object) -> list[object]:
    return ["generate", "--base", tiny.base, "--data", tiny.data, "--id", "ticket_id",
            "--text", "messages", "--out", out, "--max-new-tokens", 2, "--device", "cpu",
            *extra]  # fmt: skip


def _smoke(tiny: TinyModels, base: Path) -> list[object]:
    return ["smoke", "--base", base, "--data", tiny.data, "--text", "messages",
            "--steps", 1, "--seq-len", 64, "--device", "cpu"]  # fmt: skip


def _with_config(tiny: TinyModels, tmp_path: Path, **changes: Any) -> Path:
    base = tiny.copy("base", tmp_path)
    config = json.loads((base / "config.json").read_text())
    for key, value in changes.items():
        if value is None:
            config.pop(key, None)
        else:
            config[key] = value
    (base / "config.json").write_text(json.dumps(config))
    return base


def _truncate(path: Path, keep: int) -> None:
    path.write_bytes(path.read_bytes()[:keep])


def test_a_truncated_weight_file_is_named(run_cli, tiny: TinyModels, tmp_path: Path) -> None:
    from safetensors import SafetensorError, safe_open

    base = tiny.copy("base", tmp_path)
    weights = base / "model.safetensors"
    _truncate(weights, weights.stat().st_size // 2)
    with pytest.raises(SafetensorError), safe_open(str(weights), framework="pt"):
        pass  # safetensors itself refuses the file
    result = run_cli(*_generate(tiny, tmp_path / "o", "--base", base))
    assert_one_line_error(result, str(weights), "truncated", "download or save the model again")
    assert "SafetensorError" not in result.stderr


def test_a_damaged_adapter_file_is_named(run_cli, tiny: TinyModels, tmp_path: Path) -> None:
    adapter = tiny.copy("adapter", tmp_path)
    weights = adapter / "adapter_model.safetensors"
    weights.write_bytes(b"not a safetensors file at all")
    result = run_cli(*_generate(tiny, tmp_path / "o", "--adapter", adapter))
    assert_one_line_error(result, str(weights), "not a valid safetensors file", "save the adapter")
    _truncate(weights, 0)
    result = run_cli(*_generate(tiny, tmp_path / "o", "--adapter", adapter))
    assert_one_line_error(result, str(weights), "fewer than the 8 of a header length")


@pytest.mark.parametrize(
    ("changes", "fragments"),
    [
        ({"model_type": "foollama"}, ["model_type 'foollama' is not an architecture",
                                      "upgrade transformers"]),
        ({"model_type": "mine", "auto_map": {"AutoModelForCausalLM": "m.Mine"}},
         ["key 'auto_map' asks to run Python code", "trust_remote_code stays off"]),
        ({"model_type": None}, ["has no 'model_type'"]),
        ({"model_type": "t5"}, ["model_type 't5' has no causal-LM"]),
    ],
)  # fmt: skip
@pytest.mark.slow
def test_an_architecture_transformers_cannot_generate_with(
    run_cli, tiny: TinyModels, tmp_path: Path, changes: dict[str, Any], fragments: list[str]
) -> None:
    from transformers import AutoModelForCausalLM

    base = _with_config(tiny, tmp_path, **changes)
    with pytest.raises((ValueError, KeyError, OSError)):
        AutoModelForCausalLM.from_pretrained(str(base), local_files_only=True)
    result = run_cli(*_generate(tiny, tmp_path / "o", "--base", base))
    assert_one_line_error(result, str(base / "config.json"), *fragments)


def test_weights_of_another_model_than_the_config(
    run_cli, tiny: TinyModels, tmp_path: Path
) -> None:
    """transformers loads a BERT config over Llama weights, at random; evalkit refuses."""
    from transformers import AutoModelForCausalLM

    base = _with_config(tiny, tmp_path, model_type="bert", architectures=["BertLMHeadModel"])
    _, info = AutoModelForCausalLM.from_pretrained(
        str(base), local_files_only=True, output_loading_info=True
    )
    missing = sorted(info["missing_keys"])
    assert missing  # transformers would generate with these initialised at random
    result = run_cli(*_generate(tiny, tmp_path / "o", "--base", base))
    assert_one_line_error(result, str(base), f"lack {len(missing)} of the weights",
                          f"(first: {missing[0]})")  # fmt: skip


def test_a_base_without_its_output_head(run_cli, tiny: TinyModels, tmp_path: Path) -> None:
    from safetensors.torch import load_file, save_file

    base = tiny.copy("base", tmp_path)
    weights = load_file(str(base / "model.safetensors"))
    assert "lm_head.weight" in weights  # an untied head, saved on its own
    del weights["lm_head.weight"]
    save_file(weights, str(base / "model.safetensors"), metadata={"format": "pt"})
    result = run_cli(*_generate(tiny, tmp_path / "o", "--base", base))
    assert_one_line_error(result, "lack 1 of the weights", "(first: lm_head.weight)")


def test_a_bitsandbytes_base_on_the_cpu(run_cli, tiny: TinyModels, tmp_path: Path) -> None:
    base = _with_config(tiny, tmp_path, quantization_config=BNB_4BIT)
    config = base / "config.json"
    result = run_cli(*_generate(tiny, tmp_path / "o", "--base", base))
    assert_one_line_error(result, str(config), "'quantization_config'", "bitsandbytes 4-bit",
                          "CUDA GPU only", "unquantized")  # fmt: skip
    result = run_cli(*_smoke(tiny, base))
    assert_one_line_error(result, str(config), "'quantization_config' (bitsandbytes)",
                          "pass the unquantized base folder")  # fmt: skip


def test_a_bitsandbytes_base_on_a_gpu_without_the_package(
    tiny: TinyModels, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On CUDA the package is what is missing (transformers' hint, with the key named)."""
    import importlib.util

    from evalkit.errors import ModelLoadError
    from evalkit.model.checks import check_quantization

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "bitsandbytes" else real(name)
    )
    config = {"quantization_config": {**BNB_4BIT, "load_in_4bit": False, "load_in_8bit": True}}
    with pytest.raises(ModelLoadError, match="bitsandbytes 8-bit; install it"):
        check_quantization(config, tmp_path, "cuda")
    assert check_quantization({"quantization_config": {"quant_method": "gptq"}}, tmp_path, "cuda")
    assert not check_quantization({}, tmp_path, "cpu")


def test_an_unquantized_copy_still_loads(tiny: TinyModels, tmp_path: Path) -> None:
    """The checks refuse nothing that loads: a copy of the base with odd but valid keys."""
    from evalkit.model.load import load_base

    base = _with_config(tiny, tmp_path, auto_map=None, quantization_config=None)
    loaded = load_base(base, device="cpu", dtype="float32")
    assert loaded.model.config.model_type == "llama"


def _gpt2(tmp_path: Path, tiny: TinyModels, positions: int) -> Path:
    """A tiny GPT-2 (learned absolute positions, context under config.json's n_positions)."""
    import torch
    from transformers import AutoModelForCausalLM, GPT2Config

    torch.manual_seed(0)
    config = GPT2Config(vocab_size=1024, n_embd=16, n_layer=1, n_head=2, n_positions=positions,
                        bos_token_id=2, eos_token_id=2)  # fmt: skip
    folder = tmp_path / "gpt2"
    AutoModelForCausalLM.from_config(config).save_pretrained(str(folder))
    for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja"):
        if (tiny.base / name).is_file():
            shutil.copy(tiny.base / name, folder)
    return folder


def test_new_tokens_beyond_the_context_are_refused_before_decoding(
    run_cli, tiny: TinyModels, tmp_path: Path
) -> None:
    """GPT-2 indexes past its position table there (a torch IndexError); evalkit refuses first."""
    import torch
    from transformers import AutoModelForCausalLM

    from evalkit.model.load import load_model
    from evalkit.model.prompts import read_prompts

    loaded = load_model(tiny.base, device="cpu")
    prompts = read_prompts(tiny.data, "ticket_id", ["messages"], loaded.tokenizer,
                           tokenizer_folder=loaded.tokenizer_folder)  # fmt: skip
    longest = max(len(ids) for ids in prompts.prompt_ids)
    base = _gpt2(tmp_path, tiny, positions=longest + 3)
    model = AutoModelForCausalLM.from_pretrained(str(base))
    row = max(range(len(prompts.ids)), key=lambda r: len(prompts.prompt_ids[r]))
    with pytest.raises(IndexError):  # what the user would have seen
        model(torch.tensor([prompts.prompt_ids[row] + [0] * 4]))
    result = run_cli(*_generate(tiny, tmp_path / "o", "--base", base, "--max-new-tokens", 4))
    assert_one_line_error(result, f"id {prompts.ids[row]!r}", "--max-new-tokens is 4",
                          f"context of {longest + 3} (n_positions)",
                          "--max-new-tokens 3 or less")  # fmt: skip
    result = run_cli(*_generate(tiny, tmp_path / "o2", "--base", base, "--max-new-tokens", 3))
    assert result.exit_code == 0, result.stderr


def test_smoke_refuses_a_seq_len_beyond_the_context(
    run_cli, tiny: TinyModels, tmp_path: Path
) -> None:
    base = _gpt2(tmp_path, tiny, positions=48)
    result = run_cli(*_smoke(tiny, base))  # --seq-len 64
    assert_one_line_error(result, "--seq-len 64", "context of 48 tokens", "(n_positions)",
                          "--seq-len 48 or less")  # fmt: skip


def _adapter_with(tiny: TinyModels, tmp_path: Path, **changes: Any) -> Path:
    adapter = tiny.copy("adapter", tmp_path)
    config = json.loads((adapter / "adapter_config.json").read_text())
    config.update(changes)
    (adapter / "adapter_config.json").write_text(json.dumps(config))
    return adapter


def test_an_adapter_config_whose_rank_is_not_its_weights(
    run_cli, tiny: TinyModels, tmp_path: Path
) -> None:
    """Not another base: the base's widths fit, the config's r does not (PEFT: size mismatch)."""
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    saved = json.loads((tiny.adapter / "adapter_config.json").read_text())["r"]
    adapter = _adapter_with(tiny, tmp_path, r=saved // 2)
    base = AutoModelForCausalLM.from_pretrained(str(tiny.base))
    with pytest.raises(RuntimeError, match="size mismatch"):
        PeftModel.from_pretrained(base, str(adapter))
    result = run_cli(*_generate(tiny, tmp_path / "o", "--adapter", adapter))
    assert_one_line_error(result, str(adapter / "adapter_config.json"),
                          "rank does not match its weights", f"[{saved}, ",
                          f"[{saved // 2}, ", "do not belong together")  # fmt: skip
    assert "trained on another model" not in result.stderr


def test_an_unknown_peft_type_names_the_key(run_cli, tiny: TinyModels, tmp_path: Path) -> None:
    adapter = _adapter_with(tiny, tmp_path, peft_type="NOT_A_METHOD")
    result = run_cli(*_generate(tiny, tmp_path / "o", "--adapter", adapter))
    assert_one_line_error(result, str(adapter / "adapter_config.json"),
                          "'peft_type' is 'NOT_A_METHOD'", "upgrade peft")  # fmt: skip


def test_a_damaged_tokenizer_folder_names_the_file(
    run_cli, tiny: TinyModels, tmp_path: Path
) -> None:
    from transformers import AutoTokenizer

    broken = tmp_path / "broken"
    broken.mkdir()
    shutil.copy(tiny.base / "tokenizer.json", broken)
    (broken / "tokenizer_config.json").write_text("{not json")
    with pytest.raises(ValueError):  # json.JSONDecodeError, in transformers' words
        AutoTokenizer.from_pretrained(str(broken))
    result = run_cli(*_generate(tiny, tmp_path / "o", "--tokenizer", broken))
    assert_one_line_error(result, str(broken / "tokenizer_config.json"), "not valid JSON",
                          "copy or save them again")  # fmt: skip
    config_only = tmp_path / "config-only"
    config_only.mkdir()
    shutil.copy(tiny.base / "tokenizer_config.json", config_only)
    with pytest.raises(ValueError, match="Couldn't instantiate the backend tokenizer"):
        AutoTokenizer.from_pretrained(str(config_only))
    result = run_cli(*_generate(tiny, tmp_path / "o", "--tokenizer", config_only))
    assert_one_line_error(result, str(config_only), "no vocabulary", "tokenizer.json")


def test_a_dtype_the_header_reader_does_not_know_is_not_called_damage(tmp_path: Path) -> None:
    """Only damage is named: a sub-byte format (F4) leaves transformers' own words."""
    import struct

    from evalkit.model.checks import damaged_weights

    header = json.dumps({"w": {"dtype": "F4", "shape": [2], "data_offsets": [0, 1]}}).encode()
    unknown = tmp_path / "model.safetensors"
    unknown.write_bytes(struct.pack("<Q", len(header)) + header + b"\0")
    assert damaged_weights([unknown]) is None
    known = json.dumps({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}).encode()
    unknown.write_bytes(struct.pack("<Q", len(known)) + known + b"\0" * 4)  # 4 bytes short
    found = damaged_weights([unknown], "save it again")
    assert found is not None and found.message.endswith("; save it again")
