"""Reading model configs for the memory plan: families, defaults, and bad configs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalkit.errors import InvalidModelConfig, UnreadableFile
from evalkit.plan.config import load_model_shape, parse_config

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "plan"
FAMILIES = Path(__file__).resolve().parent / "plan_configs"

BASE = {
    "model_type": "llama",
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "vocab_size": 100,
}


def shape_of(**changes: object):
    return parse_config({**BASE, **changes}, Path("config.json"))


def test_a_folder_or_its_config_json_reads_the_same() -> None:
    folder = load_model_shape(EXAMPLES / "llama-2-7b")
    file = load_model_shape(EXAMPLES / "llama-2-7b" / "config.json")
    assert folder == file
    assert folder.path.endswith("config.json")


def test_grouped_query_widths_of_mistral() -> None:
    shape = load_model_shape(EXAMPLES / "mistral-7b-v0.1")
    assert (shape.num_heads, shape.num_kv_heads, shape.head_dim) == (32, 8, 128)
    assert shape.q_dim == 4096 and shape.kv_dim == 1024
    assert shape.linear("k_proj").d_out == 1024 and shape.linear("v_proj").d_out == 1024
    assert shape.linear("q_proj").d_out == 4096 and shape.linear("o_proj").d_in == 4096


def test_head_dim_overrides_hidden_over_heads() -> None:
    # Gemma-7B: 16 heads of 256 = 4096 wide queries on a 3072-wide residual stream.
    shape = load_model_shape(FAMILIES / "gemma-7b.json")
    assert shape.head_dim == 256 and shape.q_dim == 4096 and shape.hidden_size == 3072
    assert (shape.linear("q_proj").d_in, shape.linear("q_proj").d_out) == (3072, 4096)
    assert (shape.linear("o_proj").d_in, shape.linear("o_proj").d_out) == (4096, 3072)


def test_family_defaults_for_tied_embeddings() -> None:
    # Gemma's config class ties by default; Llama-3.2-3B says so; Llama-2 does not.
    assert load_model_shape(FAMILIES / "gemma-7b.json").tied_embeddings
    assert load_model_shape(EXAMPLES / "llama-3.2-3b").tied_embeddings
    assert not load_model_shape(EXAMPLES / "llama-2-7b").tied_embeddings
    assert not shape_of().tied_embeddings  # LlamaConfig's default
    assert shape_of(model_type="mystery").tied_embeddings  # PretrainedConfig's default


def test_phi3_has_fused_linears() -> None:
    shape = load_model_shape(FAMILIES / "phi-3-mini-4k.json")
    assert [layer.name for layer in shape.linears] == [
        "qkv_proj",
        "o_proj",
        "gate_up_proj",
        "down_proj",
    ]
    assert shape.linear("qkv_proj").d_out == 3 * 3072
    assert shape.linear("gate_up_proj").d_out == 2 * 8192


def test_qwen2_biases_and_qwen3_qk_norms() -> None:
    qwen2 = load_model_shape(FAMILIES / "qwen2.5-7b.json")
    assert [layer.bias for layer in qwen2.linears[:4]] == [True, True, True, False]
    assert qwen2.sliding_layers == 0  # use_sliding_window is false
    qwen3 = load_model_shape(FAMILIES / "qwen3-8b.json")
    assert qwen3.qk_norm and not any(layer.bias for layer in qwen3.linears)


def test_sliding_windows_per_family() -> None:
    mistral = load_model_shape(EXAMPLES / "mistral-7b-v0.1")
    assert (mistral.sliding_window, mistral.sliding_layers) == (4096, 32)
    gemma2 = load_model_shape(FAMILIES / "gemma-2-2b.json")
    assert (gemma2.sliding_window, gemma2.sliding_layers, gemma2.norms_per_layer) == (4096, 13, 4)
    gemma3 = load_model_shape(FAMILIES / "gemma-3-1b.json")
    assert gemma3.sliding_layers == 26 - 26 // 6
    explicit = shape_of(sliding_window=8, layer_types=["sliding_attention", "full_attention"])
    assert explicit.sliding_layers == 1


def test_an_unknown_model_type_with_the_standard_keys_is_planned_as_llama() -> None:
    shape = shape_of(model_type="my-own-decoder", num_key_value_heads=2)
    assert not shape.known_family
    assert [layer.name for layer in shape.linears][:3] == ["q_proj", "k_proj", "v_proj"]
    assert shape.kv_dim == 32
    untyped = {k: v for k, v in BASE.items() if k != "model_type"}
    assert parse_config(untyped, Path("c")).model_type == "unknown"


@pytest.mark.parametrize(
    "key", ["hidden_size", "num_hidden_layers", "intermediate_size", "vocab_size"]
)
def test_a_missing_key_is_named(key: str) -> None:
    data = {k: v for k, v in BASE.items() if k != key}
    with pytest.raises(InvalidModelConfig, match=f"missing key '{key}'"):
        parse_config(data, Path("config.json"))


@pytest.mark.parametrize(
    ("changes", "fragment"),
    [
        ({"hidden_size": "4096"}, "'hidden_size' must be a positive integer"),
        ({"num_hidden_layers": 0}, "'num_hidden_layers' must be a positive integer"),
        ({"num_attention_heads": True}, "'num_attention_heads' must be a positive integer"),
        ({"num_key_value_heads": 3}, "not a multiple of num_key_value_heads (3)"),
        ({"hidden_size": 66}, "add the key 'head_dim'"),
        ({"tie_word_embeddings": "yes"}, "'tie_word_embeddings' must be true or false"),
        ({"num_local_experts": 8}, "mixture-of-experts"),
        ({"text_config": {"hidden_size": 8}}, "multimodal config"),
        ({"model_type": 7}, "'model_type' must be a string"),
        ({"sliding_window": -1, "model_type": "mistral"}, "'sliding_window' must be"),
    ],
)
def test_bad_values_are_named(changes: dict[str, object], fragment: str) -> None:
    with pytest.raises(InvalidModelConfig) as caught:
        parse_config({**BASE, **changes}, Path("config.json"))
    assert fragment in caught.value.message
    assert caught.value.message.startswith("config.json: ")


def test_unreadable_configs(tmp_path: Path) -> None:
    with pytest.raises(UnreadableFile, match="no such file"):
        load_model_shape(tmp_path / "absent.json")
    with pytest.raises(UnreadableFile, match=r"no config\.json in this folder"):
        load_model_shape(tmp_path)
    broken = tmp_path / "config.json"
    broken.write_text('{"hidden_size": 4096,\n "vocab_size": }')
    expected = r"config\.json:2: not valid JSON \(Expecting value at column 16"
    with pytest.raises(InvalidModelConfig, match=expected):
        load_model_shape(broken)
    broken.write_text(json.dumps([1, 2]))
    with pytest.raises(InvalidModelConfig, match="expected a JSON object"):
        load_model_shape(broken)
