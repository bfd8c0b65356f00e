"""Exact parameter counts: the whole model, its linears, and a LoRA adapter.

These are counts, not estimates: the tests compare them with the parameters
transformers builds from the same config (on the meta device) and with what
PEFT marks trainable.
"""

from __future__ import annotations

from dataclasses import dataclass

from evalkit.plan.config import LinearShape, ModelShape


@dataclass(frozen=True)
class ParameterCounts:
    """The parameters of a model, grouped the way quantization treats them."""

    linear_weights: int  # the weight matrices of every block's linears (what 4/8-bit quantizes)
    linear_biases: int  # their biases (kept at 16 bits by bitsandbytes)
    embedding: int  # the input embedding
    head: int  # the output head; 0 when tied to the embedding (stored once)
    norms: int  # every RMSNorm weight: per block, q/k norms, the final norm
    total: int

    @property
    def unquantized(self) -> int:
        """Everything a 4/8-bit load keeps at its storage precision."""
        return self.total - self.linear_weights


def layer_norm_params(shape: ModelShape) -> int:
    """RMSNorm weights of one block (qk-norms act per head, so they are head_dim wide)."""
    return shape.norms_per_layer * shape.hidden_size + (2 * shape.head_dim if shape.qk_norm else 0)


def parameter_counts(shape: ModelShape) -> ParameterCounts:
    """Count every parameter of the model described by ``shape``."""
    weights = shape.num_layers * sum(layer.d_in * layer.d_out for layer in shape.linears)
    biases = shape.num_layers * sum(layer.d_out for layer in shape.linears if layer.bias)
    embedding = shape.vocab_size * shape.hidden_size
    head = 0 if shape.tied_embeddings else embedding
    norms = shape.num_layers * layer_norm_params(shape) + shape.hidden_size
    return ParameterCounts(
        linear_weights=weights,
        linear_biases=biases,
        embedding=embedding,
        head=head,
        norms=norms,
        total=weights + biases + embedding + head + norms,
    )


def targeted_linears(shape: ModelShape, targets: tuple[str, ...]) -> tuple[LinearShape, ...]:
    """The block linears an adapter wraps, in the block's order."""
    return tuple(layer for layer in shape.linears if layer.name in targets)


def lora_parameters(shape: ModelShape, targets: tuple[str, ...], rank: int) -> int:
    """Trainable LoRA parameters: r x (d_in + d_out) for A and B of each targeted linear, per layer.

    The output head is never among the targets (``all-linear`` leaves it out,
    as PEFT does), so the head's d_out = vocab size never enters.
    """
    per_layer = sum(rank * (layer.d_in + layer.d_out) for layer in targeted_linears(shape, targets))
    return shape.num_layers * per_layer


def largest_linear(shape: ModelShape, layers: tuple[LinearShape, ...] | None = None) -> int:
    """Weights of the largest block linear (of ``layers``, or of the whole block)."""
    chosen = shape.linears if layers is None else layers
    return max((layer.d_in * layer.d_out for layer in chosen), default=0)
