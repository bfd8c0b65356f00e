"""Bytes of what lives for the whole run: weights, adapter, gradients, optimizer states.

All amounts are exact integers of bytes, so the same inputs give the same
plan to the byte. The storage rules (sources in docs/plan.md):

- quantized linears (bitsandbytes): NF4 packs two weights per byte; its
  constants are one fp32 absmax per block of 64 weights (0.5 bits/param),
  or, with double quantization, one 8-bit absmax per 64 weights plus one
  fp32 scale per 256 of those (8/64 + 32/(64*256) = 0.127 bits/param,
  Dettmers et al. 2023). LLM.int8 keeps one byte per weight and one fp32
  scale per output row. The output head and every non-linear weight stay
  unquantized, as transformers' bitsandbytes integration leaves them.
- PEFT's ``prepare_model_for_kbit_training`` upcasts every 16-bit parameter
  that is not quantized to fp32; PEFT keeps LoRA weights in fp32
  (``autocast_adapter_dtype=True``).
- ``torch.optim.AdamW`` keeps two states in each parameter's own dtype;
  bitsandbytes' 8-bit AdamW one byte each; paged optimizers keep theirs in
  CUDA unified memory, which the allocator does not count and the driver
  pages out to the CPU under pressure (listed apart); SGD without momentum
  none. AdamW's foreach implementation (torch's default outside the HF
  Trainer) builds sqrt(v) for every parameter at once: one temporary of the
  parameters' size in the optimizer step; the fused kernel does not.
"""

from __future__ import annotations

from dataclasses import dataclass

from evalkit.plan.config import ModelShape
from evalkit.plan.counts import ParameterCounts, lora_parameters
from evalkit.plan.options import Options

NF4_BLOCK = 64
DOUBLE_QUANT_BLOCK = 256


@dataclass(frozen=True)
class Dtypes:
    """Bytes per element of each kind of tensor under the chosen precision."""

    activation: int  # saved activations, the KV cache (16-bit compute, or fp32)
    storage: int  # unquantized weights as held during training
    residual: int  # the residual stream: fp32 when the embedding is stored in fp32
    trainable: int  # a trainable parameter, and its gradient
    dequantized: int  # a 4/8-bit weight dequantized for a matmul


def dtypes(options: Options) -> Dtypes:
    """Element sizes implied by ``--precision``, the method and k-bit preparation."""
    activation = 4 if options.precision == "fp32" else 2
    storage = 4 if options.precision in ("fp32", "amp") else 2
    if options.method == "qlora" and options.kbit_prep:
        storage = 4
    return Dtypes(
        activation=activation,
        storage=storage,
        # An fp32 embedding output plus 16-bit block outputs promotes to fp32.
        residual=4 if storage == 4 else activation,
        trainable=4 if options.adapter else storage,
        dequantized=4 if options.precision == "fp32" else 2,
    )


def _ceil_div(numerator: int, denominator: int) -> int:
    return -(-numerator // denominator)


@dataclass(frozen=True)
class WeightBytes:
    """The model's weights as held on the GPU, split the way quantization treats them."""

    quantized_linears: int
    quantization_constants: int
    unquantized_weights: int
    trainable_params: int  # the LoRA adapter (0 for full: the weights themselves are trained)

    @property
    def total(self) -> int:
        """All of it."""
        return (
            self.quantized_linears
            + self.quantization_constants
            + self.unquantized_weights
            + self.trainable_params
        )

    def terms(self, shards: int = 1) -> dict[str, int]:
        """The four amounts by name, each split over ``shards`` GPUs."""
        return {
            "quantized_linears": self.quantized_linears // shards,
            "quantization_constants": self.quantization_constants // shards,
            "unquantized_weights": self.unquantized_weights // shards,
            "trainable_params": self.trainable_params // shards,
        }


def quantized_bytes(shape: ModelShape, quant: str) -> tuple[int, int]:
    """(packed weights, quantization constants) of every block linear, per tensor."""
    packed = constants = 0
    for layer in shape.linears:
        weights = layer.d_in * layer.d_out
        if quant == "int8":
            packed += weights
            constants += 4 * layer.d_out  # one fp32 scale per output row (SCB)
            continue
        packed += _ceil_div(weights, 2)
        blocks = _ceil_div(weights, NF4_BLOCK)
        if quant == "nf4-dq":
            constants += blocks + 4 * _ceil_div(blocks, DOUBLE_QUANT_BLOCK)
        else:
            constants += 4 * blocks
    return shape.num_layers * packed, shape.num_layers * constants


def trainable_count(shape: ModelShape, options: Options, counts: ParameterCounts) -> int:
    """Parameters the optimizer updates: the adapter's, or all of them."""
    if options.adapter:
        return lora_parameters(shape, options.targets, options.r)
    return counts.total


def weight_bytes(
    shape: ModelShape, options: Options, counts: ParameterCounts, sizes: Dtypes
) -> WeightBytes:
    """The weights of the model being trained (and the adapter), as held on the GPU."""
    adapter = trainable_count(shape, options, counts) * sizes.trainable if options.adapter else 0
    if options.method != "qlora" or options.quant is None:
        return WeightBytes(0, 0, counts.total * sizes.storage, adapter)
    packed, constants = quantized_bytes(shape, options.quant)
    return WeightBytes(packed, constants, counts.unquantized * sizes.storage, adapter)


@dataclass(frozen=True)
class TrainingState:
    """Gradients and optimizer memory of the trainable parameters."""

    gradients: int
    optimizer_states: int  # on the GPU, counted by the allocator
    paged_states: int  # in unified memory (paged optimizers): outside the bound
    optimizer_temporaries: int  # live during the optimizer step only


def training_state(trainable: int, options: Options, sizes: Dtypes) -> TrainingState:
    """What the optimizer keeps and allocates for ``trainable`` parameters."""
    two_states = 2 * trainable * sizes.trainable
    states = paged = temporaries = 0
    if options.optimizer in ("adamw", "adamw-foreach"):
        states = two_states
    if options.optimizer == "adamw-foreach":
        temporaries = trainable * sizes.trainable
    if options.optimizer == "adamw-8bit":
        states = 2 * trainable
    if options.optimizer == "paged-adamw":
        paged = two_states
    if options.optimizer == "paged-adamw-8bit":
        paged = 2 * trainable
    return TrainingState(
        gradients=trainable * sizes.trainable,
        optimizer_states=states,
        paged_states=paged,
        optimizer_temporaries=temporaries,
    )
