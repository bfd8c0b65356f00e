"""The memory plan as a typed result: the exact shape of ``evalkit plan --json``.

The JSON is an interface (``evalkit smoke`` prints its measured peaks beside
these bounds; CI steps read ``recommendation``): fields are added, never
renamed or removed without bumping ``format_version``. Every amount is in
GB = 10^9 bytes, per GPU.
"""

from __future__ import annotations

from pydantic import Field

from evalkit.records._base import Persisted
from evalkit.records._plan_sheet import DiskPlan, HostPlan, StackPlan
from evalkit.records._plan_time import TimePlan

PLAN_FORMAT_VERSION = 1


class _Model(Persisted):
    """The models of this file, on the one persisted base."""


class ModelSummary(_Model):
    """The model config the plan was made from."""

    path: str = Field(description="The config.json read.")
    sha256: str = Field(description="sha256 of that file's bytes.")
    model_type: str = Field(description="Its model_type ('unknown' when absent).")
    known_family: bool = Field(
        description="Whether model_type is a planned family; otherwise planned as Llama-style."
    )
    hidden_size: int = Field(description="Width of the residual stream.")
    num_layers: int = Field(description="Decoder blocks.")
    num_heads: int = Field(description="Query heads.")
    num_kv_heads: int = Field(description="Key/value heads (grouped-query attention).")
    head_dim: int = Field(description="Width of one head.")
    intermediate_size: int = Field(description="Width of the gated MLP.")
    vocab_size: int = Field(description="Rows of the embedding and of the output head.")
    tied_embeddings: bool = Field(description="Whether the head shares the embedding (once).")
    total_params: int = Field(description="Every parameter of the base model.")


class PlanOptions(_Model):
    """Every option of the plan, with the defaults that applied."""

    method: str = Field(description="full, lora or qlora.")
    r: int = Field(description="LoRA rank (0 for full fine-tuning).")
    targets: list[str] = Field(description="The block linears the adapter wraps.")
    targets_spec: str = Field(description="--targets as given: all-linear or the names.")
    quant: str | None = Field(description="nf4, nf4-dq or int8 (qlora only).")
    kbit_prep: bool = Field(
        description="PEFT's prepare_model_for_kbit_training: unquantized weights upcast to fp32."
    )
    seq_len: int = Field(description="Tokens per training sequence.")
    batch: int = Field(description="Sequences per training step, per GPU.")
    grad_checkpointing: bool = Field(description="Whether each decoder layer is checkpointed.")
    optimizer: str = Field(description="adamw, adamw-foreach, adamw-8bit, paged-…, sgd.")
    precision: str = Field(description="bf16, fp16 (16-bit throughout), fp32, amp (fp32 weights).")
    attention: str = Field(description="sdpa (no s x s term) or eager.")
    gpus: int = Field(description="GPUs the state is fully sharded over; amounts are per GPU.")
    eval_batch: int = Field(description="Sequences generated at once in the eval phase.")
    eval_tokens: int = Field(description="Prompt + new tokens per generated sequence.")
    export: str | None = Field(description="merge or adapter; null for full fine-tuning.")
    save_total_limit: int = Field(
        default=1, description="Checkpoints kept at once (--save-total-limit): the disk's."
    )


class PlanInputs(_Model):
    """What the plan was computed from."""

    config: ModelSummary
    options: PlanOptions


class Step(_Model):
    """One moment of the training step (or one phase): the tensors live at it."""

    gb: float = Field(description="Bound of this moment: the sum of its terms.")
    terms: dict[str, float] = Field(description="GB of each kind of tensor live at it.")


class ApartFromBound(_Model):
    """Memory outside the bound, listed so a reader can add it."""

    cuda_context: float = Field(description="Driver, cuBLAS and kernels: outside the allocator.")
    allocator_slack: float = Field(
        description="Reserved but unallocated memory of the caching allocator (10% of train)."
    )
    paged_optimizer_states: float = Field(
        description="States of a paged optimizer, in unified memory the driver can page out."
    )


class PhaseFit(_Model):
    """What one phase needs with headroom, and the smallest card that has it."""

    needs_gb: float = Field(description="Bound plus CUDA context and 10% allocator slack.")
    gpu_gb: int | float | None = Field(
        description="Smallest class of the GPU registry holding it; null if none."
    )


class PlanRecommendation(_Model):
    """The GPU to rent for the whole cycle."""

    gpu_gb: int | float | None = Field(
        description="Smallest class of the GPU registry (24, 48, 80, 141, 192 GB, and each "
        "--gpu added) holding every phase with headroom; null when no single listed GPU does."
    )
    gpus: int | None = Field(
        description="GPUs needed (the --gpus asked, or the 80 GB GPUs sharding needs); null "
        "when sharding cannot make it fit."
    )
    phase: str = Field(description="The phase that decides it: the largest.")
    needs_gb: float = Field(description="That phase's bound plus CUDA context and slack.")
    advice: str = Field(description="The sentence the terminal prints.")


class PlanResult(_Model):
    """A lower bound of the peak GPU memory of each phase of a fine-tuning cycle."""

    format_version: int = Field(default=PLAN_FORMAT_VERSION, description="Version of this format.")
    evalkit_version: str = Field(description="evalkit that made the plan.")
    inputs: PlanInputs
    components: dict[str, float] = Field(
        description="GB of each term at its largest over the training step's moments."
    )
    apart: ApartFromBound
    lower_bound_gb: float = Field(description="The train phase: the largest moment of a step.")
    train_steps: dict[str, Step] = Field(
        description="loss_backward, block_backward, optimizer_step: the terms live at each."
    )
    train_peak_step: str = Field(description="The moment that bounds the train phase.")
    phases: dict[str, float] = Field(description="load, train, eval, export: GB of each.")
    phase_terms: dict[str, Step] = Field(description="The terms of each phase.")
    phase_fit: dict[str, PhaseFit] = Field(description="Each phase's needs and smallest card.")
    trainable_params: int = Field(description="Exact count the optimizer updates.")
    recommendation: PlanRecommendation
    time: TimePlan | None = Field(
        default=None,
        description="Hours (with --train-tokens or --tokens-report): lower bounds per GPU "
        "class, and the campaign at the rates of a smoke report (--measured).",
    )
    host: HostPlan | None = Field(
        default=None, description="Host RAM, at the least (null in plans before it)."
    )
    disk: DiskPlan | None = Field(
        default=None, description="Disk, at the least (null in plans before it)."
    )
    stack: dict[str, StackPlan] | None = Field(
        default=None,
        description="The software each GPU class shown needs for this method, each fact "
        "sourced (null in plans before it).",
    )
