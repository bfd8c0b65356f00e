"""The FLOPs of a training step against torch's own count, and against hand-worked cases.

The independent computation: a tiny model of each family, built by
transformers from a config (PEFT's LoRA on top), runs one forward and one
backward on the CPU under ``torch.utils.flop_counter.FlopCounterMode``,
which counts every matrix product autograd really executes. Eager attention
multiplies the whole s x s square and masks afterwards, so the plan's
count is taken non-causal for the comparison; the bound itself is causal.
With checkpointing, transformers' ``gradient_checkpointing_enable`` on a PEFT
model makes the embedding's output need a gradient (``input_grads``).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from evalkit.plan.config import load_model_shape, parse_config
from evalkit.plan.flops import attention_context, context_sum, first_block, train_flops
from evalkit.plan.options import resolve_options

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
peft = pytest.importorskip("peft")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning")

ROOT = Path(__file__).resolve().parents[1]
SMALL = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 256,
}
FAMILIES = {
    "llama": {"model_type": "llama", "tie_word_embeddings": False},
    "llama-tied": {"model_type": "llama", "tie_word_embeddings": True},
    "qwen2": {"model_type": "qwen2", "tie_word_embeddings": False},
    "phi3": {"model_type": "phi3", "tie_word_embeddings": False, "pad_token_id": 0},
}
BATCH, SEQ = 2, 16
ALL = "q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj"
CASES = [
    ("llama", None, False),
    ("llama", "q_proj,v_proj", False),
    ("llama", "k_proj", False),
    ("llama", "o_proj", False),
    ("llama", "gate_proj", False),
    ("llama", "down_proj", False),
    ("llama", ALL, False),
    ("llama", None, True),
    ("llama", "q_proj,v_proj", True),
    ("llama", "down_proj", True),
    ("llama", ALL, True),
    ("llama-tied", None, False),
    ("llama-tied", "q_proj,v_proj", True),
    ("qwen2", None, False),
    ("qwen2", "v_proj,up_proj", False),
    ("phi3", None, True),
    ("phi3", "qkv_proj", False),
    ("phi3", "gate_up_proj,down_proj", True),
]


def _model(family: str, targets: str | None, checkpointing: bool):
    values = {**SMALL, **FAMILIES[family]}
    model_type = values.pop("model_type")
    config = transformers.AutoConfig.for_model(model_type, **values)
    config._attn_implementation = "eager"
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config)
    if targets is not None:
        lora = peft.LoraConfig(r=4, target_modules=targets.split(","), lora_dropout=0.0)
        model = peft.get_peft_model(model, lora)
    else:
        for parameter in model.parameters():
            parameter.requires_grad_(True)
    if checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    model.train()
    return model, {**SMALL, **FAMILIES[family]}


def _counted(model) -> int:
    from torch.utils.flop_counter import FlopCounterMode

    ids = torch.randint(1, SMALL["vocab_size"], (BATCH, SEQ))
    with FlopCounterMode(display=False) as counter:
        model(input_ids=ids, labels=ids, use_cache=False).loss.backward()
    return int(counter.get_total_flops())


@pytest.mark.parametrize(("family", "targets", "checkpointing"), CASES)
def test_the_count_is_what_torch_counts(family, targets, checkpointing) -> None:
    model, values = _model(family, targets, checkpointing)
    shape = parse_config(values, Path(f"{family}.json"))
    options = resolve_options(
        shape,
        method="full" if targets is None else "lora",
        r=None if targets is None else 4,
        targets=targets,
        seq_len=SEQ,
        grad_checkpointing=checkpointing,
    )
    input_grads = checkpointing and targets is not None
    planned = train_flops(shape, options, causal=False, input_grads=input_grads)
    assert BATCH * planned.per_sequence == _counted(model)
    # The bound leaves out what a stack may skip: it never exceeds the count.
    bound = train_flops(shape, options)
    assert bound.per_sequence <= planned.per_sequence


def test_a_frozen_first_block_needs_no_gradient_below_its_first_adapter() -> None:
    shape = parse_config({**SMALL, "model_type": "llama"}, Path("x.json"))
    first = first_block(shape, ("gate_proj",))
    assert first.inputs == {
        "attn_in": False,
        "attn_out": False,
        "mlp_in": False,
        "mlp_mid": True,
    }
    assert first.attention_operands == 0
    only_k = first_block(shape, ("k_proj",))
    assert (only_k.q, only_k.k, only_k.v) == (False, True, False)
    assert only_k.attention_operands == 2  # dP and dK


def test_causal_keys_by_hand() -> None:
    assert context_sum(4, None) == 1 + 2 + 3 + 4
    assert context_sum(6, 3) == 1 + 2 + 3 + 3 + 3 + 3
    assert context_sum(6, 10) == 21
    assert context_sum(6, 3, causal=False) == 36


def test_llama_2_7b_by_hand() -> None:
    """Llama-2-7B, LoRA r 8 on q and v, 2,048 tokens, no checkpointing, worked out here.

    Per block: q, k, v, o 4096 x 4096 each and gate, up, down 4096 x 11008:
    4 · 16,777,216 + 3 · 45,088,768 = 202,375,168 weights; the head 32,000 x
    4096 = 131,072,000. Forward linears 2 · (32 · 202,375,168 + 131,072,000)
    = 13,214,154,752 a token. Causal attention: each query meets (s+1)/2 =
    1,024.5 keys on average, 4 · 4096 · 32 · 1,024.5 = 537,133,056 a token.
    Backward, frozen base: every input gradient but the first block's q, k,
    v (whose input, the embedding's, needs none): 2 · (31 · 202,375,168 +
    (202,375,168 − 3 · 16,777,216) + 131,072,000) = 13,113,491,456; attention
    backward 31 blocks at twice the forward and the first at 3 of 4 products
    (dV, dP, dQ): 537,133,056 / 32 · (62 + 1.5) = 1,065,873,408.
    """
    shape = load_model_shape(ROOT / "examples" / "plan" / "llama-2-7b")
    options = resolve_options(shape, method="lora", seq_len=2048)
    terms = {term.name: term.flops / 2048 for term in train_flops(shape, options).terms}
    assert terms["forward_linears"] == 13_214_154_752
    assert terms["forward_attention"] == 537_133_056
    assert terms["backward_input_gradients"] == 13_113_491_456
    assert terms["backward_attention"] == 1_065_873_408
    # A: 8 x 4096, B: 4096 x 8 on q and on v, each block: 2 · 32 · 2 · 8 · 8192.
    assert terms["adapter_forward"] == 8_388_608


def test_full_fine_tuning_is_six_flops_a_parameter_plus_attention() -> None:
    """Kaplan et al.'s 6N per token (forward 2N, backward 4N) for the matrix parameters."""
    shape = load_model_shape(ROOT / "examples" / "plan" / "mistral-7b-v0.1")
    options = resolve_options(shape, method="full", seq_len=4096)
    counted = train_flops(shape, options)
    matrices = (
        shape.num_layers * sum(layer.d_in * layer.d_out for layer in shape.linears)
        + shape.vocab_size * shape.hidden_size
    )
    attention = 3 * 4 * shape.q_dim * attention_context(shape, 4096)
    assert counted.per_sequence == 6 * matrices * 4096 + attention


def test_checkpointing_adds_a_forward_less_the_last_product() -> None:
    shape = load_model_shape(ROOT / "examples" / "plan" / "llama-2-7b")
    plain = train_flops(shape, resolve_options(shape, method="full", seq_len=1024))
    checkpointed = train_flops(
        shape, resolve_options(shape, method="full", seq_len=1024, grad_checkpointing=True)
    )
    down = 4096 * 11008
    block = 4 * 4096 * 4096 + 3 * down
    attention = 4 * 4096 * attention_context(shape, 1024)
    extra = 2 * 1024 * 32 * (block - down) + attention
    assert checkpointed.per_sequence - plain.per_sequence == extra
