"""The activation terms against what autograd really keeps, in transformers and PEFT.

A tiny model of each family runs one forward pass on the CPU under
``torch.autograd.graph.saved_tensors_hooks``; the bytes of every distinct
storage autograd saves (parameters aside) are what the backward will need.
The plan's activations, plus the one logits-sized log-softmax the loss saves
in the forward, must never exceed them (a lower bound), and must not fall far
below either (a bound too loose plans nothing).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pytest

from evalkit.plan.activations import FP32, activations
from evalkit.plan.config import parse_config
from evalkit.plan.options import resolve_options
from evalkit.plan.phases import autocast_copies
from evalkit.plan.state import dtypes

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
peft = pytest.importorskip("peft")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
# PEFT calls a transformers method that transformers deprecates: not ours to fix.
pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")

SMALL = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 3,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 100,
}
FAMILIES = {
    "llama": {"model_type": "llama", "tie_word_embeddings": False},
    "qwen3": {"model_type": "qwen3", "head_dim": 16, "tie_word_embeddings": False},
    "gemma2": {"model_type": "gemma2", "head_dim": 16, "sliding_window": 16},
    "phi3": {"model_type": "phi3", "tie_word_embeddings": False, "pad_token_id": 0},
}
BATCH, SEQ = 2, 32

CASES = [
    ("llama", "full", "bf16", "sdpa", None),
    ("llama", "full", "fp32", "eager", None),
    ("llama", "full", "amp", "sdpa", None),
    ("llama", "lora", "bf16", "sdpa", "q_proj,v_proj"),
    ("llama", "lora", "bf16", "sdpa", "o_proj"),
    ("llama", "lora", "bf16", "eager", "gate_proj,down_proj"),
    ("llama", "lora", "fp32", "sdpa", "all-linear"),
    ("llama", "lora", "amp", "sdpa", "all-linear"),
    ("qwen3", "full", "bf16", "sdpa", None),
    ("qwen3", "lora", "bf16", "sdpa", "all-linear"),
    ("gemma2", "lora", "bf16", "eager", None),
    ("phi3", "full", "bf16", "sdpa", None),
    ("phi3", "lora", "bf16", "sdpa", "all-linear"),
]


def saved_bytes(model, ids, autocast: bool) -> int:
    """Bytes of the distinct non-parameter storages autograd saves in one forward pass."""
    parameters = {parameter.untyped_storage().data_ptr() for parameter in model.parameters()}
    saved: dict[int, int] = {}

    def pack(tensor):
        storage = tensor.untyped_storage()
        if storage.data_ptr() not in parameters:
            saved[storage.data_ptr()] = storage.nbytes()
        return tensor

    context = torch.autocast("cpu", dtype=torch.bfloat16) if autocast else contextlib.nullcontext()
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor), context:
        model(input_ids=ids, labels=ids)
    return sum(saved.values())


@pytest.mark.parametrize(("family", "method", "precision", "attention", "targets"), CASES)
def test_activations_bound_what_autograd_saves(family, method, precision, attention, targets):
    data = {**SMALL, **FAMILIES[family]}
    shape = parse_config(data, Path(f"{family}/config.json"))
    options = resolve_options(
        shape,
        method=method,
        r=4 if method == "lora" else None,
        targets=targets,
        seq_len=SEQ,
        batch_size=BATCH,
        precision=precision,
        attention=attention,
    )
    config = transformers.AutoConfig.for_model(**data)
    config._attn_implementation = attention
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config)
    if precision == "bf16":
        model = model.to(torch.bfloat16)
    if method == "lora":
        model = peft.get_peft_model(
            model, peft.LoraConfig(r=4, target_modules=list(options.targets))
        )
    ids = torch.randint(0, SMALL["vocab_size"], (BATCH, SEQ))
    measured = saved_bytes(model, ids, autocast=precision == "amp")

    saved = activations(shape, options, dtypes(options))
    log_softmax = FP32 * SMALL["vocab_size"] * BATCH * SEQ  # the one of the three saved forward
    planned = saved.stored + saved.head + log_softmax + autocast_copies(shape, options)[0]
    assert planned <= measured
    assert planned >= 0.8 * measured, (planned, measured)
