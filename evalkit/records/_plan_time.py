"""The ``time`` block of ``evalkit plan --json``: bounds per GPU class, and the campaign.

Every figure is in the JSON with what it was computed from, as the memory
table is: the FLOPs terms with their formulas and inputs, each GPU's figures
with their source, the measured rates with the smoke report they came from.
Hours are floats; a ``*_lower_bound`` can be beaten by no run on that card.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from evalkit.records._base import Persisted
from evalkit.records._plan_sheet import Cadence


class _Model(Persisted):
    """The models of this file, on the one persisted base."""


class FlopTerm(_Model):
    """One term of the FLOPs of a training token."""

    name: str = Field(description="forward_linears, forward_attention, backward_…, recomputation.")
    flops_per_token: float = Field(description="FLOPs of this term per training token.")
    formula: str = Field(description="How it is counted.")
    inputs: dict[str, int | float | str] = Field(description="The formula's inputs.")


class TokensInput(_Model):
    """The tokens of one epoch and where they came from."""

    tokens: int = Field(description="Tokens processed per epoch (a lower bound unless exact).")
    supervised_tokens: int | None = Field(description="Tokens the loss is on, when known.")
    exact: bool = Field(description="False when derived: then the least the source allows.")
    source: str = Field(description="--train-tokens, or the tokens report and split.")
    how: str = Field(description="How the figure was read or derived.")


class EvalInput(_Model):
    """The evaluation's generation."""

    examples: int = Field(description="--eval-examples: sequences generated per pass.")
    prompt_tokens: int = Field(description="--eval-tokens minus --eval-new-tokens.")
    new_tokens: int = Field(description="--eval-new-tokens: generated per sequence.")
    batch: int = Field(description="--eval-batch-size: sequences generated at once.")
    prefill_flops_per_sequence: int = Field(
        description="2·p·L·Σ d_in·d_out + attention over the prompt + the head at one position."
    )
    step_flops: int = Field(description="Per new token: 2 · (L · Σ d_in·d_out + V · h).")
    attention_flops_per_key: int = Field(description="Per new token and key: 4 · n_h · d.")
    weight_bytes_per_step: int = Field(
        description="Weights a decoding step reads: as held, the input embedding excepted."
    )
    kv_bytes_per_cached_token: int = Field(
        description="Keys and values of one cached token in one layer: 2 · kv_heads · d · bytes."
    )


class GpuTime(_Model):
    """One GPU class: its figures, and the least time the work can take on it."""

    memory_gb: float = Field(description="Memory of one card (GB).")
    peak_tflops: float = Field(description="Peak dense bf16 tensor TFLOP/s.")
    bandwidth_gbps: float | None = Field(description="Peak memory bandwidth, GB/s (null: unknown).")
    source: str = Field(description="Where the three figures come from.")
    holds_plan: bool = Field(description="Whether every phase's needs fit one card's memory.")
    train_hours_lower_bound: float = Field(description="Hours of all epochs at the peak.")
    eval_hours_lower_bound: float | None = Field(
        description="Hours of one evaluation pass (null without --eval-examples)."
    )
    decode_steps: int | None = Field(description="Decoding steps of the pass (all batches).")
    decode_steps_bandwidth_bound: int | None = Field(
        description="Of those, the steps whose bytes bound them more than their FLOPs "
        "(null without a bandwidth: then FLOPs alone bound decoding)."
    )
    campaign_hours_lower_bound: float | None = Field(
        description="--runs runs + the baseline's evaluation, at the least (null without --runs)."
    )
    ruled_out: bool | None = Field(
        description="True when even the lower bound overruns the window less the recovery."
    )


class CampaignInputs(_Model):
    """The campaign asked about."""

    runs: int = Field(description="--runs: trained variants, each trained and evaluated.")
    window_hours: float = Field(description="--window in hours.")
    recovery: float = Field(description="--recovery: share of the window kept for reruns.")
    price_per_hour: float | None = Field(description="--price-per-hour (null: not given).")


class MeasuredRates(_Model):
    """What ``evalkit smoke`` measured, read from its report."""

    path: str = Field(description="The smoke report.")
    sha256: str = Field(description="sha256 of its bytes.")
    device: str = Field(description="The device it ran on, as torch names it.")
    device_type: Literal["cpu", "cuda"] = Field(description="cpu or cuda.")
    gpu_class: str | None = Field(description="The GPU class of the table it is, if any.")
    train_tokens_per_second: float = Field(description="Training, after the warm-up step.")
    eval_tokens_per_second: float = Field(description="New tokens of the greedy pass per second.")
    save_seconds: float = Field(description="Saving the adapter (or model).")
    reload_seconds: float | None = Field(description="The fresh-process reload check.")
    settings_differ: list[str] = Field(
        description="Settings the smoke ran with that differ from the plan's."
    )
    saved_bytes: int | None = Field(
        default=None, description="Bytes of the adapter (or model) saved in save_seconds."
    )
    checkpoint_bytes: int | None = Field(
        default=None, description="resume.checkpoint.bytes: a Trainer checkpoint smoke wrote."
    )
    checkpoint_save_seconds: float | None = Field(
        default=None, description="resume.checkpoint.save_seconds: the time it took."
    )


class Campaign(_Model):
    """The campaign at the measured rates: hours, the margin in the window, the cost."""

    runs: int
    train_hours_per_run: float = Field(description="Epochs × tokens / measured train tokens/s.")
    eval_hours_per_run: float = Field(description="Examples × new tokens / measured eval rate.")
    baseline_eval_hours: float = Field(description="The prompt-only baseline's evaluation.")
    export_hours: float = Field(description="Saving the chosen adapter (smoke's save time).")
    reload_check_hours: float = Field(description="The fresh-process reload (smoke's).")
    total_hours: float = Field(description="runs × (train + eval) + baseline + export + reload.")
    window_hours: float
    recovery: float
    recovery_hours: float = Field(description="window × recovery, kept for reruns.")
    margin_hours: float = Field(description="window − recovery − total (negative: it overruns).")
    fits: bool
    price_per_hour: float | None
    cost: float | None = Field(description="price × total hours (null without a price).")
    window_cost: float | None = Field(description="price × the whole window rented.")


class TimePlan(_Model):
    """Hours: bounds per GPU class from FLOPs and bytes; the campaign from measured rates."""

    train_tokens: int = Field(description="Tokens of one epoch (see tokens).")
    epochs: float
    flops_per_train_token: float = Field(description="The sum of flop_terms.")
    tokens: TokensInput
    flop_terms: list[FlopTerm]
    eval: EvalInput | None
    gpus: dict[str, GpuTime]
    campaign_inputs: CampaignInputs | None
    measured: MeasuredRates | None
    campaign: Campaign | None = Field(description="Only with --measured.")
    notes: list[str] = Field(description="What the terminal says about the figures.")
    cadence: Cadence | None = Field(
        default=None, description="Preemptible mode (--preemptible, with --measured)."
    )
