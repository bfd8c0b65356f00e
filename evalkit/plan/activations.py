"""Activations saved for the backward pass, per token, and the loss's logits.

The per-layer terms follow Korthikanti et al. 2022 ("Reducing Activation
Recomputation in Large Transformer Models", section 4.1), which counts, for
one block, each tensor autograd keeps for the backward. Adapted to the
decoders planned here (docs/plan.md lists each term and why):

- RMSNorm (transformers, torchtune) upcasts its input to fp32 and keeps that
  copy: 4 bytes per element for each norm of the block (and for qwen3's and
  gemma3's per-head q/k norms).
- Attention through SDPA/flash keeps q, k, v and the output (k and v at the
  grouped-query width kv_heads x head_dim) and an fp32 log-sum-exp per head:
  no s x s term. Eager attention adds the fp32 softmax and its 16-bit copy,
  heads x s per token: Korthikanti's 5as^2b term.
- A gated MLP (SwiGLU/GeGLU) keeps the gate and up projections and the
  activation's output: 3 x intermediate per token.
- A linear keeps its input only when its weight needs a gradient: every
  linear in full fine-tuning, only the adapted ones with LoRA (a frozen
  weight's input is not needed: dL/dx = dL/dy W). Linears that read the same
  tensor (q, k, v; gate, up) share it. LoRA keeps A's r-wide output for B.
- Full fine-tuning also keeps each norm's normalised input for the norm
  weight's gradient.

With gradient checkpointing (transformers checkpoints each decoder layer),
each layer keeps only its input, and one layer's activations are rebuilt
during its backward. Without it, LoRA's first layer keeps only the adapter's
inputs and what follows the first adapter: nothing before it needs a gradient.
"""

from __future__ import annotations

from dataclasses import dataclass

from evalkit.plan.config import LinearShape, ModelShape
from evalkit.plan.options import Options
from evalkit.plan.state import Dtypes

FP32 = 4
# The loss at its log-softmax backward holds three fp32 tensors of the logits'
# size: the saved log-softmax, the gradient arriving from the NLL loss and the
# gradient it produces (transformers' causal-LM loss upcasts logits to fp32).
LOSS_LOGIT_COPIES = 3


@dataclass(frozen=True)
class BlockTerms:
    """Bytes per token one decoder block keeps for the backward, by term."""

    norm_inputs: int
    attention: int
    mlp: int
    linear_inputs: int
    norm_outputs: int  # full fine-tuning: for the norm weights' gradients
    lora_intermediates: int

    @property
    def total(self) -> int:
        """The whole block."""
        return (
            self.norm_inputs
            + self.attention
            + self.mlp
            + self.linear_inputs
            + self.norm_outputs
            + self.lora_intermediates
        )

    first_norm: int  # the block's input norm, and qk-norms: nothing before them needs a gradient
    later_norms: int  # the norms after attention
    first_adapted: str | None  # which input the first adapted linear reads, in block order

    def first_block(self) -> int:
        """What LoRA's first block keeps without checkpointing: what follows its first adapter.

        Its input (the embedding output) needs no gradient, so a tensor is kept
        only once an adapter's output has flowed into it: after q/k/v all but
        the input norm, after o_proj the MLP and later norms, after the MLP's
        first linears only the adapters' own inputs.
        """
        adapters = self.linear_inputs + self.lora_intermediates
        if self.first_adapted == "attn_in":
            return self.total - self.first_norm
        if self.first_adapted == "attn_out":
            return adapters + self.later_norms + self.mlp
        return adapters


def _input_width(shape: ModelShape, reads: str) -> int:
    return {
        "attn_in": shape.hidden_size,
        "attn_out": shape.q_dim,
        "mlp_in": shape.hidden_size,
        "mlp_mid": shape.intermediate_size,
    }[reads]


def _trained_linears(shape: ModelShape, options: Options) -> list[LinearShape]:
    if not options.adapter:
        return list(shape.linears)
    return [layer for layer in shape.linears if layer.name in options.targets]


def linear_input_bytes(shape: ModelShape, options: Options, sizes: Dtypes) -> int:
    """Per token: the inputs the trained linears keep for their weights' gradients.

    Which copies exist depends on who casts. With SDPA the output projection
    reads the attention output itself (already counted with attention) unless
    a cast makes a copy. Under autocast (amp) every linear casts its own input,
    so nothing is shared. PEFT casts an adapter's input to the adapter's fp32
    once per adapted module, unless the input is fp32 already.
    """
    trained = _trained_linears(shape, options)
    act = sizes.activation
    shared_attention_output = options.attention == "sdpa"
    if options.precision == "amp":
        return act * sum(
            _input_width(shape, layer.reads)
            for layer in trained
            if options.adapter or not (shared_attention_output and layer.reads == "attn_out")
        )
    if options.adapter and sizes.activation < FP32:
        return FP32 * sum(_input_width(shape, layer.reads) for layer in trained)
    groups = {layer.reads for layer in trained}
    if shared_attention_output:
        groups.discard("attn_out")
    return act * sum(_input_width(shape, reads) for reads in groups)


def block_terms(shape: ModelShape, options: Options, sizes: Dtypes) -> BlockTerms:
    """What one block keeps per token (of a sequence of ``--seq-len`` tokens)."""
    act = sizes.activation
    norm_width = shape.norms_per_layer * shape.hidden_size
    if shape.qk_norm:
        norm_width += shape.q_dim + shape.kv_dim
    if options.attention == "sdpa":
        # q, k, v, the output, and the fp32 log-sum-exp per head.
        attention = act * (2 * shape.q_dim + 2 * shape.kv_dim) + FP32 * shape.num_heads
    else:
        # q, k, v, and the fp32 softmax with (in 16-bit training) its cast for P @ V.
        softmax_bytes = FP32 + (act if act < FP32 else 0)
        attention = act * (shape.q_dim + 2 * shape.kv_dim)
        attention += softmax_bytes * shape.num_heads * options.seq_len
    trained = _trained_linears(shape, options)
    # PEFT keeps adapters in fp32: A's output is fp32 unless autocast recasts it.
    mid_bytes = act if options.precision == "amp" else FP32
    qk_width = shape.q_dim + shape.kv_dim if shape.qk_norm else 0
    return BlockTerms(
        norm_inputs=FP32 * norm_width,
        attention=attention,
        mlp=3 * act * shape.intermediate_size,
        linear_inputs=linear_input_bytes(shape, options, sizes),
        norm_outputs=0 if options.adapter else act * norm_width,
        lora_intermediates=mid_bytes * options.r * len(trained) if options.adapter else 0,
        first_norm=FP32 * (shape.hidden_size + qk_width),
        later_norms=FP32 * (shape.norms_per_layer - 1) * shape.hidden_size,
        first_adapted=trained[0].reads if trained else None,
    )


@dataclass(frozen=True)
class Activations:
    """Activation memory of one training step, in bytes."""

    stored: int  # kept by every layer at the end of the forward pass
    head: int  # the final norm's input, and (full) the head's input
    recomputed_block: int  # gradient checkpointing: one layer rebuilt in its backward
    logits: int  # the loss at its log-softmax backward
    hidden_gradient: int  # the gradient of the hidden state flowing back
    per_token_block: int  # one block per token, for the docs and tests


def activations(shape: ModelShape, options: Options, sizes: Dtypes) -> Activations:
    """Saved activations and logits of one step of ``--batch-size`` x ``--seq-len`` tokens."""
    tokens = options.seq_len * options.batch_size
    block = block_terms(shape, options, sizes)
    layers = shape.num_layers
    if options.grad_checkpointing:
        stored = layers * sizes.residual * shape.hidden_size * tokens
        recomputed = block.total * tokens
    else:
        first = block.first_block() if options.adapter else block.total
        stored = (first + (layers - 1) * block.total) * tokens
        recomputed = 0
    head = FP32 * shape.hidden_size
    if not options.adapter:
        head += 2 * sizes.activation * shape.hidden_size  # normalised input, head input
    return Activations(
        stored=stored,
        head=head * tokens,
        recomputed_block=recomputed,
        logits=LOSS_LOGIT_COPIES * FP32 * shape.vocab_size * tokens,
        hidden_gradient=sizes.activation * shape.hidden_size * tokens,
        per_token_block=block.total,
    )


def kv_cache_bytes(shape: ModelShape, sequences: int, tokens: int, element_bytes: int) -> int:
    """Keys and values of ``sequences`` x ``tokens``: 2 x layers x kv_heads x head_dim per token.

    Layers with a sliding window keep the last window - 1 tokens at most
    (transformers' sliding cache layers), so they stop growing there.
    """
    full_layers = shape.num_layers - shape.sliding_layers
    window = max(shape.sliding_window - 1, 1) if shape.sliding_window else tokens
    per_layer_token = 2 * shape.kv_dim * element_bytes * sequences
    return per_layer_token * (full_layers * tokens + shape.sliding_layers * min(tokens, window))
