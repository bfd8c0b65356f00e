"""``evalkit card checkpoint-N/`` on a Trainer checkpoint of a 7B LoRA run (~200 MB).

The checkpoint is synthetic but written by the libraries that write real
ones: the adapter of ``bench_card.py`` (LoRA r=8 on every linear layer of
Llama-2-7B, 224 modules, 40 MB float16), an ``optimizer.pt`` holding
``torch.optim.AdamW``'s state dict for those 448 tensors (a one-element
``step`` and two float32 moments each: 160 MB, ``torch.save``), a
LambdaLR ``scheduler.pt``, an ``rng_state.pth`` as the Trainer saves it
(python, numpy and torch states), ``training_args.bin``
(``torch.save(TrainingArguments)``) and ``trainer_state.json``. The card
reads only the pickles and the 448 step records, so its cost should not
grow with the moments' size. References measured in the same run:
``torch.load(optimizer.pt, weights_only=True)`` (what transformers does to
resume) and the sha256 of optimizer.pt.

Run: .venv/bin/python bench/bench_checkpoint_card.py
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_card import best_of, write_adapter

STEP = 500


def write_state(folder: Path) -> int:
    """The Trainer's state files beside the adapter; returns the optimizer's tensors."""
    import numpy as np
    import torch
    from safetensors.numpy import load_file
    from transformers import TrainingArguments

    adapter = load_file(str(folder / "adapter_model.safetensors"))
    shapes = [tensor.shape for tensor in adapter.values()]
    parameters = [torch.nn.Parameter(torch.zeros(shape)) for shape in shapes]
    optimizer = torch.optim.AdamW(parameters, lr=2e-4)
    state = {
        index: {
            "step": torch.tensor(float(STEP)),
            "exp_avg": torch.zeros(shape),
            "exp_avg_sq": torch.zeros(shape),
        }
        for index, shape in enumerate(shapes)
    }
    saved = optimizer.state_dict()
    saved["state"] = state
    torch.save(saved, folder / "optimizer.pt")
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0)
    for _ in range(STEP):
        scheduler.step()
    torch.save(scheduler.state_dict(), folder / "scheduler.pt")
    rng = {"python": random.getstate(), "numpy": np.random.get_state()}
    torch.save({**rng, "cpu": torch.get_rng_state()}, folder / "rng_state.pth")
    args = TrainingArguments(output_dir=str(folder.parent), report_to="none", use_cpu=True)
    torch.save(args, folder / "training_args.bin")
    (folder / "trainer_state.json").write_text(
        json.dumps({"global_step": STEP, "max_steps": 1000, "epoch": 0.5, "log_history": []})
    )
    return len(shapes)


def main() -> int:
    import torch

    from evalkit.provenance.checkpoint import checkpoint_card

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / f"checkpoint-{STEP}"
        write_adapter(folder)
        tensors = write_state(folder)
        optimizer = folder / "optimizer.pt"
        size_mb = sum(path.stat().st_size for path in folder.iterdir()) / 1e6
        card = checkpoint_card(folder)
        assert card.resumable, card.problems
        assert card.global_step == card.scheduler_steps == card.optimizer_steps == STEP
        in_process = best_of(3, lambda: checkpoint_card(folder))
        loaded = best_of(3, lambda: torch.load(optimizer, weights_only=True))
        hashed = best_of(3, lambda: hashlib.sha256(optimizer.read_bytes()).hexdigest())
        out = Path(tmp) / "checkpoint.json"
        command = [sys.executable, "-m", "evalkit", "card", str(folder), "--json", str(out),
                   "--force", "--quiet"]  # fmt: skip
        whole = best_of(3, lambda: subprocess.run(command, check=True, capture_output=True))
    print(f"date: {time.strftime('%Y-%m-%d %H:%M')}, {platform.machine()}, "
          f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}")  # fmt: skip
    print(f"checkpoint: {size_mb:.1f} MB; optimizer.pt {optimizer_mb(card):.1f} MB, {tensors} "
          "tensors")  # fmt: skip
    print(f"checkpoint_card in process (best of 3)             {in_process:6.3f} s")
    print(f"evalkit card --json, whole process (best of 3)     {whole:6.3f} s")
    print(f"reference: torch.load(optimizer.pt, weights_only)  {loaded:6.3f} s")
    print(f"reference: sha256 of optimizer.pt                  {hashed:6.3f} s")
    return 0


def optimizer_mb(card: object) -> float:
    files = {file.name: file.bytes for file in card.files}  # type: ignore[attr-defined]
    return files["optimizer.pt"] / 1e6


if __name__ == "__main__":
    sys.exit(main())
