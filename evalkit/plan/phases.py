"""The bound of each phase of a fine-tuning cycle, and of each moment of a training step.

A training step has three moments whose live tensors differ, and the bound
of the step is the largest of them, never their sum (the sum overstates
full fine-tuning, whose gradients and activations are never all live at
once):

- ``loss_backward``: every saved activation is still held and the loss's
  log-softmax backward holds three logits-sized fp32 tensors.
- ``block_backward``: the top block's backward; with gradient checkpointing
  its activations are rebuilt here; the head's gradient exists (full), a
  4-bit weight is dequantized (QLoRA).
- ``optimizer_step``: activations are gone; all gradients, the optimizer
  states and the optimizer's temporaries are live.

Weights and optimizer states (kept from the previous step) are live at all
three. The phases around training: ``load`` the base as held for training,
``eval`` generation with a KV cache, ``export`` a merge into a 16-bit base or
the adapter alone. With ``--gpus N`` every amount that full sharding splits
(FSDP FULL_SHARD, ZeRO-3: weights, gradients, optimizer states) is divided by
N; activations, logits and the KV cache are per GPU.
"""

from __future__ import annotations

from dataclasses import dataclass

from evalkit.plan.activations import FP32, Activations, activations, kv_cache_bytes
from evalkit.plan.config import ModelShape
from evalkit.plan.counts import ParameterCounts, largest_linear, parameter_counts, targeted_linears
from evalkit.plan.options import Options
from evalkit.plan.state import (
    Dtypes,
    TrainingState,
    WeightBytes,
    dtypes,
    trainable_count,
    training_state,
    weight_bytes,
)

TRAIN_STEPS = ("loss_backward", "block_backward", "optimizer_step")
PHASES = ("load", "train", "eval", "export")


@dataclass(frozen=True)
class Moment:
    """The tensors live at one moment, by term, in bytes."""

    terms: dict[str, int]

    @property
    def total(self) -> int:
        """The bound of this moment: the sum of what is live at it."""
        return sum(self.terms.values())


@dataclass(frozen=True)
class Bounds:
    """Every moment of the training step and every phase of the cycle, per GPU."""

    steps: dict[str, Moment]
    peak_step: str
    phases: dict[str, Moment]
    trainable: int
    counts: ParameterCounts
    paged_states: int
    sizes: Dtypes
    activations: Activations


def autocast_copies(shape: ModelShape, options: Options) -> tuple[int, int]:
    """16-bit copies of fp32 linear weights that autocast makes and autograd keeps.

    A linear whose input needs a gradient keeps its weight for dL/dx; under
    autocast that is the 16-bit copy. Returns (kept at the loss, kept while a
    checkpointed block is rebuilt). Quantized linears make no such copy, and
    without checkpointing LoRA's first block keeps none (its inputs need no
    gradient), so it is left out.
    """
    if options.precision != "amp":
        return 0, 0
    head = 2 * shape.vocab_size * shape.hidden_size
    block = (
        0
        if options.method == "qlora"
        else 2 * sum(layer.d_in * layer.d_out for layer in shape.linears)
    )
    if options.grad_checkpointing:
        return head, block
    layers = shape.num_layers - (1 if options.adapter else 0)
    return head + layers * block, 0


def _train_steps(
    shape: ModelShape,
    options: Options,
    weights: WeightBytes,
    state: TrainingState,
    saved: Activations,
    sizes: Dtypes,
) -> dict[str, Moment]:
    shards = options.gpus
    held = {**weights.terms(shards), "optimizer_states": state.optimizer_states // shards}
    copies_at_loss, copies_in_block = (
        amount // shards for amount in autocast_copies(shape, options)
    )
    counts = parameter_counts(shape)
    dequantized = 0
    if options.method == "qlora":
        dequantized = largest_linear(shape) * sizes.dequantized
    head_gradient = 0 if options.adapter else counts.embedding * sizes.trainable // shards
    return {
        "loss_backward": Moment(
            {
                **held,
                "gradients": 0,
                "activations": saved.stored + saved.head,
                "logits": saved.logits,
                "temporaries": copies_at_loss,
            }
        ),
        "block_backward": Moment(
            {
                **held,
                "gradients": head_gradient,
                "activations": saved.stored + saved.recomputed_block,
                "logits": 0,
                "temporaries": copies_at_loss
                + copies_in_block
                + dequantized
                + saved.hidden_gradient,
            }
        ),
        "optimizer_step": Moment(
            {
                **held,
                "gradients": state.gradients // shards,
                "activations": 0,
                "logits": 0,
                "temporaries": state.optimizer_temporaries // shards,
            }
        ),
    }


def _load(shape: ModelShape, options: Options, weights: WeightBytes, sizes: Dtypes) -> Moment:
    temporaries = 0
    if options.method == "qlora":
        # Each linear reaches the GPU at 16 bits before bitsandbytes quantizes it, and
        # k-bit preparation holds a 16-bit tensor beside its new fp32 copy.
        temporaries = 2 * largest_linear(shape)
        if options.kbit_prep:
            temporaries = max(temporaries, 2 * shape.vocab_size * shape.hidden_size)
    return Moment({**weights.terms(options.gpus), "temporaries": temporaries})


def _eval(shape: ModelShape, options: Options, weights: WeightBytes, sizes: Dtypes) -> Moment:
    return Moment(
        {
            **weights.terms(options.gpus),
            "kv_cache": kv_cache_bytes(
                shape, options.eval_batch_size, options.eval_tokens, sizes.activation
            ),
            # generate() keeps the last position's logits per sequence, in fp32.
            "logits": FP32 * shape.vocab_size * options.eval_batch_size,
        }
    )


def _export(
    shape: ModelShape,
    options: Options,
    weights: WeightBytes,
    counts: ParameterCounts,
) -> Moment:
    shards = options.gpus
    if options.export == "merge":
        delta = largest_linear(shape, targeted_linears(shape, options.targets))
        return Moment(
            {
                # The whole base at 16 bits: for QLoRA the dequantized base, 2 bytes/param.
                "base_16bit": 2 * counts.total // shards,
                "trainable_params": weights.trainable_params // shards,
                # merge builds each delta B @ A in the adapter's fp32 before adding it.
                "temporaries": FP32 * delta,
            }
        )
    # Saving the adapter (or, for full fine-tuning, the weights) from the trained model.
    return Moment(weights.terms(shards))


def compute_bounds(shape: ModelShape, options: Options) -> Bounds:
    """The per-GPU bound of every moment of the step and every phase of the cycle."""
    counts = parameter_counts(shape)
    sizes = dtypes(options)
    weights = weight_bytes(shape, options, counts, sizes)
    trainable = trainable_count(shape, options, counts)
    state = training_state(trainable, options, sizes)
    saved = activations(shape, options, sizes)
    steps = _train_steps(shape, options, weights, state, saved, sizes)
    peak = max(TRAIN_STEPS, key=lambda name: (steps[name].total, -TRAIN_STEPS.index(name)))
    return Bounds(
        steps=steps,
        peak_step=peak,
        phases={
            "load": _load(shape, options, weights, sizes),
            "train": steps[peak],
            "eval": _eval(shape, options, weights, sizes),
            "export": _export(shape, options, weights, counts),
        },
        trainable=trainable,
        counts=counts,
        paged_states=state.paged_states // options.gpus,
        sizes=sizes,
        activations=saved,
    )
