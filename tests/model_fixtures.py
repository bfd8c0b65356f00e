"""Tiny random models built from a config, once per test session (no download).

A base (hidden size 32, 2 layers, the example tokenizer), its LoRA adapter,
another adapter, a base of another shape, and merged folders (fp32, bf16,
another adapter's), plus a conversations file and a run of ``generate``
on them. The builders are the example's (``examples/model/build.py``, the
merge script beside it), so the walkthrough's model is built the same way.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE_MODEL = ROOT / "examples" / "model"
SMALL = {"hidden_size": 32, "intermediate_size": 64, "num_attention_heads": 4}
MAX_NEW_TOKENS = 16
BATCH_SIZE = 4
SYSTEM = "Triage the ticket; answer with JSON."
TICKETS = [
    "My order ORD-123456 never arrived.",
    "I was charged twice for the same order and nobody answers my emails.",
    "hi",
    "The app crashes when I open the settings page on my phone, every single time.",
    "Refund me!",
    "Please close my account.",
    "Where is my parcel? The tracking page has not changed in ten days.",
    "Your product broke after a week. I want a replacement or I will call my lawyer.",
    "Can I change the delivery address?",
    "Is the blue one waterproof?",
]


@dataclass(frozen=True)
class TinyModels:
    """Paths of the session's model folders and data."""

    root: Path
    base: Path
    adapter: Path
    other_adapter: Path
    other_base: Path
    short_base: Path
    merged: Path
    merged_bf16: Path
    merged_other: Path
    data: Path
    run: Path

    def copy(self, name: str, destination: Path) -> Path:
        """A private copy of one folder (for tests that change files)."""
        target = destination / name
        shutil.copytree(getattr(self, name), target)
        return target


def conversations() -> list[dict[str, Any]]:
    """Ten tickets as conversations: system prompt (most), user turn, reference answer."""
    rows = []
    for number, text in enumerate(TICKETS, start=1):
        messages = [{"role": "user", "content": text}]
        if number % 3:
            messages.insert(0, {"role": "system", "content": SYSTEM})
        answer = json.dumps({"category": "billing", "priority": "low"})
        rows.append({
            "ticket_id": f"T{number:02d}",
            "category": "billing",
            "priority": "low",
            "order_id": None,
            "amount": None,
            "messages": [*messages, {"role": "assistant", "content": answer}],
        })  # fmt: skip
    return rows


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def _quiet() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from transformers.utils import logging

    logging.set_verbosity_error()
    logging.disable_progress_bar()


@pytest.fixture(scope="session")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> TinyModels:
    torch = pytest.importorskip("torch")
    pytest.importorskip("peft")
    _quiet()
    # Tiny models gain nothing from threads, and on a busy machine torch's
    # threads wait on each other: one thread keeps the tests fast and steady
    # (the reload-check processes inherit it through the environment).
    torch.set_num_threads(1)
    os.environ["OMP_NUM_THREADS"] = "1"
    sys.path.insert(0, str(EXAMPLE_MODEL))
    import build  # examples/model/build.py
    import merge  # examples/model/merge.py

    from evalkit.model.generate import generate

    root = tmp_path_factory.mktemp("tiny-models")
    paths = {name: root / name for name in TinyModels.__dataclass_fields__ if name != "root"}
    build.build_base(paths["base"], seed=3, **SMALL)
    build.build_adapter(paths["base"], paths["adapter"], seed=4)
    build.build_adapter(paths["base"], paths["other_adapter"], seed=5)
    build.build_base(paths["other_base"], seed=3, **{**SMALL, "hidden_size": 48})
    build.build_base(paths["short_base"], seed=3, **{**SMALL, "num_hidden_layers": 1})
    merge.merge(paths["base"], paths["adapter"], paths["merged"], "float32")
    merge.merge(paths["base"], paths["adapter"], paths["merged_bf16"], "bfloat16")
    merge.merge(paths["base"], paths["other_adapter"], paths["merged_other"], "float32")
    write_jsonl(paths["data"].with_suffix(".jsonl"), conversations())
    paths["data"] = paths["data"].with_suffix(".jsonl")
    result = generate(
        paths["base"],
        paths["data"],
        id_column="ticket_id",
        text=["messages"],
        adapter=paths["adapter"],
        max_new_tokens=MAX_NEW_TOKENS,
        batch_size=BATCH_SIZE,
        device="cpu",
    )
    result.write(paths["run"])
    return TinyModels(root=root, **paths)


@pytest.fixture(scope="session")
def reference_model(tiny: TinyModels) -> Any:
    """base + adapter loaded by transformers and peft directly (not through evalkit)."""
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(str(tiny.base), dtype=torch.float32)
    return PeftModel.from_pretrained(base, str(tiny.adapter)).eval()


@pytest.fixture(scope="session")
def reference_tokenizer(tiny: TinyModels) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(tiny.base))


def greedy_one_by_one(model: Any, prompts: list[list[int]], **options: Any) -> list[list[int]]:
    """``model.generate(do_sample=False)`` on each prompt alone, no padding."""
    import torch

    outputs = []
    with torch.no_grad():
        for ids in prompts:
            sequence = model.generate(
                input_ids=torch.tensor([ids]),
                attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                do_sample=False,
                max_new_tokens=MAX_NEW_TOKENS,
                **options,
            )
            outputs.append(sequence[0, len(ids) :].tolist())
    return outputs


def trim_at(stops: set[int]) -> Callable[[list[int]], list[int]]:
    """Cut a generated sequence after its first stop token (the padding after it goes)."""

    def trim(ids: list[int]) -> list[int]:
        for position, token in enumerate(ids):
            if token in stops:
                return ids[: position + 1]
        return ids

    return trim
