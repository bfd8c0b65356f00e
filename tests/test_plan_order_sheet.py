"""``evalkit plan``'s order sheet: host RAM, disk and stack worked by hand, the one GPU registry
that the memory recommendation, the hours and the stack all read, and the CLI's sheet."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalkit.plan import TimeRequest, plan
from evalkit.plan import gpus as gpu_table
from evalkit.plan.config import parse_config
from evalkit.plan.counts import parameter_counts
from evalkit.plan.gpus import GpuSpec
from evalkit.plan.state import quantized_bytes
from evalkit.plan.storage import base_bytes

ROOT = Path(__file__).resolve().parents[1]
LLAMA31_8B = ROOT / "examples" / "plan" / "llama-3.1-8b"
LLAMA13 = ROOT / "examples" / "plan" / "llama-2-13b"
SCHEMA = ROOT / "docs" / "schemas" / "plan-result.schema.json"
GB = 1e9


def _gb(amount: int) -> float:
    """The order sheet's GB: six significant figures."""
    return float(f"{amount / GB:.6g}")


# Llama-3.1-8B's published config: L 32, h 4096, 32 heads (8 kv) of 128, i 14336, V 128256.
PARAMS_8B = (
    32 * (4096 * 4096 * 2 + 4096 * 1024 * 2 + 3 * 4096 * 14336 + 2 * 4096)  # blocks
    + 2 * 128256 * 4096  # embedding and head, untied
    + 4096  # final norm
)
# PEFT's default r 8 on q_proj (4096 -> 4096) and v_proj (4096 -> 1024), 32 layers.
TRAINABLE_8B = 32 * 8 * ((4096 + 4096) + (4096 + 1024))


def test_llama31_8b_disk_by_hand() -> None:
    """The base as stored (bfloat16): 8,030,261,248 x 2 = 16.06 GB; a LoRA checkpoint: the fp32
    adapter and two fp32 AdamW moments, 12 bytes a trainable parameter."""
    assert PARAMS_8B == 8_030_261_248 and TRAINABLE_8B == 3_407_872
    result = plan(LLAMA31_8B)
    disk = result.disk
    assert disk is not None and result.trainable_params == TRAINABLE_8B
    assert disk.base_gb == pytest.approx(16.06, rel=0.02)
    assert disk.base_gb == _gb(PARAMS_8B * 2)
    assert disk.checkpoint_gb * GB >= TRAINABLE_8B * 10
    assert disk.checkpoint_gb == _gb(TRAINABLE_8B * 12)
    assert disk.adapter_gb == _gb(TRAINABLE_8B * 4)
    assert disk.export_gb == _gb(PARAMS_8B * 2)  # merged at 16 bits
    assert disk.checkpoints == 1
    expected = PARAMS_8B * 2 + TRAINABLE_8B * 12 + PARAMS_8B * 2 + TRAINABLE_8B * 4
    assert disk.total_gb == _gb(expected)


def test_checkpoints_kept_multiply_and_the_adapter_export_writes_no_model() -> None:
    three = plan(LLAMA31_8B, save_total_limit=3, export="adapter").disk
    assert three is not None and three.checkpoints == 3 and three.export_gb == 0
    expected = PARAMS_8B * 2 + 3 * TRAINABLE_8B * 12 + TRAINABLE_8B * 4
    assert three.total_gb == _gb(expected)


@pytest.mark.parametrize(
    ("precision", "optimizer", "bytes_each"),
    [
        ("bf16", "adamw", 2 + 2 * 2),  # 16-bit weights, torch AdamW's moments in their dtype
        ("amp", "adamw", 4 + 2 * 4),  # fp32 master weights and moments
        ("bf16", "adamw-8bit", 2 + 2),  # one byte a state
        ("bf16", "sgd", 2),
    ],
)
def test_a_full_fine_tuning_checkpoint(precision: str, optimizer: str, bytes_each: int) -> None:
    disk = plan(LLAMA31_8B, method="full", precision=precision, optimizer=optimizer).disk
    assert disk is not None and disk.adapter_gb == 0
    assert disk.checkpoint_gb == _gb(PARAMS_8B * bytes_each)
    storage = 4 if precision == "amp" else 2
    assert disk.export_gb == _gb(PARAMS_8B * storage)


def test_llama31_8b_host_by_hand() -> None:
    """Merging on the CPU holds the 16-bit model and the fp32 adapter (>= 16 GB); loading
    from mapped safetensors holds at least the largest tensor, the 128256 x 4096 embedding."""
    host = plan(LLAMA31_8B).host
    assert host is not None
    assert host.export_gb >= 16
    assert host.export_gb == _gb(PARAMS_8B * 2 + TRAINABLE_8B * 4)
    assert host.load_gb == _gb(128256 * 4096 * 2)
    assert host.peak_gb == host.export_gb
    adapter_only = plan(LLAMA31_8B, export="adapter").host
    assert adapter_only is not None and adapter_only.export_gb == _gb(TRAINABLE_8B * 4)


def test_a_base_saved_quantized_is_stored_as_its_4_bits() -> None:
    """NF4 with double quantization: packed linears + constants + the rest at the dtype."""
    data = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
            "num_attention_heads": 4, "vocab_size": 100, "model_type": "llama",
            "tie_word_embeddings": False, "torch_dtype": "float16",
            "quantization_config": {"quant_method": "bitsandbytes", "load_in_4bit": True,
                                    "bnb_4bit_quant_type": "nf4",
                                    "bnb_4bit_use_double_quant": True}}  # fmt: skip
    shape = parse_config(data, Path("q.json"))
    linears = 2 * (4 * 64 * 64 + 3 * 64 * 128)
    packed, constants = quantized_bytes(shape, "nf4-dq")
    assert packed == linears // 2
    blocks = linears // 64  # every linear here is a whole number of 64-weight blocks
    assert constants == blocks + 4 * 2 * sum(-(-d // 256) for d in (64 * 64 // 64,) * 4
                                             + (64 * 128 // 64,) * 3)  # fmt: skip
    rest = 2 * 100 * 64 + 2 * 2 * 64 + 64  # embedding, head, 2 norms a layer, the final norm
    assert base_bytes(shape, parameter_counts(shape)) == packed + constants + 2 * rest


def _stack(result, name: str):
    assert result.stack is not None
    return result.stack[name]


def test_qlora_on_mi300x_needs_bitsandbytes_0_49_2_with_its_reason_and_source() -> None:
    stack = _stack(plan(LLAMA31_8B, method="qlora"), "MI300X")
    assert stack.vendor == "amd" and stack.memory_gb == 192 and stack.holds_plan
    versions = {(item.package, item.min_version): item for item in stack.requires}
    cdna = versions[("bitsandbytes", "0.49.2")]
    assert "block" in cdna.why and "CDNA" in cdna.why
    assert "bitsandbytes/pull/1873" in cdna.source and "bitsandbytes/pull/1856" in cdna.source
    assert ("bitsandbytes", "0.50.0") in versions  # official ROCm wheels, the GEMV fix
    assert versions[("torch", None)].why.startswith("a ROCm build")
    notes = " ".join(caveat.note for caveat in stack.caveats)
    assert "Composable Kernel" in notes and "Triton" in notes and "vLLM" in notes
    assert all(caveat.source for caveat in stack.caveats)


def test_h100_lists_the_cuda_stack_and_lora_needs_no_bitsandbytes() -> None:
    qlora = _stack(plan(LLAMA31_8B, method="qlora"), "H100 SXM 80GB")
    assert qlora.vendor == "nvidia"
    assert [(item.package, item.min_version) for item in qlora.requires] == [
        ("torch", None), ("bitsandbytes", "0.43.2")]  # fmt: skip
    assert qlora.requires[0].why.startswith("a CUDA build")
    assert "CUDA 12.0" in qlora.caveats[0].note
    lora = plan(LLAMA31_8B)
    assert [item.package for item in _stack(lora, "H100 SXM 80GB").requires] == ["torch"]
    assert [item.package for item in _stack(lora, "MI300X").requires] == ["torch"]
    # int8 is not the 4-bit block size: only the wheels' requirement applies on ROCm.
    int8 = _stack(plan(LLAMA31_8B, method="qlora", quant="int8"), "MI300X")
    assert ("bitsandbytes", "0.49.2") not in {(i.package, i.min_version) for i in int8.requires}


def test_every_requirement_and_caveat_of_the_table_names_a_source() -> None:
    from evalkit.plan import stacks

    facts = [value for value in vars(stacks).values()
             if type(value).__name__ in ("Requirement", "Caveat")]  # fmt: skip
    assert len(facts) >= 10
    for fact in facts:
        if fact is stacks.UNKNOWN_VENDOR:
            continue
        assert fact.source and ("http" in fact.source or "README" in fact.source)


def test_a_sliding_window_model_on_rocm_warns_about_the_triton_backend() -> None:
    mistral = ROOT / "examples" / "plan" / "mistral-7b-v0.1"
    notes = [caveat.note for caveat in _stack(plan(mistral), "MI300X").caveats]
    assert any("sliding-window" in note for note in notes)
    assert not any("sliding-window" in n.note for n in _stack(plan(LLAMA31_8B), "MI300X").caveats)


def test_a_row_added_to_the_registry_is_in_memory_time_and_stack_alike(monkeypatch) -> None:
    """Llama-2-13B QLoRA merging needs 29.28 GB: 48 GB from the shipped classes, the new 32 GB
    row once it is in the registry; its hours and its stack appear beside the others."""
    before = plan(LLAMA13, method="qlora", time=TimeRequest(train_tokens=10**6))
    assert before.recommendation.gpu_gb == 48 and "Card32" not in (before.stack or {})
    card = GpuSpec("Card32", 32, 100.0, 500.0, "a test row", vendor="amd")
    monkeypatch.setattr(gpu_table, "SHIPPED", (*gpu_table.SHIPPED, card))
    after = plan(LLAMA13, method="qlora", time=TimeRequest(train_tokens=10**6))
    assert after.recommendation.gpu_gb == 32  # memory
    assert after.phase_fit["export"].gpu_gb == 32
    assert after.time is not None
    hours = after.time.gpus["Card32"].train_hours_lower_bound  # time
    expected = 10**6 * after.time.flops_per_train_token / 100e12 / 3600
    assert hours == pytest.approx(expected, rel=1e-5)
    stack = _stack(after, "Card32")  # stack
    assert stack.vendor == "amd" and stack.memory_gb == 32 and stack.holds_plan


def test_a_row_given_with_gpu_joins_all_three_without_hours() -> None:
    """--gpu NAME:GB:TFLOPS[:GBPS][:VENDOR] adds the same row: without the tokens, it still
    changes the recommendation and has its stack."""
    result = plan(LLAMA13, method="qlora", time=TimeRequest(gpu=("Card32:32:100:500:nvidia",)))
    assert result.time is None
    assert result.recommendation.gpu_gb == 32
    assert _stack(result, "Card32").vendor == "nvidia"
    timed = plan(LLAMA13, method="qlora",
                 time=TimeRequest(train_tokens=10**6, gpu=("Card32:32:100",)))  # fmt: skip
    assert timed.time is not None and timed.time.gpus["Card32"].bandwidth_gbps is None
    assert _stack(timed, "Card32").vendor is None  # no vendor said: no stack claimed
    assert timed.recommendation.gpu_gb == 32


def test_a_shipped_row_kept_for_measurements_is_not_a_memory_class() -> None:
    assert 40 not in gpu_table.memory_classes() and 256 not in gpu_table.memory_classes()
    assert gpu_table.memory_classes() == (24, 48, 80, 141, 192)


def test_the_order_sheet_on_the_command_line(run_cli, tmp_path: Path) -> None:
    import jsonschema

    target = tmp_path / "plan.json"
    result = run_cli("plan", "--config", LLAMA31_8B, "--method", "qlora", "--save-total-limit",
                     "2", "--gpu", "RTX 4090", "--gpu", "H100 SXM 80GB", "--gpu", "MI300X",
                     "--json", target)  # fmt: skip
    assert result.exit_code == 0, result.stderr
    text = result.stdout
    assert "order sheet" in text and "host RAM  at least 16.07 GB" in text
    assert "2 checkpoints x 0.04" in text
    for line in ("RTX 4090", "H100 SXM 80GB", "MI300X"):
        assert any(row.strip().startswith(line) for row in text.splitlines())
    assert "ROCm: torch, bitsandbytes>=0.50.0" in text
    assert "CUDA: torch, bitsandbytes>=0.43.2" in text
    document = json.loads(target.read_text())
    jsonschema.validate(document, json.loads(SCHEMA.read_text()))
    assert set(document["host"]) == {"load_gb", "export_gb", "peak_gb"}
    assert set(document["disk"]) == {"base_gb", "checkpoint_gb", "checkpoints", "export_gb",
                                     "adapter_gb", "total_gb"}  # fmt: skip
    assert list(document["stack"]) == ["RTX 4090", "H100 SXM 80GB", "MI300X"]
    for stack in document["stack"].values():
        assert {"vendor", "requires", "caveats"} <= set(stack)
        for item in stack["requires"]:
            assert set(item) == {"package", "min_version", "why", "source"}
    for key in ("inputs", "components", "lower_bound_gb", "phases", "trainable_params",
                "recommendation"):  # fmt: skip
        assert key in document  # the keys the plan had stay


def test_a_new_gpu_on_the_command_line_is_a_memory_class(run_cli, tmp_path: Path) -> None:
    target = tmp_path / "plan.json"
    result = run_cli("plan", "--config", LLAMA13, "--method", "qlora",
                     "--gpu", "Card32:32:100:500:amd", "--json", target)  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert "recommendation: 32 GB" in result.stdout
    document = json.loads(target.read_text())
    assert document["recommendation"]["gpu_gb"] == 32
    assert document["stack"]["Card32"]["vendor"] == "amd"
