"""The options of a memory plan: checked, and with every default made explicit.

Defaults follow what the libraries do when nothing is said: PEFT's rank 8 and
its per-family default targets, NF4 with double quantization for QLoRA (the
QLoRA paper's recipe), and for QLoRA PEFT's ``prepare_model_for_kbit_training``
(which upcasts the unquantized weights to fp32 and turns gradient
checkpointing on).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from evalkit.errors import ParameterError, UsageError
from evalkit.options import Params, option, takes, warn_renamed
from evalkit.plan import bounds
from evalkit.plan.bounds import count, figure
from evalkit.plan.config import ModelShape

Method = Literal["full", "lora", "qlora"]
Quant = Literal["nf4", "nf4-dq", "int8"]
Optimizer = Literal[
    "adamw", "adamw-foreach", "adamw-8bit", "paged-adamw", "paged-adamw-8bit", "sgd"
]
Precision = Literal["bf16", "fp16", "fp32", "amp"]
Attention = Literal["sdpa", "eager"]
Export = Literal["merge", "adapter"]

ALL_LINEAR = "all-linear"
# PEFT's TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING; phi3 (absent there)
# gets its fused qkv_proj, and an unknown model Llama's names.
DEFAULT_TARGETS: dict[str, tuple[str, ...]] = {"phi3": ("qkv_proj",)}
LLAMA_DEFAULT_TARGETS = ("q_proj", "v_proj")
DEFAULT_RANK = 8
DEFAULT_SEQ_LEN = 2048
DEFAULT_EVAL_BATCH = 8


@dataclass(frozen=True, kw_only=True)
class PlanParams(Params):
    """The options of a memory plan, as given: ``evalkit.plan``'s and ``evalkit plan``'s.

    ``None`` means the default that the method and the model decide
    (:func:`resolve_options` makes every one explicit).
    """

    method: Method = option(
        "lora", help="Train every weight, a LoRA adapter, or an adapter on a 4/8-bit base."
    )
    r: int | None = option(
        None,
        help="LoRA rank.",
        metavar="N",
        check=count(bounds.MAX_RANK, "ranks"),
        default_help=str(DEFAULT_RANK),
    )
    targets: str | None = option(
        None,
        metavar="all-linear|q_proj,v_proj,...",
        help="Linears the adapter wraps; all-linear excludes the output head, as PEFT does.",
        default_help="PEFT's for the family, q_proj,v_proj for Llama-style models",
    )
    quant: Quant | None = option(
        None,
        help="How qlora stores the base's linears.",
        default_help="nf4-dq, NF4 with double quantization",
    )
    kbit_prep: bool | None = option(
        None,
        secondary="--no-kbit-prep",
        help="qlora: PEFT's prepare_model_for_kbit_training, which upcasts the unquantized "
        "weights to fp32 and turns gradient checkpointing on.",
        default_help="on",
    )
    seq_len: int = option(
        DEFAULT_SEQ_LEN,
        metavar="N",
        check=count(bounds.MAX_TOKENS, "tokens"),
        help="Tokens per training sequence (the padded or packed length).",
    )
    batch_size: int = option(
        1,
        aliases=("--batch",),
        renamed=("batch",),
        metavar="N",
        check=count(bounds.MAX_BATCH, "sequences"),
        help="Sequences per step, per GPU.",
    )
    grad_checkpointing: bool | None = option(
        None,
        secondary="--no-grad-checkpointing",
        help="Checkpoint each decoder layer (keep its input, rebuild it in the backward).",
        default_help="on for qlora with k-bit prep, off otherwise",
    )
    optimizer: Optimizer = option(
        "adamw",
        help="adamw: two states per parameter (fused kernel, the HF Trainer's default); "
        "adamw-foreach: plus a parameter-sized temporary in the step (torch.optim.AdamW's "
        "default); 8-bit: one byte per state; paged: states in unified memory.",
    )
    precision: Precision = option(
        "bf16",
        help="bf16/fp16: weights, gradients and states in 16 bits; amp: fp32 weights with "
        "16-bit compute; fp32: everything in fp32.",
    )
    attention: Attention = option(
        "sdpa", help="sdpa/flash keeps no seq x seq matrix; eager keeps the softmax."
    )
    gpus: int = option(
        1,
        metavar="N",
        check=count(bounds.MAX_GPUS, "GPUs"),
        help="Shard weights, gradients and optimizer states over N GPUs (FSDP/ZeRO-3).",
    )
    eval_batch_size: int = option(
        DEFAULT_EVAL_BATCH,
        aliases=("--eval-batch",),
        renamed=("eval_batch",),
        metavar="N",
        check=count(bounds.MAX_BATCH, "sequences"),
        help="Sequences generated at once when evaluating.",
    )
    eval_tokens: int | None = option(
        None,
        metavar="N",
        check=count(bounds.MAX_TOKENS, "tokens"),
        help="Prompt + new tokens per generated sequence.",
        default_help="--seq-len",
    )
    export: Export | None = option(
        None,
        help="merge: the adapter merged into a 16-bit base (for qlora, the dequantized base); "
        "adapter: save the adapter alone.",
        default_help="merge",
    )
    save_total_limit: int = option(
        1,
        metavar="K",
        check=count(bounds.MAX_SAVE_TOTAL_LIMIT, "checkpoints"),
        help="Order sheet: training checkpoints kept on disk at once (the Trainer's "
        "save_total_limit; a resumable run keeps at least one).",
    )


@dataclass(frozen=True, kw_only=True)
class TimeRequest(Params):
    """The time options of ``evalkit plan`` (all optional but the tokens)."""

    train_tokens: int | None = option(
        None,
        metavar="N",
        check=count(bounds.MAX_TRAIN_TOKENS, "tokens"),
        help="Time: tokens of one epoch (every position the model computes; with padding, the "
        "padded count). Adds lower bounds of hours per GPU class.",
    )
    tokens_report: Path | None = option(
        None,
        metavar="FILE",
        path_file=True,
        help="Time: the tokens of an epoch from `evalkit tokens --json` of the training split "
        "(its total; derived, and said how, when the report lacks it).",
    )
    tokens_split: str | None = option(
        None,
        metavar="NAME",
        help="The training split's name in --tokens-report.",
        default_help="train, or its only split",
    )
    epochs: float = option(
        1.0,
        metavar="E",
        check=figure(0, bounds.MAX_EPOCHS, "a number of epochs"),
        help="Time: passes over the training tokens.",
    )
    eval_examples: int | None = option(
        None,
        metavar="M",
        check=count(bounds.MAX_EXAMPLES, "sequences"),
        help="Time: sequences one evaluation pass generates for (prompts of --eval-tokens minus "
        "--eval-new-tokens tokens, --eval-batch-size at once).",
    )
    eval_new_tokens: int | None = option(
        None,
        metavar="T",
        check=count(bounds.MAX_TOKENS, "tokens"),
        help="Time: new tokens generated per sequence.",
    )
    gpu: tuple[str, ...] = option(
        (),
        metavar="NAME|NAME:MEMORY_GB:TFLOPS[:BANDWIDTH_GBPS][:nvidia|amd]",
        check=bounds.gpu_rows,
        help="A GPU of the shipped table (repeat to choose several), or a new class with its "
        "peak dense bf16 TFLOP/s, memory bandwidth in GB/s (without it, only FLOPs bound "
        "decoding) and vendor (its software stack); a new class joins the memory "
        "recommendation, the hours and the order sheet.",
        default_help="the whole table",
    )
    measured: Path | None = option(
        None,
        metavar="SMOKE_JSON",
        path_file=True,
        help="Campaign: the rates `evalkit smoke --json` measured on its device (same model).",
    )
    runs: int | None = option(
        None,
        metavar="K",
        check=count(bounds.MAX_RUNS, "runs"),
        help="Campaign: variants trained and evaluated.",
    )
    window: str | None = option(
        None, metavar="7d|36h|90m", check=bounds.window, help="Campaign: the rented window."
    )
    recovery: float = option(
        0.0,
        metavar="SHARE",
        check=bounds.recovery,
        help="Campaign: share of the window kept for reruns.",
    )
    price_per_hour: float | None = option(
        None,
        metavar="P",
        check=bounds.price,
        help="Campaign: rental price per hour (the cost of the hours and of the window).",
    )
    preemptible: bool = option(
        False,
        help="Preemptible GPUs (with --measured): the checkpoint cadence, from the smoke "
        "report's measured save time: minutes lost per preemption, the share of time saving.",
    )
    save_every: int | None = option(
        None,
        metavar="S",
        check=count(bounds.MAX_SAVE_EVERY, "steps"),
        help="Preemptible: optimizer steps between checkpoints (the Trainer's save_steps).",
        default_help="the largest that keeps within --max-lost-minutes",
    )
    max_lost_minutes: float = option(
        10.0,
        metavar="M",
        check=figure(0, bounds.MAX_LOST_MINUTES, "minutes"),
        help="Preemptible: the most work one preemption may lose; the plan gives the "
        "--save-every that keeps within it.",
    )


@dataclass(frozen=True)
class Options:
    """Every option of a plan, resolved: no ``None`` left where a default applies."""

    method: Method
    r: int  # 0 for full fine-tuning
    targets: tuple[str, ...]  # the block linears an adapter wraps; () for full
    targets_spec: str  # as asked: "all-linear" or the comma-separated names
    quant: Quant | None  # qlora only
    kbit_prep: bool  # qlora only: PEFT's prepare_model_for_kbit_training
    seq_len: int
    batch_size: int
    grad_checkpointing: bool
    optimizer: Optimizer
    precision: Precision
    attention: Attention
    gpus: int
    eval_batch_size: int
    eval_tokens: int
    export: Export | None  # None for full fine-tuning: it saves its weights
    save_total_limit: int = 1  # checkpoints kept on disk at once (the order sheet's)

    @property
    def adapter(self) -> bool:
        """Whether a LoRA adapter is trained (lora, qlora) rather than the weights (full)."""
        return self.method != "full"

    @property
    def batch(self) -> int:
        """Deprecated spelling of :attr:`batch_size` (warns)."""
        warn_renamed("batch", "batch_size", "Options")
        return self.batch_size

    @property
    def eval_batch(self) -> int:
        """Deprecated spelling of :attr:`eval_batch_size` (warns)."""
        warn_renamed("eval_batch", "eval_batch_size", "Options")
        return self.eval_batch_size


def resolve_targets(shape: ModelShape, spec: str | None) -> tuple[tuple[str, ...], str]:
    """The linears ``spec`` names (``all-linear``: every block linear, never the head)."""
    names = [layer.name for layer in shape.linears]
    if spec is None:
        chosen = DEFAULT_TARGETS.get(shape.model_type, LLAMA_DEFAULT_TARGETS)
        return chosen, ",".join(chosen)
    if spec.strip() == ALL_LINEAR:
        return tuple(names), ALL_LINEAR
    asked = [name.strip() for name in spec.split(",") if name.strip()]
    if not asked:
        raise ParameterError("targets", f"has no module names in {spec!r}; use e.g. q_proj,v_proj")
    for name in asked:
        if name not in names:
            head = " (the output head is never a target: all-linear leaves it out, as PEFT does)"
            raise ParameterError(
                "targets",
                f"{name!r} is not a linear of a {shape.model_type} block; use "
                f"{', '.join(names)} or all-linear{head if name == 'lm_head' else ''}",
            )
    chosen = tuple(name for name in names if name in asked)
    return chosen, ",".join(chosen)


def _quant_of_stored(shape: ModelShape, method: str, quant: Quant | None) -> Quant | None:
    """The --quant of a checkpoint stored quantized (``quantization_config``), checked.

    Such a base is QLoRA whatever is asked: its linears are 4 or 8 bits on
    disk and in memory, so a plan of 16-bit weights (lora) or of training
    them (full) would not be a bound of anything that can run.
    """
    stored = shape.stored_quant
    if stored is None:
        return quant
    source = f"{shape.path}: 'quantization_config'"
    # fp4 is stored as NF4 is: 4-bit codes and one absmax per 64 weights.
    planned = {"nf4": "nf4", "nf4-dq": "nf4-dq", "fp4": "nf4", "fp4-dq": "nf4-dq", "int8": "int8"}
    if stored not in planned:
        raise UsageError(
            f"{source} stores the weights as {stored!r}, which the plan does not model (it "
            "plans bitsandbytes nf4 and int8); plan the unquantized base's config with "
            "{method}",
            refs={"method": "qlora"},
        )
    expected = planned[stored]
    if method != "qlora":
        raise UsageError(
            f"{source} stores the linears in bitsandbytes {stored}: this base trains as "
            "QLoRA; use {method} ({quant}), or pass the unquantized base's config",
            refs={"method": "qlora", "quant": expected},
        )
    if quant is not None and (quant == "int8") != (expected == "int8"):
        raise ParameterError(
            "quant",
            f"{quant}: {source} stores the linears in bitsandbytes {stored}; use "
            f"{{quant}} {expected} or leave it out",
            refs=["quant"],
        )
    return quant if quant is not None else expected  # type: ignore[return-value]


@takes(PlanParams)
def resolve_options(
    shape: ModelShape, given: PlanParams | None = None, /, **values: Any
) -> Options:
    """Check every option against the method and the model, and fill in the defaults.

    ``given`` is a :class:`PlanParams`; keyword arguments build one (or change
    ``given``'s fields): ``resolve_options(shape, method="qlora", r=16)``.
    """
    chosen_params = PlanParams.build(given, values)
    method, r, targets = chosen_params.method, chosen_params.r, chosen_params.targets
    quant, kbit_prep, export = chosen_params.quant, chosen_params.kbit_prep, chosen_params.export
    seq_len, eval_tokens = chosen_params.seq_len, chosen_params.eval_tokens
    grad_checkpointing = chosen_params.grad_checkpointing
    if method == "full":
        for value, parameter in ((r, "r"), (targets, "targets"), (export, "export")):
            if value is not None:
                raise ParameterError(
                    parameter,
                    "applies to lora and qlora; full fine-tuning trains (and saves) "
                    "the weights themselves",
                )
    if method != "qlora":
        for value, parameter in ((quant, "quant"), (kbit_prep, "kbit_prep")):
            if value is not None:
                raise ParameterError(
                    parameter, f"applies to qlora only; {method} keeps the base at its precision"
                )
    quant = _quant_of_stored(shape, method, quant)
    rank = 0 if method == "full" else (DEFAULT_RANK if r is None else r)
    chosen, spec = ((), "") if method == "full" else resolve_targets(shape, targets)
    qlora = method == "qlora"
    prepared = (True if kbit_prep is None else kbit_prep) if qlora else False
    return Options(
        method=method,
        r=rank,
        targets=chosen,
        targets_spec=spec,
        quant=(quant or "nf4-dq") if qlora else None,
        kbit_prep=prepared,
        seq_len=seq_len,
        batch_size=chosen_params.batch_size,
        # prepare_model_for_kbit_training turns gradient checkpointing on by default.
        grad_checkpointing=prepared if grad_checkpointing is None else grad_checkpointing,
        optimizer=chosen_params.optimizer,
        precision=chosen_params.precision,
        attention=chosen_params.attention,
        gpus=chosen_params.gpus,
        eval_batch_size=chosen_params.eval_batch_size,
        eval_tokens=seq_len if eval_tokens is None else eval_tokens,
        export=None if method == "full" else (export or "merge"),
        save_total_limit=chosen_params.save_total_limit,
    )
