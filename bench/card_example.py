"""Write a tiny PEFT adapter with peft itself and show ``evalkit card`` on it (README, docs).

The base is a random Llama of tiny sizes built from a config (nothing is
downloaded); LoRA r=8, alpha 16 on q_proj and v_proj, with lora_B moved
away from zero as training would. The adapter's config names the base
``example/tiny-llama`` and no revision, as most adapters do.

Run: .venv/bin/python bench/card_example.py OUT_DIR
then: evalkit card OUT_DIR/adapter --base OUT_DIR/base
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def main(out: Path) -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=128,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
    )
    base = LlamaForCausalLM(config)
    base.save_pretrained(str(out / "base"))
    lora = LoraConfig(
        r=8,
        lora_alpha=16,
        lora_dropout=0.05,
        target_modules=["q_proj", "v_proj"],
        task_type="CAUSAL_LM",
    )
    model = get_peft_model(base, lora)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "lora_B" in name:
                parameter.normal_(std=0.01)
    model.save_pretrained(str(out / "adapter"))
    path = out / "adapter" / "adapter_config.json"
    settings = json.loads(path.read_text())
    settings["base_model_name_or_path"] = "example/tiny-llama"
    path.write_text(json.dumps(settings, indent=2, sort_keys=True))
    print(f"wrote {out / 'adapter'} ({model.get_nb_trainable_parameters()[0]:,} trainable)")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1] if len(sys.argv) > 1 else "demo-out/card-example")))
