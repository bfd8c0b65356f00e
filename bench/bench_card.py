"""``evalkit card`` on an adapter of a 7B model's shapes (~40 MB): goal under 2 s, hashing included.

The adapter is synthetic: random float16 tensors of the shapes peft saves
for LoRA r=8 on every linear layer of Llama-2-7B (hidden 4096, MLP 11008,
32 layers), written with the ``safetensors`` package's numpy API, beside an
adapter_config.json like the one peft writes. References measured in the
same run: sha256 of the weights file alone (the floor of any card that
hashes the weights), and loading every tensor with ``safetensors.numpy``.

Run: .venv/bin/python bench/bench_card.py
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HIDDEN, MLP, LAYERS, R = 4096, 11008, 32, 8
LINEARS = {
    "self_attn.q_proj": (HIDDEN, HIDDEN), "self_attn.k_proj": (HIDDEN, HIDDEN),
    "self_attn.v_proj": (HIDDEN, HIDDEN), "self_attn.o_proj": (HIDDEN, HIDDEN),
    "mlp.gate_proj": (HIDDEN, MLP), "mlp.up_proj": (HIDDEN, MLP), "mlp.down_proj": (MLP, HIDDEN),
}  # fmt: skip


def write_adapter(folder: Path) -> int:
    """The adapter folder; returns its parameter count."""
    from safetensors.numpy import save_file

    rng = np.random.default_rng(0)
    tensors, targets = {}, []
    for layer in range(LAYERS):
        for module, (d_in, d_out) in LINEARS.items():
            name = f"model.layers.{layer}.{module}"
            targets.append(name)
            prefix = f"base_model.model.{name}"
            tensors[f"{prefix}.lora_A.weight"] = rng.standard_normal((R, d_in), np.float32).astype(
                np.float16
            )
            tensors[f"{prefix}.lora_B.weight"] = (
                rng.standard_normal((d_out, R), np.float32) * 0.01
            ).astype(np.float16)
    folder.mkdir(parents=True)
    save_file(tensors, str(folder / "adapter_model.safetensors"), metadata={"format": "pt"})
    config = {
        "peft_type": "LORA", "task_type": "CAUSAL_LM", "peft_version": "0.21.2",
        "base_model_name_or_path": "meta-llama/Llama-2-7b-hf",
        "revision": "01c7f73d771dfac7d292323805ebc428287df4f9",
        "r": R, "lora_alpha": 16, "lora_dropout": 0.05, "bias": "none",
        "target_modules": targets, "init_lora_weights": True, "use_dora": False,
        "use_rslora": False, "rank_pattern": {}, "alpha_pattern": {}, "modules_to_save": None,
    }  # fmt: skip
    (folder / "adapter_config.json").write_text(json.dumps(config, indent=2))
    return sum(t.size for t in tensors.values())


def best_of(runs: int, function) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> int:
    from safetensors.numpy import load_file

    from evalkit.provenance.card import adapter_card

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "adapter"
        params = write_adapter(folder)
        weights = folder / "adapter_model.safetensors"
        size_mb = weights.stat().st_size / 1e6
        card = adapter_card(folder)
        assert card.trainable_params == params, (card.trainable_params, params)
        in_process = best_of(3, lambda: adapter_card(folder))
        floor = best_of(3, lambda: hashlib.sha256(weights.read_bytes()).hexdigest())
        loaded = best_of(3, lambda: load_file(str(weights)))
        out = Path(tmp) / "card.json"
        command = [sys.executable, "-m", "evalkit", "card", str(folder), "--out", str(out),
                   "--force", "--quiet"]  # fmt: skip
        whole = best_of(3, lambda: subprocess.run(command, check=True, capture_output=True))
    print(f"date: {time.strftime('%Y-%m-%d %H:%M')}, {platform.machine()}, "
          f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}")  # fmt: skip
    print(f"adapter: {len(card.modules)} modules, {params:,} parameters, {size_mb:.1f} MB float16")
    print(f"evalkit.adapter_card in process (best of 3)    {in_process:6.3f} s")
    print(f"evalkit card --out, whole process (best of 3)  {whole:6.3f} s   goal < 2 s")
    print(f"reference: sha256 of the weights file alone     {floor:6.3f} s")
    print(f"reference: safetensors.numpy.load_file          {loaded:6.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
