"""Lower bounds of hours: training at a card's peak rate, generation at its peak rate and bandwidth.

Training: ``tokens × epochs × FLOPs per token / peak``, the peak being the dense
bf16 rate of every GPU the state is sharded over. Generation, per batch of
``B`` sequences: the prefill of ``B`` prompts, then one step per new token
after the first (the prefill's logits give the first). A step cannot be
faster than its FLOPs at the peak nor than reading, at the card's bandwidth,
every weight it multiplies by (the weights as held, the input embedding
excepted: a step reads one row of it) and each sequence's KV cache so far.
Each step's bound is the larger of the two, and the pass's bound their sum.
Work is split evenly over ``--gpus`` (no card waits for another: a bound).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evalkit.plan.config import ModelShape
from evalkit.plan.counts import parameter_counts
from evalkit.plan.flops import attention_context
from evalkit.plan.gpus import GpuSpec
from evalkit.plan.options import Options
from evalkit.plan.state import dtypes, weight_bytes
from evalkit.plan.work import EvalWork

SECONDS_PER_HOUR = 3600
TERA = 1e12
GIGA = 1e9


@dataclass(frozen=True)
class GenerationCosts:
    """What one sequence's generation multiplies and reads, the inputs of the eval bound."""

    prefill_flops: int  # per prompt: its blocks, its attention, the head at the last position
    step_flops: int  # per new token before attention: every block linear and the head
    attention_per_key: int  # per new token, per key it attends to (summed over layers)
    weight_bytes: int  # read once per step, whatever the batch
    kv_bytes_per_token: int  # cache read per cached token of one sequence (all layers)


def _keys(shape: ModelShape, contexts: Any) -> Any:
    """Keys a query at each position of ``contexts`` meets, summed over layers (windows kept)."""
    import numpy as np

    full = (shape.num_layers - shape.sliding_layers) * contexts
    if not shape.sliding_layers or shape.sliding_window is None:
        return full
    return full + shape.sliding_layers * np.minimum(contexts, shape.sliding_window)


def generation_costs(shape: ModelShape, options: Options, prompt_tokens: int) -> GenerationCosts:
    """The FLOPs and bytes of generating after a prompt of ``prompt_tokens`` tokens."""
    block = sum(layer.d_in * layer.d_out for layer in shape.linears)
    head = shape.vocab_size * shape.hidden_size
    counts = parameter_counts(shape)
    sizes = dtypes(options)
    held = weight_bytes(shape, options, counts, sizes)
    embedding = 0 if shape.tied_embeddings else counts.embedding * sizes.storage
    prefill = (
        2 * prompt_tokens * shape.num_layers * block
        + 4 * shape.q_dim * attention_context(shape, prompt_tokens)
        + 2 * head
    )
    return GenerationCosts(
        prefill_flops=prefill,
        step_flops=2 * (shape.num_layers * block + head),
        attention_per_key=4 * shape.q_dim,
        weight_bytes=held.total - held.trainable_params - embedding,
        kv_bytes_per_token=2 * shape.kv_dim * sizes.activation,
    )


def _batch_seconds(
    shape: ModelShape, costs: GenerationCosts, work: EvalWork, size: int, gpu: GpuSpec
) -> tuple[float, int]:
    """Seconds for one batch of ``size`` sequences, and how many steps bandwidth bounded."""
    import numpy as np

    peak = gpu.peak_tflops * TERA
    bandwidth = gpu.bandwidth_gbps * GIGA if gpu.bandwidth_gbps else None
    prefill = size * costs.prefill_flops / peak
    if bandwidth:
        prefill = max(prefill, costs.weight_bytes / bandwidth)
    # Steps 1 .. new_tokens - 1: the token at position prompt + step attends to that many keys.
    contexts = work.prompt_tokens + np.arange(1, work.new_tokens, dtype=np.float64)
    flops = size * (costs.step_flops + costs.attention_per_key * _keys(shape, contexts)) / peak
    if bandwidth is None:
        return prefill + float(flops.sum()), 0
    # Each layer's own new key and value are just computed: the cache holds the rest.
    cached = _keys(shape, contexts) - shape.num_layers
    reading = (costs.weight_bytes + size * costs.kv_bytes_per_token * cached) / bandwidth
    return prefill + float(np.maximum(flops, reading).sum()), int((reading >= flops).sum())


@dataclass(frozen=True)
class EvalBound:
    """The lower bound of one evaluation pass on one GPU class."""

    hours: float
    decode_steps: int
    steps_bound_by_bandwidth: int  # of decode_steps; 0 when no bandwidth is known


def eval_bound(shape: ModelShape, options: Options, work: EvalWork, gpu: GpuSpec) -> EvalBound:
    """Hours of generating ``work`` on ``gpu`` (× ``--gpus``), at the least."""
    costs = generation_costs(shape, options, work.prompt_tokens)
    full, rest = divmod(work.examples, work.batch)
    seconds, by_bytes, steps = 0.0, 0, 0
    for size, count in ((work.batch, full), (rest, 1 if rest else 0)):
        if not count:
            continue
        batch_seconds, batch_by_bytes = _batch_seconds(shape, costs, work, size, gpu)
        seconds += count * batch_seconds
        by_bytes += count * batch_by_bytes
        steps += count * (work.new_tokens - 1)
    return EvalBound(seconds / options.gpus / SECONDS_PER_HOUR, steps, by_bytes)


def train_hours(tokens: float, flops_per_token: float, gpu: GpuSpec, gpus: int) -> float:
    """Hours of ``tokens`` training tokens at the peak of ``gpus`` cards of ``gpu``."""
    return tokens * flops_per_token / (gpu.peak_tflops * TERA * gpus) / SECONDS_PER_HOUR
