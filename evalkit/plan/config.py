"""Read a model's ``config.json`` into the shapes the memory plan needs.

The plan is arithmetic on the architecture, so this reads the keys the way
transformers names them (``LlamaConfig``, ``MistralConfig``, ``Qwen2Config``,
``Qwen3Config``, ``GemmaConfig``/``Gemma2Config``/``Gemma3TextConfig``,
``Phi3Config``) without importing transformers: a config of 1 KB should not
cost a 2-second import. A key a family leaves out takes the default its
transformers config class gives it; an unknown ``model_type`` with the
standard keys is planned as a Llama-style decoder (separate q/k/v/o and a
gated MLP), the layout nearly every open decoder shares.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalkit.errors import InvalidModelConfig, UnreadableFile

REQUIRED_KEYS = (
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "intermediate_size",
    "vocab_size",
)

# Keys whose presence means a mixture of experts: its expert MLPs are not the
# one dense MLP per layer this plan counts.
_EXPERT_KEYS = ("num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts")


@dataclass(frozen=True)
class Family:
    """What a model family's transformers config and modeling code imply."""

    fused: bool = False  # phi3: one qkv_proj and one gate_up_proj
    tie_default: bool = True  # PretrainedConfig's default, unless the family sets its own
    qkv_bias_default: bool = False  # qwen2 always has biases on q, k and v
    norms_per_layer: int = 2  # gemma2/gemma3 add pre- and post-feedforward norms
    qk_norm: bool = False  # qwen3/gemma3 normalise q and k per head
    sliding_default: int | None = None  # mistral's config class defaults to a 4096 window
    sliding_pattern: int | None = None  # gemma2: every 2nd layer is full; gemma3: every 6th
    needs_use_sliding_window: bool = False  # qwen2/qwen3 ignore the window unless enabled


FAMILIES: dict[str, Family] = {
    "llama": Family(tie_default=False),
    "mistral": Family(tie_default=False, sliding_default=4096),
    "qwen2": Family(tie_default=False, qkv_bias_default=True, needs_use_sliding_window=True),
    "qwen3": Family(tie_default=False, qk_norm=True, needs_use_sliding_window=True),
    "gemma": Family(tie_default=True),
    "gemma2": Family(tie_default=True, norms_per_layer=4, sliding_pattern=2),
    "gemma3_text": Family(tie_default=True, norms_per_layer=4, qk_norm=True, sliding_pattern=6),
    "phi3": Family(fused=True, tie_default=False),
}
UNKNOWN_FAMILY = Family()


@dataclass(frozen=True)
class LinearShape:
    """One linear layer of a decoder block, and which activation it reads."""

    name: str
    d_in: int
    d_out: int
    bias: bool
    reads: str  # "attn_in" | "attn_out" | "mlp_in" | "mlp_mid": the saved input it shares

    @property
    def params(self) -> int:
        """Weights plus bias."""
        return self.d_in * self.d_out + (self.d_out if self.bias else 0)


@dataclass(frozen=True)
class ModelShape:
    """The architecture of a decoder-only model, as the memory plan needs it."""

    path: str
    model_type: str
    known_family: bool
    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    tied_embeddings: bool
    norms_per_layer: int
    qk_norm: bool
    sliding_window: int | None
    sliding_layers: int
    linears: tuple[LinearShape, ...]
    stored_quant: str | None = None
    """How ``quantization_config`` says the linears are stored: ``nf4``, ``nf4-dq``,
    ``fp4``, ``fp4-dq``, ``int8`` (bitsandbytes), another ``quant_method``, or None."""
    stored_dtype: str | None = None
    """The dtype the checkpoint's tensors are saved in (``torch_dtype``, or ``dtype`` as
    transformers 5 writes it), when the config names one: the disk's base."""

    @property
    def q_dim(self) -> int:
        """Width of the queries (and of the attention output): heads x head_dim."""
        return self.num_heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        """Width of the keys and of the values: kv_heads x head_dim (grouped-query attention)."""
        return self.num_kv_heads * self.head_dim

    def linear(self, name: str) -> LinearShape:
        """The block's linear called ``name`` (a KeyError if it has none)."""
        for layer in self.linears:
            if layer.name == name:
                return layer
        raise KeyError(name)


def config_file(path: Path) -> Path:
    """The ``config.json`` that ``path`` names: the file itself or the one in a folder."""
    if path.is_dir():
        candidate = path / "config.json"
        if not candidate.is_file():
            raise UnreadableFile(f"{path}: no config.json in this folder; pass a model's folder")
        return candidate
    if not path.exists():
        raise UnreadableFile(f"{path}: no such file or folder")
    return path


def read_config(path: Path) -> tuple[Path, dict[str, Any]]:
    """Read and parse a config.json; every failure names the file."""
    source = config_file(path)
    try:
        text = source.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise UnreadableFile(f"{source}: cannot read it ({error})") from None
    from evalkit.io import DocumentError, parse_json

    try:
        data = parse_json(text, str(source))
    except DocumentError as error:
        raise InvalidModelConfig(error.message) from None
    if not isinstance(data, dict):
        raise InvalidModelConfig(f"{source}: expected a JSON object of config keys")
    return source, data


def _positive_int(data: dict[str, Any], key: str, source: Path) -> int:
    value = data[key]
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidModelConfig(f"{source}: key {key!r} must be a positive integer, got {value!r}")
    return value


def _flag(data: dict[str, Any], key: str, default: bool, source: Path) -> bool:
    value = data.get(key)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise InvalidModelConfig(f"{source}: key {key!r} must be true or false, got {value!r}")
    return value


def _check_supported(data: dict[str, Any], source: Path) -> None:
    if isinstance(data.get("text_config"), dict):
        raise InvalidModelConfig(
            f"{source}: a multimodal config (it has 'text_config'); plan the language model "
            "with a config.json holding the text model's keys"
        )
    for key in _EXPERT_KEYS:
        value = data.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 1:
            raise InvalidModelConfig(
                f"{source}: key {key!r} = {value}: mixture-of-experts models are not planned "
                "(their expert MLPs are not one dense MLP per layer)"
            )
    missing = [key for key in REQUIRED_KEYS if data.get(key) is None]
    if missing:
        raise InvalidModelConfig(
            f"{source}: missing key {missing[0]!r} (a decoder config needs "
            f"{', '.join(REQUIRED_KEYS)}; num_key_value_heads and head_dim are optional)"
        )


def _sliding(
    data: dict[str, Any], family: Family, num_layers: int, source: Path
) -> tuple[int | None, int]:
    """The sliding window and how many layers use it (their KV cache stops growing there)."""
    window = data.get("sliding_window", family.sliding_default)
    if family.needs_use_sliding_window and not data.get("use_sliding_window", False):
        window = None
    if window is None:
        return None, 0
    if isinstance(window, bool) or not isinstance(window, int) or window < 1:
        raise InvalidModelConfig(
            f"{source}: key 'sliding_window' must be a positive integer or null, got {window!r}"
        )
    layer_types = data.get("layer_types")
    if isinstance(layer_types, list) and len(layer_types) == num_layers:
        return window, sum(1 for kind in layer_types if kind == "sliding_attention")
    if family.sliding_pattern is not None:
        pattern = data.get("sliding_window_pattern", family.sliding_pattern)
        if isinstance(pattern, int) and not isinstance(pattern, bool) and pattern >= 1:
            return window, sum(1 for index in range(num_layers) if (index + 1) % pattern)
    return window, num_layers


def _linears(
    data: dict[str, Any], family: Family, hidden: int, q_dim: int, kv_dim: int, inter: int
) -> tuple[LinearShape, ...]:
    qkv_bias = bool(data.get("attention_bias", family.qkv_bias_default))
    # Llama's attention_bias also puts a bias on o_proj; Qwen2's biases are on q, k, v only.
    o_bias = bool(data.get("attention_bias", False))
    mlp_bias = bool(data.get("mlp_bias", False))
    if family.fused:
        return (
            LinearShape("qkv_proj", hidden, q_dim + 2 * kv_dim, qkv_bias, "attn_in"),
            LinearShape("o_proj", q_dim, hidden, o_bias, "attn_out"),
            LinearShape("gate_up_proj", hidden, 2 * inter, mlp_bias, "mlp_in"),
            LinearShape("down_proj", inter, hidden, mlp_bias, "mlp_mid"),
        )
    return (
        LinearShape("q_proj", hidden, q_dim, qkv_bias, "attn_in"),
        LinearShape("k_proj", hidden, kv_dim, qkv_bias, "attn_in"),
        LinearShape("v_proj", hidden, kv_dim, qkv_bias, "attn_in"),
        LinearShape("o_proj", q_dim, hidden, o_bias, "attn_out"),
        LinearShape("gate_proj", hidden, inter, mlp_bias, "mlp_in"),
        LinearShape("up_proj", hidden, inter, mlp_bias, "mlp_in"),
        LinearShape("down_proj", inter, hidden, mlp_bias, "mlp_mid"),
    )


def _stored_quant(data: dict[str, Any], source: Path) -> str | None:
    """The storage ``quantization_config`` describes (a pre-quantized checkpoint)."""
    quantization = data.get("quantization_config")
    if quantization is None:
        return None
    if not isinstance(quantization, dict):
        raise InvalidModelConfig(f"{source}: key 'quantization_config' must be an object")
    method = quantization.get("quant_method")
    if method != "bitsandbytes":
        return str(method or "unknown")
    if quantization.get("load_in_8bit"):
        return "int8"
    kind = quantization.get("bnb_4bit_quant_type") or "fp4"
    if kind not in ("nf4", "fp4"):
        raise InvalidModelConfig(
            f"{source}: key 'quantization_config.bnb_4bit_quant_type' is {kind!r}, not nf4 or fp4"
        )
    return f"{kind}-dq" if quantization.get("bnb_4bit_use_double_quant") else str(kind)


def _stored_dtype(data: dict[str, Any], source: Path) -> str | None:
    """``dtype`` (transformers >= 4.56) or ``torch_dtype``: what the weights were saved in."""
    value = data.get("dtype", data.get("torch_dtype"))
    if value is None or value == "auto":
        return None
    if not isinstance(value, str):
        raise InvalidModelConfig(f"{source}: key 'torch_dtype' must be a dtype name, got {value!r}")
    return value.removeprefix("torch.")


def parse_config(data: dict[str, Any], source: Path) -> ModelShape:
    """Validate a parsed config and derive the shapes (the error names the key at fault)."""
    _check_supported(data, source)
    hidden, layers, heads, inter, vocab = (
        _positive_int(data, key, source) for key in REQUIRED_KEYS
    )
    kv_heads = heads
    if data.get("num_key_value_heads") is not None:
        kv_heads = _positive_int(data, "num_key_value_heads", source)
    if heads % kv_heads:
        raise InvalidModelConfig(
            f"{source}: num_attention_heads ({heads}) is not a multiple of "
            f"num_key_value_heads ({kv_heads})"
        )
    if data.get("head_dim") is not None:
        head_dim = _positive_int(data, "head_dim", source)
    elif hidden % heads:
        raise InvalidModelConfig(
            f"{source}: hidden_size ({hidden}) is not a multiple of num_attention_heads "
            f"({heads}); add the key 'head_dim'"
        )
    else:
        head_dim = hidden // heads
    model_type = data.get("model_type")
    if model_type is not None and not isinstance(model_type, str):
        raise InvalidModelConfig(f"{source}: key 'model_type' must be a string, got {model_type!r}")
    model_type = model_type or "unknown"
    family = FAMILIES.get(model_type, UNKNOWN_FAMILY)
    window, sliding_layers = _sliding(data, family, layers, source)
    return ModelShape(
        path=str(source),
        model_type=model_type,
        known_family=model_type in FAMILIES,
        hidden_size=hidden,
        num_layers=layers,
        num_heads=heads,
        num_kv_heads=kv_heads,
        head_dim=head_dim,
        intermediate_size=inter,
        vocab_size=vocab,
        tied_embeddings=_flag(data, "tie_word_embeddings", family.tie_default, source),
        norms_per_layer=family.norms_per_layer,
        qk_norm=family.qk_norm,
        sliding_window=window,
        sliding_layers=sliding_layers,
        linears=_linears(data, family, hidden, heads * head_dim, kv_heads * head_dim, inter),
        stored_quant=_stored_quant(data, source),
        stored_dtype=_stored_dtype(data, source),
    )


def load_model_shape(path: Path) -> ModelShape:
    """Read ``path`` (a config.json or a model folder) into a :class:`ModelShape`."""
    source, data = read_config(path)
    return parse_config(data, source)
