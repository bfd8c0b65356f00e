"""``evalkit generate``: tokens equal transformers + peft greedy decoding, pinned outputs."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import polars as pl
import pytest
from model_fixtures import (
    BATCH_SIZE,
    MAX_NEW_TOKENS,
    TinyModels,
    conversations,
    greedy_one_by_one,
    trim_at,
)

pytest.importorskip("torch")
pytest.importorskip("peft")

from evalkit.model.generate import generate

pytestmark = pytest.mark.slow  # generates with transformers and peft for reference

EOS = 2  # <|im_end|> of the example tokenizer


def _tokens(run: Path) -> pl.DataFrame:
    return pl.read_parquet(run / "tokens.parquet")


def _prompts(tokenizer) -> list[list[int]]:
    return [
        tokenizer.apply_chat_template(
            row["messages"][:-1], add_generation_prompt=True, tokenize=True, return_dict=False
        )
        for row in conversations()
    ]


def test_prompt_ids_are_what_apply_chat_template_gives(tiny: TinyModels, reference_tokenizer):
    assert _tokens(tiny.run)["prompt_ids"].to_list() == _prompts(reference_tokenizer)


def test_tokens_equal_generate_one_by_one(tiny: TinyModels, reference_model, reference_tokenizer):
    expected = greedy_one_by_one(reference_model, _prompts(reference_tokenizer))
    trim = trim_at({EOS})
    assert _tokens(tiny.run)["output_ids"].to_list() == [trim(ids) for ids in expected]


def test_tokens_equal_generate_batched(tiny: TinyModels, reference_model, reference_tokenizer):
    import torch

    tokenizer = reference_tokenizer
    tokenizer.padding_side = "left"
    prompts = _prompts(tokenizer)
    batch = tokenizer.pad({"input_ids": prompts}, return_tensors="pt")
    with torch.no_grad():
        sequences = reference_model.generate(
            **batch, do_sample=False, max_new_tokens=MAX_NEW_TOKENS
        )
    width = batch["input_ids"].shape[1]
    trim = trim_at({EOS})
    expected = [trim(row[width:].tolist()) for row in sequences]
    assert _tokens(tiny.run)["output_ids"].to_list() == expected


def test_batch_size_does_not_change_tokens(tiny: TinyModels) -> None:
    one = generate(tiny.base, tiny.data, id_column="ticket_id", text=["messages"],
                   adapter=tiny.adapter, max_new_tokens=MAX_NEW_TOKENS, batch_size=1,
                   device="cpu")  # fmt: skip
    assert one.tokens["output_ids"].to_list() == _tokens(tiny.run)["output_ids"].to_list()
    assert one.batches == len(conversations())
    assert _tokens(tiny.run)["batch"].max() == -(-len(conversations()) // BATCH_SIZE) - 1


def test_batches_put_the_longest_prompts_first(tiny: TinyModels) -> None:
    tokens = _tokens(tiny.run).with_columns(length=pl.col("prompt_ids").list.len())
    ordered = tokens.sort(["batch", "batch_row"])["length"].to_list()
    assert ordered == sorted(ordered, reverse=True)


def test_predictions_are_the_decoded_tokens(tiny: TinyModels, reference_tokenizer) -> None:
    predictions = pl.read_ndjson(tiny.run / "predictions.jsonl")
    tokens = _tokens(tiny.run)
    assert predictions.columns == ["ticket_id", "output"]
    assert predictions["ticket_id"].to_list() == [row["ticket_id"] for row in conversations()]
    for ids, text in zip(tokens["output_ids"], predictions["output"], strict=True):
        kept = [t for t in ids.to_list() if t != EOS]
        assert text == reference_tokenizer.decode(kept, skip_special_tokens=True)


def test_top_logits_are_the_models_logits(tiny: TinyModels, reference_model) -> None:
    """The stored top-k logits of a step equal a forward pass's logits on the same prefix."""
    import torch

    row = _tokens(tiny.run).row(3, named=True)
    prefix = row["prompt_ids"] + row["output_ids"][:5]
    with torch.no_grad():
        logits = reference_model(input_ids=torch.tensor([prefix])).logits[0]
    step = logits[len(row["prompt_ids"]) + 4]
    top = torch.topk(step, len(row["top_ids"][5]))
    assert row["top_ids"][5] == top.indices.tolist()
    assert row["top_logits"][5] == pytest.approx(top.values.tolist(), abs=1e-4)
    assert row["top_ids"][5][0] == row["output_ids"][5]


def test_run_json_pins_every_input(tiny: TinyModels) -> None:
    import peft
    import torch
    import transformers

    run = json.loads((tiny.run / "run.json").read_text())

    def sha(path: Path) -> str:
        return hashlib.sha256(path.read_bytes()).hexdigest()

    assert run["kind"] == "base+adapter"
    assert run["base"]["config_sha256"] == sha(tiny.base / "config.json")
    assert run["base"]["files"]["model.safetensors"] == sha(tiny.base / "model.safetensors")
    assert run["adapter"]["weights_sha256"] == sha(tiny.adapter / "adapter_model.safetensors")
    assert run["adapter"]["files"]["adapter_config.json"] == sha(
        tiny.adapter / "adapter_config.json"
    )
    card = run["adapter"]["card"]
    assert card["peft_type"] == "LORA" and card["lora"]["r"] == 8
    from safetensors import safe_open

    with safe_open(str(tiny.adapter / "adapter_model.safetensors"), "pt") as handle:
        numel = sum(handle.get_tensor(key).numel() for key in handle.keys())  # noqa: SIM118
    assert card["trainable_params"] == numel
    template = (tiny.base / "chat_template.jinja").read_text()
    assert run["tokenizer"]["chat_template_sha256"] == hashlib.sha256(template.encode()).hexdigest()
    assert run["tokenizer"]["files"]["tokenizer.json"] == sha(tiny.base / "tokenizer.json")
    assert run["data"]["sha256"] == sha(tiny.data)
    assert run["data"]["n"] == len(conversations())
    assert run["outputs"]["tokens_sha256"] == sha(tiny.run / "tokens.parquet")
    assert run["outputs"]["predictions_sha256"] == sha(tiny.run / "predictions.jsonl")
    assert run["versions"]["torch"] == torch.__version__
    assert run["versions"]["transformers"] == transformers.__version__
    assert run["versions"]["peft"] == peft.__version__
    assert run["device"]["type"] == "cpu" and run["dtype"] == "float32"
    assert run["generation"] | {"model_generation_config": None} == {
        "strategy": "greedy", "max_new_tokens": MAX_NEW_TOKENS, "batch_size": BATCH_SIZE,
        "padding_side": "left", "batch_order": "longest_first", "eos_token_ids": [EOS],
        "pad_token_id": 0, "top_k_logits": 8, "model_generation_config": None,
        "not_applied": {},
    }  # fmt: skip


def test_outputs_are_byte_identical_when_run_again(tiny: TinyModels, tmp_path: Path) -> None:
    again = generate(tiny.base, tiny.data, id_column="ticket_id", text=["messages"],
                     adapter=tiny.adapter, max_new_tokens=MAX_NEW_TOKENS,
                     batch_size=BATCH_SIZE, device="cpu")  # fmt: skip
    again.write(tmp_path / "again")
    for name in ("predictions.jsonl", "tokens.parquet", "run.json"):
        assert (tmp_path / "again" / name).read_bytes() == (tiny.run / name).read_bytes(), name


def test_the_adapter_is_loaded_in_eval_mode(tiny: TinyModels) -> None:
    from evalkit.model.load import load_model

    loaded = load_model(tiny.base, tiny.adapter, device="cpu")
    dropout = json.loads((tiny.adapter / "adapter_config.json").read_text())["lora_dropout"]
    assert dropout > 0  # the test means something: dropout would change outputs in train mode
    assert not any(module.training for module in loaded.model.modules())
    assert loaded.kind == "base+adapter" and loaded.dtype == "float32"


def test_stop_tokens_end_an_output_in_a_batch(
    tiny: TinyModels, reference_tokenizer, tmp_path: Path
) -> None:
    """With a frequent token as a second eos, rows stop early while their batch goes on."""
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    outputs = _tokens(tiny.run)["output_ids"].to_list()
    stop = outputs[0][2]  # a token the model really generates
    base = tiny.copy("base", tmp_path)
    config = json.loads((base / "generation_config.json").read_text())
    config["eos_token_id"] = [EOS, stop]
    (base / "generation_config.json").write_text(json.dumps(config))
    result = generate(base, tiny.data, id_column="ticket_id", text=["messages"],
                      adapter=tiny.adapter, max_new_tokens=MAX_NEW_TOKENS,
                      batch_size=BATCH_SIZE, device="cpu")  # fmt: skip
    model = PeftModel.from_pretrained(
        AutoModelForCausalLM.from_pretrained(str(base), dtype=torch.float32), str(tiny.adapter)
    ).eval()
    expected = greedy_one_by_one(model, _prompts(reference_tokenizer))
    trim = trim_at({EOS, stop})
    got = result.tokens["output_ids"].to_list()
    assert got == [trim(ids) for ids in expected]
    stops = result.tokens["stop"].to_list()
    assert "eos" in stops and stops[0] == "eos" and len(got[0]) == 3
    assert result.run.generation.eos_token_ids == sorted({EOS, stop})


def test_generation_config_penalties_are_not_applied_and_recorded(
    tiny: TinyModels, tmp_path: Path
) -> None:
    base = tiny.copy("base", tmp_path)
    config = json.loads((base / "generation_config.json").read_text())
    config.update(repetition_penalty=1.5, do_sample=True, temperature=0.7)
    (base / "generation_config.json").write_text(json.dumps(config))
    result = generate(base, tiny.data, id_column="ticket_id", text=["messages"],
                      adapter=tiny.adapter, max_new_tokens=MAX_NEW_TOKENS,
                      batch_size=BATCH_SIZE, device="cpu")  # fmt: skip
    assert result.tokens["output_ids"].to_list() == _tokens(tiny.run)["output_ids"].to_list()
    assert result.run.generation.not_applied == {
        "repetition_penalty": 1.5, "do_sample": True, "temperature": 0.7,
    }  # fmt: skip


def test_base_alone_is_a_prompt_only_baseline(tiny: TinyModels, reference_tokenizer) -> None:
    import torch
    from transformers import AutoModelForCausalLM

    result = generate(tiny.base, tiny.data, id_column="ticket_id", text=["messages"],
                      max_new_tokens=MAX_NEW_TOKENS, batch_size=BATCH_SIZE,
                      device="cpu")  # fmt: skip
    model = AutoModelForCausalLM.from_pretrained(str(tiny.base), dtype=torch.float32).eval()
    expected = greedy_one_by_one(model, _prompts(reference_tokenizer))
    assert result.tokens["output_ids"].to_list() == [trim_at({EOS})(ids) for ids in expected]
    assert result.run.kind == "base" and result.run.adapter is None
    assert result.tokens["output_ids"].to_list() != _tokens(tiny.run)["output_ids"].to_list()


def test_the_committed_example_model_is_what_build_writes(tmp_path: Path) -> None:
    import sys

    from model_fixtures import EXAMPLE_MODEL

    sys.path.insert(0, str(EXAMPLE_MODEL))
    import build

    build.build_base(tmp_path / "base")
    build.build_adapter(tmp_path / "base", tmp_path / "adapter", base_name="examples/model/base")
    for folder in ("base", "adapter"):
        names = sorted(p.name for p in (EXAMPLE_MODEL / folder).iterdir())
        assert names == sorted(p.name for p in (tmp_path / folder).iterdir())
        for name in names:
            committed, built = EXAMPLE_MODEL / folder / name, tmp_path / folder / name
            assert _content(built) == _content(committed), f"{folder}/{name}"
    shutil.rmtree(tmp_path)


# Keys a library writes with its own version: a newer release changes them, not the model.
_VERSION_KEYS = ("transformers_version", "peft_version")


def _content(path: Path) -> object:
    """What a model file says, apart from the bytes a library's version decides.

    JSON files are compared as values without the writer's version; safetensors
    by each tensor's name, dtype, shape and bytes (the header's layout and
    metadata are the writer's); other files byte for byte.
    """
    if path.suffix == ".json":
        value = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(value, dict):
            for key in _VERSION_KEYS:
                value.pop(key, None)
        return value
    if path.suffix == ".safetensors":
        from safetensors import safe_open

        with safe_open(str(path), framework="numpy") as handle:
            return {
                name: (str(t.dtype), t.shape, t.tobytes())
                for name in sorted(handle.keys())
                for t in [handle.get_tensor(name)]
            }
    return path.read_bytes()
