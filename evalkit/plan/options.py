"""The options of a memory plan: checked, and with every default made explicit.

Defaults follow what the libraries do when nothing is said: PEFT's rank 8 and
its per-family default targets, NF4 with double quantization for QLoRA (the
QLoRA paper's recipe), and for QLoRA PEFT's ``prepare_model_for_kbit_training``
(which upcasts the unquantized weights to fp32 and turns gradient
checkpointing on).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypedDict, get_args

from evalkit import params
from evalkit.errors import ParameterError, UsageError
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


class OptionValues(TypedDict, total=False):
    """The keyword options of :func:`resolve_options` (and of ``evalkit.plan``)."""

    method: Method
    r: int | None
    targets: str | None
    quant: Quant | None
    kbit_prep: bool | None
    seq_len: int
    batch: int
    grad_checkpointing: bool | None
    optimizer: Optimizer
    precision: Precision
    attention: Attention
    gpus: int
    eval_batch: int
    eval_tokens: int | None
    export: Export | None


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
    batch: int
    grad_checkpointing: bool
    optimizer: Optimizer
    precision: Precision
    attention: Attention
    gpus: int
    eval_batch: int
    eval_tokens: int
    export: Export | None  # None for full fine-tuning: it saves its weights

    @property
    def adapter(self) -> bool:
        """Whether a LoRA adapter is trained (lora, qlora) rather than the weights (full)."""
        return self.method != "full"


def _choice(value: object, allowed: object, parameter: str) -> None:
    choices = get_args(allowed)
    if value not in choices:
        raise ParameterError(
            parameter, f"must be one of {', '.join(map(str, choices))}, got {value!r}"
        )


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


def resolve_options(
    shape: ModelShape,
    *,
    method: Method = "lora",
    r: int | None = None,
    targets: str | None = None,
    quant: Quant | None = None,
    kbit_prep: bool | None = None,
    seq_len: int = DEFAULT_SEQ_LEN,
    batch: int = 1,
    grad_checkpointing: bool | None = None,
    optimizer: Optimizer = "adamw",
    precision: Precision = "bf16",
    attention: Attention = "sdpa",
    gpus: int = 1,
    eval_batch: int = DEFAULT_EVAL_BATCH,
    eval_tokens: int | None = None,
    export: Export | None = None,
) -> Options:
    """Check every option against the method and the model, and fill in the defaults."""
    _choice(method, Method, "method")
    _choice(optimizer, Optimizer, "optimizer")
    _choice(precision, Precision, "precision")
    _choice(attention, Attention, "attention")
    if method == "full":
        for given, parameter in ((r, "r"), (targets, "targets"), (export, "export")):
            if given is not None:
                raise ParameterError(
                    parameter,
                    "applies to lora and qlora; full fine-tuning trains (and saves) "
                    "the weights themselves",
                )
    if method != "qlora":
        for given, parameter in ((quant, "quant"), (kbit_prep, "kbit_prep")):
            if given is not None:
                raise ParameterError(
                    parameter, f"applies to qlora only; {method} keeps the base at its precision"
                )
    if quant is not None:
        _choice(quant, Quant, "quant")
    quant = _quant_of_stored(shape, method, quant)
    if export is not None:
        _choice(export, Export, "export")
    rank = 0 if method == "full" else params.positive(DEFAULT_RANK if r is None else r, "r")
    chosen, spec = ((), "") if method == "full" else resolve_targets(shape, targets)
    qlora = method == "qlora"
    prepared = (True if kbit_prep is None else kbit_prep) if qlora else False
    seq_len = params.positive(seq_len, "seq_len", "tokens")
    return Options(
        method=method,
        r=rank,
        targets=chosen,
        targets_spec=spec,
        quant=(quant or "nf4-dq") if qlora else None,
        kbit_prep=prepared,
        seq_len=seq_len,
        batch=params.positive(batch, "batch", "sequences"),
        # prepare_model_for_kbit_training turns gradient checkpointing on by default.
        grad_checkpointing=prepared if grad_checkpointing is None else grad_checkpointing,
        optimizer=optimizer,
        precision=precision,
        attention=attention,
        gpus=params.positive(gpus, "gpus", "GPUs"),
        eval_batch=params.positive(eval_batch, "eval_batch", "sequences"),
        eval_tokens=params.positive(
            seq_len if eval_tokens is None else eval_tokens, "eval_tokens", "tokens"
        ),
        export=None if method == "full" else (export or "merge"),
    )
