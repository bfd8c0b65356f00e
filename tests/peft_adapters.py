"""Adapter folders written by peft itself, from tiny random Llama models built from a config.

Each variant records what peft and torch say about it (the references the
card is tested against): ``get_nb_trainable_parameters()``, and per LoRA
layer its in/out features, r and ``scaling`` as peft computed them. "Trained"
adapters get random lora_B values (training moves B away from its zero
init); the ``untrained`` one is saved as ``get_peft_model`` made it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SEED = 0
HIDDEN = 32
VOCAB = 64


@dataclass(frozen=True)
class Built:
    """One adapter folder and peft's own figures for it."""

    path: Path
    trainable: int
    modules: dict[str, dict[str, Any]]
    """module name -> {d_in, d_out, r, scaling} from peft's LoRA layers."""


def llama_config(hidden: int = HIDDEN, **extra: Any) -> Any:
    from transformers import LlamaConfig

    return LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=hidden,
        intermediate_size=48,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
        **extra,
    )


def _model(hidden: int = HIDDEN, **extra: Any) -> Any:
    import torch
    from transformers import LlamaForCausalLM

    torch.manual_seed(SEED)
    return LlamaForCausalLM(llama_config(hidden, **extra))


def _train(model: Any) -> None:
    """Move every zero-initialised half away from zero, as training does."""
    import torch

    generator = torch.Generator().manual_seed(SEED + 1)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "lora_B" in name or "lora_embedding_A" in name:
                parameter.copy_(torch.randn(parameter.shape, generator=generator) * 0.01)


def _references(peft_model: Any) -> dict[str, dict[str, Any]]:
    from peft.tuners.lora import LoraLayer

    modules = {}
    prefix = "base_model.model."
    for name, module in peft_model.named_modules():
        if isinstance(module, LoraLayer) and "default" in module.r:
            modules[name.removeprefix(prefix)] = {
                "d_in": module.in_features,
                "d_out": module.out_features,
                "r": module.r["default"],
                "scaling": module.scaling["default"],
            }
    return modules


VARIANTS: dict[str, dict[str, Any]] = {
    "lora_qv": {"r": 4, "lora_alpha": 8, "target_modules": ["q_proj", "v_proj"],
                "lora_dropout": 0.05},
    "all_linear": {"r": 2, "lora_alpha": 4, "target_modules": "all-linear"},
    "regex": {"r": 2, "lora_alpha": 4, "target_modules": r".*\.1\.self_attn\.(q|v)_proj"},
    "rslora": {"r": 4, "lora_alpha": 8, "target_modules": ["q_proj", "v_proj"], "use_rslora": True},
    "dora": {"r": 4, "lora_alpha": 8, "target_modules": ["q_proj", "v_proj"], "use_dora": True},
    "rank_pattern": {"r": 2, "lora_alpha": 4, "target_modules": ["q_proj", "v_proj", "o_proj"],
                     "rank_pattern": {"v_proj": 4, "model.layers.1.self_attn.o_proj": 6},
                     "alpha_pattern": {"q_proj": 16}},
    "modules_to_save": {"r": 4, "target_modules": ["q_proj"], "modules_to_save": ["lm_head"]},
    "embedding": {"r": 4, "target_modules": ["embed_tokens", "q_proj"]},
    "bias_all": {"r": 2, "target_modules": ["q_proj", "k_proj"], "bias": "all",
                 "model": {"attention_bias": True}},
    "untrained": {"r": 4, "lora_alpha": 8, "target_modules": ["q_proj", "v_proj"],
                  "untrained": True},
    # An ablation of r: r8 vs r16 at fixed alpha, at fixed alpha/r, and with dropout changed too.
    "r8_a16": {"r": 8, "lora_alpha": 16, "target_modules": ["q_proj", "v_proj"]},
    "r16_a16": {"r": 16, "lora_alpha": 16, "target_modules": ["q_proj", "v_proj"]},
    "r16_a32": {"r": 16, "lora_alpha": 32, "target_modules": ["q_proj", "v_proj"]},
    "r16_a16_dropout": {"r": 16, "lora_alpha": 16, "target_modules": ["q_proj", "v_proj"],
                        "lora_dropout": 0.1},
}  # fmt: skip


def build_one(root: Path, name: str, settings: dict[str, Any]) -> Built:
    """Write one variant with peft's save_pretrained and record peft's figures."""
    from peft import LoraConfig, get_peft_model

    options = dict(settings)
    untrained = options.pop("untrained", False)
    model_options = options.pop("model", {})
    peft_model = get_peft_model(_model(**model_options), LoraConfig(**options))
    if not untrained:
        _train(peft_model)
    folder = root / name
    peft_model.save_pretrained(str(folder))
    trainable, _ = peft_model.get_nb_trainable_parameters()
    return Built(folder, int(trainable), _references(peft_model))


def save_base(folder: Path, hidden: int = HIDDEN, tokens: int | None = None) -> Path:
    """A base model folder (config.json + model.safetensors), with a tokenizer of ``tokens``."""
    _model(hidden).save_pretrained(str(folder))
    if tokens is not None:
        save_tokenizer(folder, tokens)
    return folder


def save_tokenizer(folder: Path, tokens: int) -> Any:
    """A word-level tokenizer with ``tokens`` ids (the last two added as special tokens)."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {f"w{i}": i for i in range(tokens - 2)}
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token="w0"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="w0")
    tokenizer.add_special_tokens({"additional_special_tokens": ["<extra_a>", "<extra_b>"]})
    tokenizer.chat_template = "{% for m in messages %}{{ m['content'] }}{% endfor %}"
    tokenizer.save_pretrained(str(folder))
    return tokenizer


def build_adapters(root: Path) -> dict[str, Built]:
    """Every variant, plus base folders: ``base`` (same width) and ``wide_base`` (another)."""
    import os

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    built = {name: build_one(root, name, settings) for name, settings in VARIANTS.items()}
    save_base(root / "base", tokens=VOCAB)
    save_base(root / "wide_base", hidden=48)
    return built


def edit_config(folder: Path, **changes: Any) -> None:
    """Change keys of an adapter_config.json in place."""
    path = folder / "adapter_config.json"
    config = json.loads(path.read_text())
    config.update(changes)
    path.write_text(json.dumps(config, indent=2))
