"""Floating-point operations of training and of generation, counted from a model's shape.

Only matrix products are counted (2 FLOPs per multiply-add), and only those
the method cannot avoid, so that time at a card's peak is a lower bound:

- Every block linear and the output head, forward: ``2 · d_in · d_out`` a token
  (the embedding is a lookup, not a product).
- Attention, forward: ``Q·Kᵀ`` and ``P·V``, ``2 · n_h · d`` each per (query, key)
  pair; causal, so query ``j`` of a sequence meets ``j`` keys (``min(j, w)`` in
  a sliding-window layer).
- Backward: a linear whose **weight** is trained costs ``2 · d_in · d_out`` for
  that gradient; one whose **input** needs a gradient another ``2 · d_in · d_out``
  (dL/dx = dL/dy · W). Full fine-tuning needs both for every linear; LoRA and
  QLoRA none of the first for the base (its weights are frozen) and the second
  only where something below needs a gradient — in the first block nothing
  does until the first adapter (the embedding is frozen). Attention's backward
  is one product per operand that needs a gradient: dV, dP (for dQ and dK), dQ
  and dK, each the size of a forward product.
- The adapter's own: ``A`` (r × d_in) and ``B`` (d_out × r) forward, both weight
  gradients, B's input gradient always (A's weight needs it), A's input gradient
  where the layer's input needs one.
- Gradient checkpointing recomputes each block's forward during the backward,
  up to the last tensor the backward needs: torch's non-reentrant checkpoint
  stops there, before the down projection (whose output nothing saves).

Softmax, norms, activations and the loss are left out (a few FLOPs a token
against millions), as are a stack's extra products (flash attention's
backward recomputes ``Q·Kᵀ``): leaving work out keeps the bound a bound. The
tests compare these counts with ``torch.utils.flop_counter.FlopCounterMode``
on tiny models of each kind (full, LoRA, checkpointing), with non-causal
attention there because eager attention multiplies the whole square.
"""

from __future__ import annotations

from dataclasses import dataclass

from evalkit.plan.config import LinearShape, ModelShape
from evalkit.plan.options import Options

# The linears read these inputs, in the block's order (see config.LinearShape.reads).
READ_ORDER = ("attn_in", "attn_out", "mlp_in", "mlp_mid")


def context_sum(length: int, window: int | None, causal: bool = True) -> int:
    """Σ over the queries of a sequence of ``length`` of the keys each one meets.

    Causal: query j (1-based) meets j keys, or min(j, window) in a sliding
    window layer; non-causal: every key (what eager attention multiplies,
    masking afterwards, whatever the window).
    """
    if not causal:
        return length * length
    if window is None or window >= length:
        return length * (length + 1) // 2
    return window * (window + 1) // 2 + (length - window) * window


def attention_context(shape: ModelShape, length: int, causal: bool = True) -> int:
    """Σ over layers of :func:`context_sum`: full layers and sliding-window layers."""
    full_layers = shape.num_layers - shape.sliding_layers
    total = full_layers * context_sum(length, None, causal)
    if shape.sliding_layers:
        total += shape.sliding_layers * context_sum(length, shape.sliding_window, causal)
    return total


def _weights(layers: tuple[LinearShape, ...] | list[LinearShape]) -> int:
    return sum(layer.d_in * layer.d_out for layer in layers)


@dataclass(frozen=True)
class FirstBlock:
    """Which inputs and attention operands of the first block need a gradient (LoRA).

    Nothing below the first adapter needs one: the embedding is frozen. Each
    flag says whether the tensor at that point of the block does.
    """

    inputs: dict[str, bool]  # by read point: does a linear's input need a gradient?
    q: bool
    k: bool
    v: bool

    @property
    def attention_operands(self) -> int:
        """Backward products of attention: dV if v, dP if q or k, dQ if q, dK if k."""
        return int(self.v) + int(self.q or self.k) + int(self.q) + int(self.k)


def first_block(shape: ModelShape, targets: tuple[str, ...]) -> FirstBlock:
    """Trace where a gradient is first needed through the first block."""
    adapted = set(targets)
    names = {layer.name for layer in shape.linears}
    if "qkv_proj" in names:  # fused: q, k and v come out of one product
        q = k = v = "qkv_proj" in adapted
    else:
        q, k, v = ("q_proj" in adapted, "k_proj" in adapted, "v_proj" in adapted)
    attn_out = q or k or v
    o_out = attn_out or "o_proj" in adapted
    mlp_mid = o_out or bool(adapted & {"gate_proj", "up_proj", "gate_up_proj"})
    return FirstBlock(
        inputs={"attn_in": False, "attn_out": attn_out, "mlp_in": o_out, "mlp_mid": mlp_mid},
        q=q,
        k=k,
        v=v,
    )


@dataclass(frozen=True)
class Term:
    """One term of the count: FLOPs per sequence, how, and from what."""

    name: str
    flops: int  # per sequence of ``length`` tokens
    formula: str
    inputs: dict[str, int | float | str]


@dataclass(frozen=True)
class TrainFlops:
    """The FLOPs of training on one sequence of ``length`` tokens, term by term."""

    length: int
    terms: tuple[Term, ...]

    @property
    def per_sequence(self) -> int:
        """All terms."""
        return sum(term.flops for term in self.terms)

    @property
    def per_token(self) -> float:
        """All terms over the sequence's tokens."""
        return self.per_sequence / self.length


def _adapter_weights(layers: tuple[LinearShape, ...], rank: int) -> int:
    return sum(rank * (layer.d_in + layer.d_out) for layer in layers)


def _last_linear(shape: ModelShape) -> LinearShape:
    return shape.linears[-1]


def train_flops(
    shape: ModelShape,
    options: Options,
    *,
    length: int | None = None,
    causal: bool = True,
    input_grads: bool = False,
) -> TrainFlops:
    """Count one training step's FLOPs on one sequence (forward, backward, recomputation).

    ``length`` defaults to ``--seq-len``. ``input_grads`` makes the embedding's
    output need a gradient (what transformers' ``enable_input_require_grads``
    does for PEFT under checkpointing): the first block then costs what the
    others do. The bound leaves it off: a stack without it does less. Terms
    are exact integers per sequence; their formulas are written per token.
    """
    s = options.seq_len if length is None else length
    layers = shape.num_layers
    block = _weights(shape.linears)
    head = shape.vocab_size * shape.hidden_size
    context = attention_context(shape, s, causal)
    attention = 4 * shape.q_dim * context  # Q·Kᵀ and P·V, all layers
    keys = "s" if not causal else "(s+1)/2"
    linear_inputs: dict[str, int | float | str] = {
        "L": layers,
        "Σ d_in·d_out a block": block,
        "V · h": head,
    }
    terms = [
        Term(
            "forward_linears",
            2 * s * (layers * block + head),
            "2 · (L · Σ d_in·d_out + V · h)",
            dict(linear_inputs),
        ),
        Term(
            "forward_attention",
            attention,
            f"4 · n_h · d · keys a query meets, summed over layers ({keys} in a full causal "
            "layer of s tokens, at most the window in a sliding one)",
            {
                "n_h · d": shape.q_dim,
                "s": s,
                "keys summed over layers (mean a query)": round(context / s, 3),
                "sliding layers": shape.sliding_layers,
            },
        ),
    ]
    if not options.adapter:
        everything = 2 * s * (layers * block + head)
        formula = "2 · (L · Σ d_in·d_out + V · h)"
        terms += [
            Term("backward_weight_gradients", everything, formula, dict(linear_inputs)),
            Term("backward_input_gradients", everything, formula, dict(linear_inputs)),
            Term(
                "backward_attention",
                2 * attention,
                "2 × forward attention (dV, dP, dQ, dK)",
                {"forward attention": round(attention / s, 3)},
            ),
        ]
    else:
        terms += _adapter_terms(shape, options, s, attention, input_grads, block, head)
    if options.grad_checkpointing:
        terms.append(_recomputation(shape, options, s, attention, block))
    return TrainFlops(s, tuple(terms))


def _recomputation(shape: ModelShape, options: Options, s: int, attention: int, block: int) -> Term:
    last = _last_linear(shape)
    adapted = options.adapter and last.name in options.targets
    adapters = _adapter_weights(
        tuple(layer for layer in shape.linears if layer.name in options.targets), options.r
    )
    # The block's last product, whose output nothing saves: the down projection,
    # or, when it carries an adapter, that adapter's B.
    skipped = options.r * last.d_out if adapted else last.d_in * last.d_out
    return Term(
        "recomputation",
        2 * s * shape.num_layers * (block + adapters - skipped) + attention,
        "each block's forward again, up to the last tensor the backward saves: "
        "2 · L · (Σ d_in·d_out + Σ r·(d_in+d_out) − its last product) + forward attention",
        {
            "L": shape.num_layers,
            "Σ d_in·d_out a block": block,
            "Σ r·(d_in+d_out) a block": adapters,
            f"last product ({last.name}{' B' if adapted else ''})": skipped,
            "forward attention": round(attention / s, 3),
        },
    )


def _adapter_terms(
    shape: ModelShape,
    options: Options,
    s: int,
    attention: int,
    input_grads: bool,
    block: int,
    head: int,
) -> list[Term]:
    layers = shape.num_layers
    rank = options.r
    per_layer_attention = attention // layers
    wrapped = tuple(layer for layer in shape.linears if layer.name in options.targets)
    adapter = _adapter_weights(wrapped, rank)
    first = first_block(shape, options.targets)
    if input_grads:
        first = FirstBlock(dict.fromkeys(READ_ORDER, True), True, True, True)
    first_inputs = _weights([layer for layer in shape.linears if first.inputs[layer.reads]])
    first_attention = per_layer_attention * first.attention_operands // 2
    first_adapter_inputs = sum(rank * layer.d_in for layer in wrapped if first.inputs[layer.reads])
    outputs = sum(rank * layer.d_out for layer in wrapped)
    inputs_all = sum(rank * layer.d_in for layer in wrapped)
    return [
        Term(
            "adapter_forward",
            2 * s * layers * adapter,
            "2 · L · Σ_targets r · (d_in + d_out)",
            {"L": layers, "r": rank, "Σ r·(d_in+d_out) a block": adapter},
        ),
        Term(
            "backward_input_gradients",
            2 * s * ((layers - 1) * block + first_inputs + head),
            "2 · ((L − 1) · Σ d_in·d_out + the first block's linears whose input needs one "
            "+ V · h); the base is frozen: no weight gradients",
            {
                "L": layers,
                "Σ d_in·d_out a block": block,
                "first block": first_inputs,
                "V · h": head,
            },
        ),
        Term(
            "backward_attention",
            (layers - 1) * 2 * per_layer_attention + first_attention,
            "2 × forward attention in blocks 2..L; in the first, one forward-sized product per "
            "operand that needs a gradient",
            {
                "forward attention a block": round(per_layer_attention / s, 3),
                "first block's operands of dV, dP, dQ, dK": first.attention_operands,
            },
        ),
        Term(
            "adapter_backward",
            2 * s * (layers * (adapter + outputs) + (layers - 1) * inputs_all)
            + 2 * s * first_adapter_inputs,
            "2 · (L · Σ r·(d_in+d_out) [A's, B's weights] + L · Σ r·d_out [B's input] "
            "+ Σ r·d_in where the input needs a gradient [A's input])",
            {
                "L": layers,
                "Σ r·(d_in+d_out)": adapter,
                "Σ r·d_out": outputs,
                "Σ r·d_in": inputs_all,
                "first block's Σ r·d_in": first_adapter_inputs,
            },
        ),
    ]
