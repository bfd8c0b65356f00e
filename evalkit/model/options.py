"""The options of the commands that run a model: ``generate``, ``reload-check``, ``smoke``.

One frozen object per command (:class:`GenerateParams`,
:class:`ReloadCheckParams`, :class:`SmokeParams`): the library takes it, the
click command is built from it (:mod:`evalkit.options`). Where a model runs
and in what dtype is :class:`ModelParams`, the one definition that
``generate`` and ``smoke`` share; ``reload-check``'s device and dtype take
the same choices but default to the run's. ``smoke``'s rank, targets,
sequence length and batch are the plan's fields (:class:`PlanParams`): the
same flags, checks and deprecated spellings, since smoke measures exactly
what ``evalkit plan`` bounds.

Stdlib and evalkit's light modules only: ``evalkit smoke --help`` must not
import torch, transformers or peft (nor pydantic).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from evalkit import params
from evalkit.errors import ParameterError
from evalkit.model.runtime import DeviceChoice, DtypeChoice
from evalkit.options import Params, option, spec_of
from evalkit.plan.options import PlanParams
from evalkit.records import Loss
from evalkit.records._kinds import Backend
from evalkit.vocabulary import hf_split_field, id_field, seed_field, text_field

SmokeMethod = Literal["lora", "full"]
SmokeTrainer = Literal["evalkit", "hf"]

_TOKENS = functools.partial(params.positive, unit="tokens")


def max_new_tokens_field(default: int, help: str) -> Any:
    """``max_new_tokens``: how many tokens a greedy pass may add (``--max-new-tokens N``)."""
    return option(default, metavar="N", check=_TOKENS, help=help)


TEXT_HELP = "Conversation column; twice for TRL's prompt/completion pair."
BACKEND_HELP = (
    "hf: transformers' generate (+ PEFT); vllm: vLLM's offline engine, the adapter as a "
    "LoRARequest (extra evalkit[vllm])."
)


@dataclass(frozen=True, kw_only=True)
class ModelParams(Params):
    """Where a model runs and in what dtype, with the rules of ``docs/generate.md``."""

    device: DeviceChoice = option("auto", help="auto: CUDA when torch sees a GPU, else the CPU.")
    dtype: DtypeChoice = option(
        "auto", help="auto: float32 on the CPU; on CUDA the saved 16-bit dtype, else float32."
    )


@dataclass(frozen=True, kw_only=True)
class GenerateParams(ModelParams):
    """The options of ``evalkit.generate`` and ``evalkit generate``."""

    backend: Backend = option("hf", help=BACKEND_HELP)
    adapter: Path | None = option(
        None,
        help="PEFT adapter folder, loaded on --base in eval mode (omit: the base alone).",
    )
    tokenizer: Path | None = option(
        None, help="Tokenizer folder (default: the adapter folder if it has one, else --base)."
    )
    hf_split: str | None = hf_split_field()
    id_column: str = id_field("Id column of the split.", required=True)
    text: tuple[str, ...] = text_field(TEXT_HELP, renamed=("text_columns",))
    max_new_tokens: int = max_new_tokens_field(256, "At most this many tokens per output.")
    batch_size: int = option(
        8,
        metavar="N",
        check=functools.partial(params.positive, unit="sequences"),
        help="Prompts decoded together (hf: left-padded; vllm: the engine's max_num_seqs).",
    )
    seed: int = seed_field("vllm: SamplingParams' and the engine's seed (greedy draws nothing).")


def _match_rate(value: Any, parameter: str) -> float:
    if isinstance(value, bool) or not isinstance(value, float | int) or not 0 <= value <= 1:
        raise ParameterError(parameter, f"must be an exact-match rate in [0, 1], got {value!r}")
    return float(value)


def _control_examples(value: Any, parameter: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ParameterError(
            parameter, f"must be at least 1 (control examples checked), got {value!r}"
        )
    return value


@dataclass(frozen=True, kw_only=True)
class ReloadCheckParams(Params):
    """The options of ``evalkit.reload_check`` and ``evalkit reload-check``.

    ``device`` and ``dtype`` take :class:`ModelParams`' choices; unset, they
    are the run's (what ``run.json`` records), so the check reloads as the
    run loaded.
    """

    n: int = option(
        16, check=_control_examples, help="Control examples to regenerate (all when N >= rows)."
    )
    seed: int = seed_field("Seed of the choice.")
    backend: Backend | None = option(
        None,
        help="Regenerate with hf or vllm (default: the run's backend); vllm checks the adapter "
        "as a server runs it against the tokens that were scored.",
    )
    min_match: float = option(
        1.0,
        metavar="RATE",
        check=_match_rate,
        help="Smallest exact-match rate of token ids that passes.",
    )
    merged: Path | None = option(
        None, help="A merged model folder to check instead of the run's base + adapter."
    )
    device: DeviceChoice | None = option(None, help="Where to reload (default: the run's device).")
    dtype: DtypeChoice | None = option(None, help="dtype to load in (default: the run's).")


def _learning_rate(value: Any, parameter: str) -> float:
    if isinstance(value, bool) or not (
        isinstance(value, float | int) and math.isfinite(value) and value > 0
    ):
        raise ParameterError(parameter, f"must be a positive finite number, got {value!r}")
    return value


def _plan_field(name: str, help: str, **changes: Any) -> Any:
    """The plan's field ``name`` (flag, check, deprecated spellings, default) in smoke's words.

    Smoke runs what the plan bounds, so a value the plan refuses is refused
    here by the same check; only the help (and, where given, the metavar)
    is smoke's.
    """
    field = next(field for field in dataclasses.fields(PlanParams) if field.name == name)
    spec = spec_of(field)
    return option(
        field.default,
        help=help,
        flag=spec.flag,
        metavar=changes.get("metavar", spec.metavar),
        check=spec.check,
        aliases=spec.aliases,
        renamed=spec.renamed,
    )


@dataclass(frozen=True, kw_only=True)
class SmokeParams(ModelParams):
    """The options of ``evalkit.smoke`` and ``evalkit smoke``.

    ``r``, ``targets``, ``seq_len`` and ``batch_size`` are :class:`PlanParams`'
    fields, checked as the plan checks them; the plan of the run is made
    from this object (:meth:`plan_params`).
    """

    hf_split: str | None = hf_split_field()
    text: tuple[str, ...] = text_field(TEXT_HELP)
    method: SmokeMethod = option(
        "lora", help="lora: a new PEFT adapter trains; full: every weight does."
    )
    r: int | None = _plan_field("r", "LoRA rank (default 8, PEFT's).")
    targets: str | None = _plan_field(
        "targets",
        "Linears the adapter wraps (default: PEFT's for the family, e.g. q_proj,v_proj).",
        metavar="all-linear|NAMES",
    )
    steps: int = option(
        3,
        metavar="N",
        check=params.positive,
        help="Optimizer steps; the first is a warm-up the training throughput leaves out.",
    )
    seq_len: int = _plan_field(
        "seq_len", "Tokens per sequence: each is cut (start kept) and padded to it, as planned."
    )
    batch_size: int = _plan_field("batch_size", "Sequences per step.")
    lr: float = option(1e-4, check=_learning_rate, help="AdamW learning rate.")
    grad_checkpointing: bool = option(False, help="Checkpoint every decoder layer (as planned).")
    loss: Loss | None = option(
        None,
        help="Supervised tokens, as evalkit tokens --loss (default: the assistant turns).",
    )
    max_new_tokens: int = max_new_tokens_field(
        16, "New tokens of the short generation (eval phase)."
    )
    tokenizer: Path | None = option(None, help="Tokenizer folder (default: --base).")
    seed: int = seed_field("Seeds the rows' order and the adapter's initialisation.")
    trainer: SmokeTrainer = option(
        "evalkit",
        help="evalkit: the phases above, on smoke's own AdamW loop; hf: also the resume check "
        "with transformers' Trainer (needs --resume-at).",
    )
    resume_at: int | None = option(
        None,
        metavar="K",
        check=params.positive,
        help="With --trainer hf: kill a run (SIGKILL) right after checkpoint K is written, "
        "resume it in a new process, compare it with two straight runs to --steps.",
    )
    trainer_args: Path | None = option(
        None,
        metavar="FILE",
        help="YAML or JSON of TrainingArguments fields for --trainer hf (learning_rate, "
        "gradient_accumulation_steps, lr_scheduler_type, save_only_model, …).",
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_resume(self)

    def plan_params(self) -> PlanParams:
        """The plan's options for this run, as given (checked again by the plan with the model)."""
        return PlanParams(
            method=self.method,
            r=self.r,
            targets=self.targets,
            seq_len=self.seq_len,
            batch_size=self.batch_size,
            grad_checkpointing=self.grad_checkpointing,
        )


def _check_resume(given: SmokeParams) -> None:
    """The resume check's options go together: --trainer hf, --resume-at K below --steps."""
    if given.trainer == "hf" and given.resume_at is None:
        raise ParameterError(
            "trainer",
            "hf runs the resume check: add {resume_at} K, a step below {steps}",
            refs=["resume_at", "steps"],
        )
    if given.trainer != "hf" and given.resume_at is not None:
        raise ParameterError(
            "resume_at",
            "is for the resume check with transformers' Trainer: add {trainer}",
            refs={"trainer": "hf"},
        )
    if given.resume_at is not None and given.resume_at >= given.steps:
        raise ParameterError(
            "resume_at",
            f"{given.resume_at}: must be below {{steps}} ({given.steps}), so that the resumed "
            "run has steps to compare",
            refs=["steps"],
        )


def check_trainer_args(given: SmokeParams) -> None:
    """``trainer_args`` is for the resume check alone.

    Checked when the library runs rather than when the object is made, so
    that the command line first checks every path it was given (an output
    that would replace this input is refused as such).
    """
    if given.trainer_args is not None and given.trainer != "hf":
        raise ParameterError(
            "trainer_args",
            "is for the resume check with transformers' Trainer: add {trainer}",
            refs={"trainer": "hf"},
        )
