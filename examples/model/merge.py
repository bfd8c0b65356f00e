"""Merge a LoRA adapter into its base and save the merged folder - rightly, or wrongly.

What people ship is often not base + adapter but one merged folder; the
merge is a step to verify, not a formality. This writes one with PEFT's
``merge_and_unload`` (tokenizer files copied beside it) and can reproduce
the common slip: ``--save-dtype bfloat16`` saves the merged weights rounded
to bf16 (as a merge done "to save space" does), which moves every weight by
up to 2^-9 of itself - enough to flip greedy tokens whose top two logits are
close. ``evalkit reload-check RUN --merged OUT`` tells the two apart.
"""

from __future__ import annotations

import argparse
import os
import shutil
import warnings
from pathlib import Path

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja")


def merge(base: Path, adapter: Path, out: Path, save_dtype: str = "float32") -> None:
    """Merge ``adapter`` into ``base`` in float32 and save it in ``save_dtype``."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM
    from transformers.utils import logging

    logging.set_verbosity_error()
    logging.disable_progress_bar()
    # Library deprecation notices (is_gradient_checkpointing, …) say nothing about the model.
    warnings.filterwarnings("ignore", category=FutureWarning)
    model = AutoModelForCausalLM.from_pretrained(
        str(base), dtype=torch.float32, trust_remote_code=False
    )
    merged = PeftModel.from_pretrained(model, str(adapter)).merge_and_unload()
    merged.to(getattr(torch, save_dtype)).save_pretrained(str(out))
    for name in TOKENIZER_FILES:
        if (base / name).is_file():
            shutil.copyfile(base / name, out / name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, required=True)
    parser.add_argument("--adapter", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--save-dtype", choices=["float32", "bfloat16"], default="float32")
    args = parser.parse_args()
    merge(args.base, args.adapter, args.out, args.save_dtype)
    print(f"merged {args.adapter} into {args.base} -> {args.out} (saved in {args.save_dtype})")


if __name__ == "__main__":
    main()
