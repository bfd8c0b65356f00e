"""The order sheet's disk and host bounds against what transformers, peft and torch really write
and hold: a ``Trainer`` checkpoint's folder, the adapter file, and a CPU merge's peak RSS."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evalkit.plan.config import load_model_shape
from evalkit.plan.options import resolve_options
from evalkit.plan.phases import compute_bounds
from evalkit.plan.storage import disk_bytes, host_bytes

pytestmark = pytest.mark.slow
TARGETS = "q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj"


def _config(folder: Path, **changes: object) -> Path:
    from transformers import LlamaConfig

    values: dict[str, object] = {
        "hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 1000,
        "tie_word_embeddings": False, "max_position_embeddings": 64, "pad_token_id": 0,
    }  # fmt: skip
    values.update(changes)
    LlamaConfig(**values).save_pretrained(folder)  # type: ignore[arg-type]
    return folder


def _model(folder: Path, dtype: str = "float32"):
    """A random model of the folder's config (seeded), in ``dtype``."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    torch.manual_seed(0)
    config = AutoConfig.from_pretrained(folder)
    return AutoModelForCausalLM.from_config(config, dtype=getattr(torch, dtype))


def _size(path: Path) -> int:
    return sum(item.stat().st_size for item in path.rglob("*") if item.is_file())


def _bytes(folder: Path, **options: object):
    shape = load_model_shape(folder)
    resolved = resolve_options(shape, **options)
    bounds = compute_bounds(shape, resolved)
    return bounds, disk_bytes(shape, resolved, bounds.counts, bounds.sizes, bounds.trainable)


def _train(model, out: Path) -> Path:
    import torch
    from transformers import Trainer, TrainingArguments
    from transformers.utils import logging

    logging.set_verbosity_error()
    generator = torch.Generator().manual_seed(0)
    rows = [{"input_ids": ids, "labels": ids}
            for ids in torch.randint(1, 1000, (8, 16), generator=generator).tolist()]  # fmt: skip
    arguments = TrainingArguments(
        output_dir=str(out), max_steps=2, save_strategy="steps", save_steps=2,
        per_device_train_batch_size=2, use_cpu=True, report_to=[], optim="adamw_torch",
        logging_strategy="no", disable_tqdm=True, seed=0,
    )  # fmt: skip
    Trainer(model=model, args=arguments, train_dataset=rows).train()
    return out / "checkpoint-2"


def test_a_trainer_lora_checkpoint_and_the_adapter_file(tmp_path: Path) -> None:
    """checkpoint_gb and adapter_gb bound the real folder and file from below, within 1.5x."""
    from peft import LoraConfig, get_peft_model

    base = _config(tmp_path / "base")
    bounds, disk = _bytes(base, method="lora", r=16, targets=TARGETS, precision="fp32")
    model = _model(base)
    peft_model = get_peft_model(model, LoraConfig(r=16, target_modules=TARGETS.split(",")))
    trainable, _ = peft_model.get_nb_trainable_parameters()
    assert trainable == bounds.trainable  # the plan's count, as PEFT counts it
    checkpoint = _train(peft_model, tmp_path / "run")
    real = _size(checkpoint)
    assert disk.checkpoint <= real <= 1.5 * disk.checkpoint, (disk.checkpoint, real)
    peft_model.save_pretrained(tmp_path / "adapter")
    adapter = (tmp_path / "adapter" / "adapter_model.safetensors").stat().st_size
    assert disk.adapter <= adapter <= 1.5 * disk.adapter, (disk.adapter, adapter)


def test_a_trainer_full_fine_tuning_checkpoint(tmp_path: Path) -> None:
    """Full fine-tuning in fp32: the weights (4 bytes) and two fp32 moments (8 bytes)."""
    base = _config(tmp_path / "base")
    bounds, disk = _bytes(base, method="full", precision="fp32")
    model = _model(base)
    assert sum(p.numel() for p in model.parameters()) == bounds.counts.total
    real = _size(_train(model, tmp_path / "run"))
    assert disk.checkpoint == 12 * bounds.counts.total
    assert disk.checkpoint <= real <= 1.5 * disk.checkpoint, (disk.checkpoint, real)


MERGE = """
import json, sys, os
import torch, transformers, peft
from peft import PeftModel
from transformers import AutoModelForCausalLM

def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
before = status("VmRSS")
with open("/proc/self/clear_refs", "w") as handle:  # the peak from here (Linux)
    handle.write("5")
base, adapter, out = sys.argv[1:]
model = AutoModelForCausalLM.from_pretrained(base, dtype=torch.bfloat16)
merged = PeftModel.from_pretrained(model, adapter).merge_and_unload()
merged.save_pretrained(out)
print(json.dumps({"before": before, "peak": status("VmHWM")}))
"""


@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="Linux peak RSS")
def test_a_cpu_merge_holds_at_least_the_host_bound(tmp_path: Path) -> None:
    """The peak RSS a CPU merge adds (load the 16-bit base, attach the adapter, merge, save) is
    above host.export_gb, and the bound is most of it (the bound is no token figure)."""
    from peft import LoraConfig, get_peft_model

    base = _config(tmp_path / "base", hidden_size=512, intermediate_size=1024,
                   num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=4,
                   vocab_size=32000)  # fmt: skip
    model = _model(base, "bfloat16")
    model.save_pretrained(base)
    get_peft_model(model, LoraConfig(r=8, target_modules=["q_proj", "v_proj"])).save_pretrained(
        tmp_path / "adapter"
    )
    shape = load_model_shape(base)
    options = resolve_options(shape, method="lora", r=8, targets="q_proj,v_proj")
    bounds = compute_bounds(shape, options)
    bound = host_bytes(shape, options, bounds.counts, bounds.sizes, bounds.trainable).export
    assert bound >= 2 * bounds.counts.total  # the whole 16-bit model
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_VERBOSITY": "error"}
    done = subprocess.run(
        [sys.executable, "-c", MERGE, str(base), str(tmp_path / "adapter"), str(tmp_path / "m")],
        capture_output=True, text=True, env=env, timeout=300, check=True,
    )  # fmt: skip
    measured = json.loads(done.stdout.strip().splitlines()[-1])
    added = measured["peak"] - measured["before"]
    assert added >= bound, (added, bound)
    assert bound >= 0.25 * added, (added, bound)
