"""Build the example model: a tiny random Llama-style base and a LoRA adapter of it.

The walkthrough runs ``evalkit generate`` and ``evalkit reload-check`` on a
real model folder without downloading one. This script writes, from a
config and a seed (no training, no download):

* ``base/``: a 2-layer Llama-style causal LM (hidden size 64, about 210k
  parameters, ~0.8 MB of float32 safetensors) whose vocabulary is the example
  tokenizer's (``examples/tokenizer``, copied in), with a
  ``generation_config.json`` that stops on ``<|im_end|>``;
* ``adapter/``: a PEFT LoRA adapter of it (r=8 on the attention
  projections, random non-zero B, so it changes the outputs) - what a
  fine-tune would save.

The weights are random: the model's outputs are garbage text. The point is
the mechanics (loading, rendering, batching, pinning, reloading), which are
the same for a 7B model. Run ``python examples/model/build.py``; the same
library versions give the same bytes (seeded, files written in a fixed
order, lists sorted).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import warnings
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
TOKENIZER = HERE.parent / "tokenizer"
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja")
BASE_SEED, ADAPTER_SEED = 0, 1
MODEL = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 2048,
    "tie_word_embeddings": False,
    # Wider than the default 0.02, so that the random logits spread as a trained
    # model's do: outputs are varied garbage rather than one token repeated, and
    # near ties occur (which is what a badly saved merge flips).
    "initializer_range": 0.1,
}
LORA: dict[str, Any] = {
    "r": 8,
    "lora_alpha": 16,
    "lora_dropout": 0.05,
    "target_modules": ["k_proj", "o_proj", "q_proj", "v_proj"],
    "init_lora_weights": False,
}


def _tokenizer_ids() -> dict[str, int]:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(
        str(TOKENIZER), local_files_only=True, trust_remote_code=False
    )
    return {
        "vocab_size": len(tokenizer),
        "eos_token_id": tokenizer.convert_tokens_to_ids("<|im_end|>"),
        "pad_token_id": tokenizer.pad_token_id,
    }


def build_base(out: Path, *, seed: int = BASE_SEED, **overrides: Any) -> None:
    """Write a tiny random Llama-style model folder with the example tokenizer."""
    import torch
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    ids = _tokenizer_ids()
    config = LlamaConfig(**{**MODEL, **overrides}, **ids, bos_token_id=None)
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config)
    model.generation_config = GenerationConfig(
        eos_token_id=ids["eos_token_id"], pad_token_id=ids["pad_token_id"]
    )
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(out))
    for name in TOKENIZER_FILES:
        shutil.copyfile(TOKENIZER / name, out / name)


def build_adapter(
    base: Path, out: Path, *, seed: int = ADAPTER_SEED, base_name: str | None = None
) -> None:
    """Write a PEFT LoRA adapter of the model in ``base`` (random, non-zero B)."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(
        str(base), local_files_only=True, trust_remote_code=False
    )
    torch.manual_seed(seed)
    peft_model = get_peft_model(model, LoraConfig(task_type="CAUSAL_LM", **LORA))
    peft_model.save_pretrained(str(out))
    (out / "README.md").unlink(missing_ok=True)  # a generic model card; nothing pinned
    config_path = out / "adapter_config.json"
    config = json.loads(config_path.read_text(encoding="utf-8"))
    # PEFT stores target_modules from a set: sort it so the bytes do not vary by run.
    config["target_modules"] = sorted(config["target_modules"])
    config["base_model_name_or_path"] = base_name or base.name
    config_path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE, help="folder to write (default: here)")
    out = parser.parse_args().out
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from transformers.utils import logging

    logging.set_verbosity_error()
    logging.disable_progress_bar()
    # Library deprecation notices (is_gradient_checkpointing, …) say nothing about the model.
    warnings.filterwarnings("ignore", category=FutureWarning)
    build_base(out / "base")
    build_adapter(out / "base", out / "adapter", base_name="examples/model/base")
    for folder in ("base", "adapter"):
        for path in sorted((out / folder).iterdir()):
            print(f"{folder}/{path.name}: {path.stat().st_size:,} bytes")


if __name__ == "__main__":
    main()
