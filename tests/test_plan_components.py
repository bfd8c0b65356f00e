"""Each term of the memory plan against a case worked by hand.

The tiny model: 2 layers, hidden 64, 4 heads of 16 with 2 kv heads (q 64
wide, k and v 32), a gated MLP of 128, vocabulary 100, untied. Per layer its
linears hold q 4,096 + k 2,048 + v 2,048 + o 4,096 + gate, up, down 8,192
each = 36,864 weights; norms 2 x 64 per layer and 64 at the end; embedding
and head 6,400 each: 86,848 parameters.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from evalkit.plan.activations import activations, block_terms, kv_cache_bytes
from evalkit.plan.api import phase_bounds, plan, plan_shape
from evalkit.plan.config import load_model_shape, parse_config
from evalkit.plan.counts import lora_parameters, parameter_counts
from evalkit.plan.options import resolve_options
from evalkit.plan.phases import compute_bounds
from evalkit.plan.state import dtypes, quantized_bytes, training_state, weight_bytes

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "plan"
TINY = {
    "model_type": "llama",
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 100,
    "tie_word_embeddings": False,
}


@pytest.fixture(scope="module")
def tiny():
    return parse_config(TINY, Path("tiny/config.json"))


def test_tiny_counts(tiny) -> None:
    counts = parameter_counts(tiny)
    assert counts.linear_weights == 2 * 36_864
    assert (counts.embedding, counts.head, counts.norms) == (6_400, 6_400, 2 * 128 + 64)
    assert counts.total == 86_848
    # LoRA r=4 on q and v: 4 x (64 + 64) + 4 x (64 + 32) = 896 per layer.
    assert lora_parameters(tiny, ("q_proj", "v_proj"), 4) == 2 * 896


def test_nf4_packs_two_weights_a_byte_plus_an_fp32_absmax_per_64(tiny) -> None:
    packed, constants = quantized_bytes(tiny, "nf4")
    assert packed == 73_728 // 2
    # Blocks of 64: q 64, k 32, v 32, o 64, gate/up/down 128 each = 576 per layer, 4 bytes each.
    assert constants == 2 * 576 * 4
    assert constants * 8 / 73_728 == 0.5  # bits per parameter


def test_double_quantization_stores_8_bit_absmax_and_an_fp32_scale_per_256(tiny) -> None:
    _, constants = quantized_bytes(tiny, "nf4-dq")
    # Each tensor: one byte per block, 4 bytes per 256 blocks (rounded up, per tensor).
    per_layer = (64 + 4) + 2 * (32 + 4) + (64 + 4) + 3 * (128 + 4)
    assert constants == 2 * per_layer
    big = load_model_shape(EXAMPLES / "llama-2-7b")
    _, big_constants = quantized_bytes(big, "nf4-dq")
    bits = big_constants * 8 / parameter_counts(big).linear_weights
    assert pytest.approx(0.127, abs=5e-4) == 8 / 64 + 32 / (64 * 256)
    assert bits == pytest.approx(8 / 64 + 32 / (64 * 256), rel=1e-3)  # the QLoRA paper's 0.127


def test_int8_keeps_a_byte_a_weight_and_an_fp32_scale_per_row(tiny) -> None:
    packed, constants = quantized_bytes(tiny, "int8")
    assert packed == 73_728
    assert constants == 2 * 4 * (64 + 32 + 32 + 64 + 128 + 128 + 64)


def test_weights_by_method(tiny) -> None:
    counts = parameter_counts(tiny)
    lora = resolve_options(tiny, method="lora", r=4)
    held = weight_bytes(tiny, lora, counts, dtypes(lora))
    assert (held.unquantized_weights, held.trainable_params) == (86_848 * 2, 1_792 * 4)
    qlora = resolve_options(tiny, method="qlora", r=4, quant="nf4", kbit_prep=False)
    held = weight_bytes(tiny, qlora, counts, dtypes(qlora))
    assert held.quantized_linears == 36_864
    assert held.unquantized_weights == (86_848 - 73_728) * 2  # embedding, head, norms at bf16
    prepared = resolve_options(tiny, method="qlora", r=4, quant="nf4")
    held = weight_bytes(tiny, prepared, counts, dtypes(prepared))
    assert held.unquantized_weights == (86_848 - 73_728) * 4  # k-bit prep's fp32 upcast
    full = resolve_options(tiny, method="full", precision="amp")
    assert weight_bytes(tiny, full, counts, dtypes(full)).unquantized_weights == 86_848 * 4


@pytest.mark.parametrize(
    ("method", "optimizer", "precision", "states", "paged", "temporaries", "gradients"),
    [
        # Full bf16: torch keeps AdamW's two states in the parameters' bf16.
        ("full", "adamw", "bf16", 2 * 2 * 86_848, 0, 0, 2 * 86_848),
        ("full", "adamw-foreach", "bf16", 2 * 2 * 86_848, 0, 2 * 86_848, 2 * 86_848),
        ("full", "adamw", "amp", 2 * 4 * 86_848, 0, 0, 4 * 86_848),
        ("full", "adamw-8bit", "bf16", 2 * 86_848, 0, 0, 2 * 86_848),
        ("full", "paged-adamw-8bit", "bf16", 0, 2 * 86_848, 0, 2 * 86_848),
        ("full", "sgd", "bf16", 0, 0, 0, 2 * 86_848),
        # LoRA: PEFT's adapters are fp32, so are their gradients and states.
        ("lora", "adamw", "bf16", 2 * 4 * 1_792, 0, 0, 4 * 1_792),
        ("lora", "paged-adamw", "bf16", 0, 2 * 4 * 1_792, 0, 4 * 1_792),
    ],
)
def test_gradients_and_optimizer_states(
    tiny, method, optimizer, precision, states, paged, temporaries, gradients
) -> None:
    options = resolve_options(
        tiny,
        method=method,
        r=4 if method == "lora" else None,
        optimizer=optimizer,
        precision=precision,
    )
    trainable = 1_792 if method == "lora" else 86_848
    state = training_state(trainable, options, dtypes(options))
    assert (state.optimizer_states, state.paged_states) == (states, paged)
    assert (state.optimizer_temporaries, state.gradients) == (temporaries, gradients)


def test_block_activations_of_lora_by_hand(tiny) -> None:
    options = resolve_options(tiny, method="lora", r=4, targets="q_proj,v_proj")
    terms = block_terms(tiny, options, dtypes(options))
    assert terms.norm_inputs == 4 * 2 * 64  # two RMSNorm inputs kept in fp32
    assert terms.attention == 2 * (64 + 32 + 32 + 64) + 4 * 4  # q, k, v, out (bf16), lse (fp32)
    assert terms.mlp == 2 * 3 * 128  # gate, up, act(gate)
    assert terms.linear_inputs == 4 * (64 + 64)  # PEFT's fp32 copy of x, once per adapted module
    assert terms.lora_intermediates == 4 * 4 * 2  # A's r-wide fp32 output, per module
    assert terms.norm_outputs == 0
    assert terms.total == 512 + 400 + 768 + 512 + 32
    assert terms.first_block() == terms.total - 4 * 64  # the first input norm needs no gradient


def test_block_activations_of_full_fine_tuning_by_hand(tiny) -> None:
    options = resolve_options(tiny, method="full")
    terms = block_terms(tiny, options, dtypes(options))
    # q/k/v's shared input, gate/up's shared input, down's input; o_proj reads SDPA's output.
    assert terms.linear_inputs == 2 * (64 + 64 + 128)
    assert terms.norm_outputs == 2 * 2 * 64
    assert terms.total == 512 + 400 + 768 + 512 + 256


def test_eager_attention_adds_the_softmax_per_head_and_position(tiny) -> None:
    sdpa = resolve_options(tiny, method="full", seq_len=32)
    eager = resolve_options(tiny, method="full", seq_len=32, attention="eager")
    assert block_terms(tiny, eager, dtypes(eager)).attention == 2 * (64 + 2 * 32) + (4 + 2) * 4 * 32
    assert block_terms(tiny, sdpa, dtypes(sdpa)).attention == 400  # no s x s term
    # and o_proj keeps its own input: eager's output is a transposed copy
    eager_inputs = block_terms(tiny, eager, dtypes(eager)).linear_inputs
    assert eager_inputs == 2 * (64 + 64 + 64 + 128)


def test_step_activations_logits_and_checkpointing(tiny) -> None:
    options = resolve_options(tiny, method="full", seq_len=32, batch_size=2)
    saved = activations(tiny, options, dtypes(options))
    tokens = 64
    assert saved.stored == 2 * 2448 * tokens
    assert saved.head == (4 * 64 + 2 * 2 * 64) * tokens  # final norm fp32, normed, head input
    assert saved.logits == 3 * 4 * 100 * tokens  # the log-softmax backward: 3 fp32 copies
    checkpointed = resolve_options(
        tiny, method="full", seq_len=32, batch_size=2, grad_checkpointing=True
    )
    saved = activations(tiny, checkpointed, dtypes(checkpointed))
    assert saved.stored == 2 * 2 * 64 * tokens  # each layer's bf16 input
    assert saved.recomputed_block == 2448 * tokens


def test_kv_cache_by_hand() -> None:
    # The example: Llama-2-13B, 8 sequences of 1,024 tokens, 2 bytes: about 6.7 GB.
    llama13 = load_model_shape(EXAMPLES / "llama-2-13b")
    assert kv_cache_bytes(llama13, 8, 1024, 2) == 2 * 40 * 40 * 128 * 1024 * 8 * 2 == 6_710_886_400
    # Grouped-query attention: Mistral caches 8 kv heads, a quarter of full attention's 32.
    mistral = load_model_shape(EXAMPLES / "mistral-7b-v0.1")
    assert kv_cache_bytes(mistral, 2, 100, 2) == 2 * 32 * 8 * 128 * 100 * 2 * 2
    full_attention = parse_config(
        {**json_of(EXAMPLES / "mistral-7b-v0.1"), "num_key_value_heads": 32}, Path("c")
    )
    assert kv_cache_bytes(full_attention, 2, 100, 2) == 4 * kv_cache_bytes(mistral, 2, 100, 2)
    # Beyond its 4,096-token window a sliding layer keeps the last 4,095 tokens.
    assert kv_cache_bytes(mistral, 1, 10_000, 2) == 2 * 32 * 8 * 128 * 4095 * 2


def json_of(folder: Path) -> dict[str, object]:
    import json

    return json.loads((folder / "config.json").read_text())


def test_tied_embeddings_are_stored_once() -> None:
    result = plan(EXAMPLES / "llama-3.2-3b", method="full", optimizer="sgd", seq_len=1)
    assert result.components["unquantized_weights"] == round(3_212_749_824 * 2 / 1e9, 4)


def test_full_fine_tuning_peaks_at_the_optimizer_step() -> None:
    # Weights, gradients and two AdamW states in bf16: 8 bytes a parameter, with no activations.
    result = plan(EXAMPLES / "mistral-7b-v0.1", method="full")
    assert result.train_peak_step == "optimizer_step"
    step = result.train_steps["optimizer_step"]
    assert step.terms["activations"] == 0 and step.terms["logits"] == 0
    assert result.lower_bound_gb == round(8 * 7_241_732_096 / 1e9, 4)
    # Summing every term would count activations and all gradients together: never live at once.
    summed = sum(result.components.values())
    assert summed > result.lower_bound_gb


def test_lora_peaks_at_the_loss_backward() -> None:
    result = plan(EXAMPLES / "llama-2-7b", method="lora", seq_len=2048)
    assert result.train_peak_step == "loss_backward"
    assert result.trainable_params == 4_194_304


def test_qlora_export_holds_the_whole_base_at_2_bytes_a_parameter() -> None:
    result = plan(EXAMPLES / "llama-2-13b", method="qlora", export="merge")
    terms = result.phase_terms["export"].terms
    assert terms["base_16bit"] == round(2 * 13_015_864_320 / 1e9, 4)
    assert result.phases["export"] > 2 * 13.0158
    assert result.phases["export"] > result.phases["load"] * 3  # 4-bit base vs 16-bit base
    adapter = plan(EXAMPLES / "llama-2-13b", method="qlora", export="adapter")
    assert adapter.phases["export"] == pytest.approx(
        adapter.phases["load"] - adapter.phase_terms["load"].terms["temporaries"], abs=1e-3
    )


def test_eval_holds_the_weights_and_the_kv_cache() -> None:
    result = plan(EXAMPLES / "llama-2-13b", method="qlora", eval_batch_size=8, eval_tokens=1024)
    terms = result.phase_terms["eval"].terms
    assert terms["kv_cache"] == round(6_710_886_400 / 1e9, 4)
    assert terms["quantized_linears"] == result.phase_terms["load"].terms["quantized_linears"]


def test_13b_qlora_merge_needs_48_gb_and_the_adapter_alone_24() -> None:
    merge = plan(
        EXAMPLES / "llama-2-13b",
        method="qlora",
        export="merge",
        eval_batch_size=8,
        eval_tokens=1024,
    )
    assert merge.recommendation.gpu_gb is not None and merge.recommendation.gpu_gb >= 48
    assert merge.recommendation.phase == "export"
    assert merge.recommendation.advice == (
        "the export phase needs a 48 GB card; export the adapter alone, or merge on the CPU, "
        "to stay on 24 GB"
    )
    adapter = plan(
        EXAMPLES / "llama-2-13b",
        method="qlora",
        export="adapter",
        eval_batch_size=8,
        eval_tokens=1024,
    )
    assert adapter.recommendation.gpu_gb == 24


@pytest.mark.parametrize(
    ("changes", "phase"),
    [
        ({"method": "qlora", "eval_batch_size": 1, "eval_tokens": 256}, "export"),
        ({"method": "qlora", "export": "adapter", "eval_batch_size": 64}, "eval"),
        ({"method": "full"}, "train"),
        ({"method": "lora", "seq_len": 8192, "export": "adapter", "eval_batch_size": 1}, "train"),
    ],
)
def test_the_recommendation_names_the_largest_phase(changes, phase) -> None:
    result = plan(EXAMPLES / "llama-2-7b", **changes)
    largest = max(result.phases, key=lambda name: result.phases[name])
    assert largest == phase == result.recommendation.phase
    assert result.recommendation.advice.startswith(f"the {phase} phase needs")
    fit = result.phase_fit[phase]
    assert fit.gpu_gb == result.recommendation.gpu_gb
    assert all(
        other.gpu_gb is not None and fit.gpu_gb is not None and other.gpu_gb <= fit.gpu_gb
        for other in result.phase_fit.values()
    )


def test_eval_advice_finds_the_batch_that_fits() -> None:
    result = plan(EXAMPLES / "llama-2-13b", method="qlora", export="adapter", eval_batch_size=64)
    advice = result.recommendation.advice
    assert "--eval-batch-size" in advice
    batch = int(advice.split("--eval-batch-size ")[1].split(")")[0])
    smaller = plan(
        EXAMPLES / "llama-2-13b", method="qlora", export="adapter", eval_batch_size=batch
    )
    larger = plan(
        EXAMPLES / "llama-2-13b", method="qlora", export="adapter", eval_batch_size=batch + 1
    )
    stay = int(advice.rsplit("to stay on ", 1)[1].split(" ")[0])
    assert smaller.recommendation.gpu_gb == stay
    assert larger.recommendation.gpu_gb is not None and larger.recommendation.gpu_gb > stay


def test_sharding_divides_the_state_but_not_the_activations() -> None:
    shape = load_model_shape(EXAMPLES / "mistral-7b-v0.1")
    one = compute_bounds(shape, resolve_options(shape, method="full", grad_checkpointing=True))
    two = compute_bounds(
        shape, resolve_options(shape, method="full", grad_checkpointing=True, gpus=2)
    )
    assert two.steps["optimizer_step"].total * 2 == pytest.approx(
        one.steps["optimizer_step"].total, abs=8
    )
    assert (
        two.steps["loss_backward"].terms["activations"]
        == one.steps["loss_backward"].terms["activations"]
    )


def test_a_plan_too_large_for_any_card_counts_the_gpus_sharding_needs() -> None:
    shape = load_model_shape(EXAMPLES / "llama-2-13b")
    result = plan_shape(
        shape, resolve_options(shape, method="full", precision="amp", grad_checkpointing=True)
    )
    chosen = result.recommendation
    assert chosen.gpu_gb is None and chosen.gpus is not None and chosen.gpus > 1
    from dataclasses import replace

    options = resolve_options(shape, method="full", precision="amp", grad_checkpointing=True)
    from evalkit.plan.recommend import needs

    fits = phase_bounds(shape, replace(options, gpus=chosen.gpus))
    short = phase_bounds(shape, replace(options, gpus=chosen.gpus - 1))
    assert all(needs(bound) <= 80e9 for bound in fits.values())
    assert any(needs(bound) > 80e9 for bound in short.values())


def test_the_same_inputs_give_the_same_plan() -> None:
    first = plan(EXAMPLES / "llama-2-7b", method="qlora").model_dump_json()
    assert plan(EXAMPLES / "llama-2-7b", method="qlora").model_dump_json() == first


def test_evalkit_plan_is_the_package_and_the_function() -> None:
    import evalkit
    import evalkit.plan.api  # importing a submodule binds evalkit.plan to the package

    assert evalkit.plan(EXAMPLES / "llama-2-7b").trainable_params == 4_194_304
    assert evalkit.plan.phase_bounds is phase_bounds
