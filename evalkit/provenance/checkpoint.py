"""``evalkit card checkpoint-N/``: a Trainer checkpoint's state files, and whether it resumes.

transformers' ``Trainer`` resumes (``resume_from_checkpoint``) from what the
folder holds, and stays silent about what it lacks: without
``optimizer.pt`` or ``scheduler.pt`` it loads neither (AdamW's moments start
at zero and the learning-rate schedule at its beginning), without
``rng_state.pth`` it draws other random numbers, without
``trainer_state.json`` it starts at step 0; ``save_only_model: true`` keeps
none of them, and the resumed run still ends with exit 0. The card lists
the files by what a resume uses them for, reads the step counts the state
files hold — without torch, and without running any code a pickle names
(:mod:`evalkit.provenance.trainer_pickle`) — and says ``resumable`` or
exactly why not.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from evalkit._version import __version__
from evalkit.errors import EvalkitError, UnreadableFile
from evalkit.options import takes
from evalkit.provenance.card_options import CardParams
from evalkit.records._card import AdapterCard, Problem
from evalkit.records._checkpoint import CheckpointCard, CheckpointFile, Role

TRAINER_STATE = "trainer_state.json"
TRAINING_ARGS = "training_args.bin"
OPTIMIZER_NAMES = ("optimizer.pt", "optimizer.bin")
SCHEDULER = "scheduler.pt"
SCALER = "scaler.pt"
ADAPTER_WEIGHTS = ("adapter_model.safetensors", "adapter_model.bin")
_RNG = re.compile(r"rng_state(_\d+)?\.pth")
_MODEL_WEIGHTS = re.compile(
    r"(model|pytorch_model)(-\d{5}-of-\d{5})?\.(safetensors|bin)(\.index\.json)?"
)
_CHECKPOINT_NAME = re.compile(r"checkpoint-(\d+)")
# The settings of training_args.bin that decide what a resume restores.
TRAINING_KEYS = (
    "save_only_model",
    "fp16",
    "bf16",
    "gradient_accumulation_steps",
    "per_device_train_batch_size",
    "seed",
    "data_seed",
    "ignore_data_skip",
    "lr_scheduler_type",
    "optim",
    "learning_rate",
    "max_steps",
    "save_steps",
)
_FIX = "set save_only_model: false and save the checkpoint again"


def _role(name: str) -> Role:
    if name in ADAPTER_WEIGHTS or _MODEL_WEIGHTS.fullmatch(name):
        return "weights"
    fixed: dict[str, Role] = {
        "adapter_config.json": "adapter_config",
        "config.json": "model_config",
        SCHEDULER: "scheduler",
        SCALER: "scaler",
        TRAINER_STATE: "trainer_state",
        TRAINING_ARGS: "training_args",
    }
    if name in fixed:
        return fixed[name]
    if name in OPTIMIZER_NAMES:
        return "optimizer"
    if _RNG.fullmatch(name):
        return "rng_state"
    return "other"


def is_checkpoint(folder: Path) -> bool:
    """Whether ``folder`` is a Trainer checkpoint: named ``checkpoint-N`` or holding a state file
    an adapter or model folder never has (a damaged checkpoint is still one)."""
    if _CHECKPOINT_NAME.fullmatch(folder.name):
        return True
    try:
        names = {entry.name for entry in os.scandir(folder)}
    except OSError:
        return False
    state = {TRAINER_STATE, TRAINING_ARGS, SCHEDULER, *OPTIMIZER_NAMES}
    return bool(names & state) or any(_RNG.fullmatch(name) for name in names)


def _files(folder: Path) -> list[CheckpointFile]:
    try:
        entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
    except OSError as error:
        raise UnreadableFile(f"{folder}: cannot read: {error.strerror}") from error
    return [
        CheckpointFile(name=entry.name, role=_role(entry.name), bytes=entry.stat().st_size)
        for entry in entries
        if entry.is_file() and not entry.name.startswith(".")
    ]


class _Reader:
    """Reads the state files of one folder, collecting what is wrong as problems."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.problems: list[Problem] = []

    def problem(self, code: str, message: str, severity: str = "error") -> None:
        self.problems.append(Problem(code=code, severity=severity, message=message))  # type: ignore[arg-type]

    def state(self, name: str) -> Any:
        """A torch.save file's value, or None (an ``unreadable_state`` problem) when damaged."""
        from evalkit.provenance.trainer_pickle import read_torch_state

        try:
            return read_torch_state(self.folder / name)
        except EvalkitError as error:
            self.problem("unreadable_state", f"{name}: {_tail(error.message, self.folder)}")
            return None

    def trainer_state(self) -> dict[str, Any] | None:
        from evalkit.io import load_json

        if not (self.folder / TRAINER_STATE).is_file():
            return None
        try:
            value = load_json(self.folder / TRAINER_STATE)
        except EvalkitError as error:
            self.problem(
                "unreadable_state", f"{TRAINER_STATE}: {_tail(error.message, self.folder)}"
            )
            return None
        if not isinstance(value, dict):
            self.problem("unreadable_state", f"{TRAINER_STATE}: not a JSON object")
            return None
        return value

    def scheduler_steps(self) -> int | None:
        loaded = self.state(SCHEDULER) if (self.folder / SCHEDULER).is_file() else None
        if loaded is None:
            return None
        value = loaded.value
        steps = value.get("last_epoch") if isinstance(value, dict) else None
        if not isinstance(steps, int) or isinstance(steps, bool):
            self.problem("unreadable_state", f"{SCHEDULER}: holds no scheduler state (last_epoch)")
            return None
        return steps

    def optimizer_steps(self, name: str) -> int | None:
        loaded = self.state(name)
        if loaded is None:
            return None
        value = loaded.value
        per_parameter = value.get("state") if isinstance(value, dict) else None
        if not isinstance(per_parameter, dict) or "param_groups" not in value:
            self.problem("unreadable_state", f"{name}: holds no optimizer state dict")
            return None
        steps = [
            entry.get("step") if isinstance(entry, dict) else None
            for entry in per_parameter.values()
        ]
        try:
            read = loaded.scalars(steps)
        except EvalkitError as error:
            self.problem("unreadable_state", f"{name}: {_tail(error.message, self.folder)}")
            return None
        found: set[float] = set()
        for step, value in zip(steps, read, strict=True):
            if isinstance(step, int | float) and not isinstance(step, bool):
                found.add(float(step))  # optimizers that count in a plain number
            elif value is not None:
                found.add(value)  # torch's AdamW: a one-element tensor
        if not found:
            return None  # an optimizer that counts no steps (SGD without momentum)
        if len(found) > 1:
            self.problem(
                "step_mismatch",
                f"{name}: its parameters have stepped different numbers of times "
                f"({', '.join(f'{count:g}' for count in sorted(found))})",
            )
        return int(max(found))

    def training_args(self) -> dict[str, Any] | None:
        from evalkit.provenance.trainer_pickle import plain

        if not (self.folder / TRAINING_ARGS).is_file():
            return None
        loaded = self.state(TRAINING_ARGS)
        if loaded is None:
            return None
        fields = plain(loaded.value)
        if not isinstance(fields, dict):
            self.problem("unreadable_state", f"{TRAINING_ARGS}: holds no TrainingArguments")
            return None
        settings = {key: fields.get(key) for key in TRAINING_KEYS}
        accelerator = fields.get("accelerator_config")
        seedable = (
            accelerator.get("use_seedable_sampler") if isinstance(accelerator, dict) else None
        )
        settings["use_seedable_sampler"] = seedable
        return settings


def _tail(message: str, folder: Path) -> str:
    """An error's message without the folder's path (the card names the folder once)."""
    prefix = f"{folder}{os.sep}"
    return message.split(prefix, 1)[-1] if prefix in message else message


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _missing_state(reader: _Reader, names: set[str], settings: dict[str, Any] | None) -> None:
    """Each file a resume needs and the folder lacks: one problem saying what the resume does."""
    why = " (training_args.bin: save_only_model: true)" if _only_model(settings) else ""
    if not names & set(OPTIMIZER_NAMES):
        reader.problem(
            "missing_optimizer",
            f"no optimizer.pt{why}: transformers then loads neither the optimizer nor the "
            "scheduler and resumes with exit 0, AdamW's moments at zero and the learning-rate "
            "schedule from its start",
        )
    if SCHEDULER not in names:
        reader.problem(
            "missing_scheduler",
            f"no scheduler.pt{why}: transformers then loads neither the scheduler nor the "
            "optimizer, and the learning-rate schedule starts over",
        )
    if not any(_RNG.fullmatch(name) for name in names):
        reader.problem(
            "missing_rng_state",
            f"no rng_state.pth{why}: the resumed run draws other random numbers (dropout, "
            "sampling) than the interrupted run would have",
        )
    if TRAINER_STATE not in names:
        reader.problem(
            "missing_trainer_state",
            f"no trainer_state.json{why}: transformers resumes at global step 0, so the "
            "schedule and the data start over",
        )
    if settings is not None and settings.get("fp16") is True and SCALER not in names:
        reader.problem(
            "missing_scaler",
            "training_args.bin has fp16: true but there is no scaler.pt: the loss scale "
            "starts over",
        )


def _only_model(settings: dict[str, Any] | None) -> bool:
    return settings is not None and settings.get("save_only_model") is True


def _step_problems(reader: _Reader, card: dict[str, Any], fp16: bool) -> None:
    """global_step against the scheduler's and optimizer's counts, and the folder's name.

    Under fp16 a step the gradient scaler skips (an overflow) steps neither
    the optimizer nor the scheduler while global_step advances: a warning.
    """
    step = card["global_step"]
    if step is None:
        return
    severity = "warning" if fp16 else "error"
    skipped = "; under fp16, steps skipped on overflow" if fp16 else ""
    for name, count, what in (
        (SCHEDULER, card["scheduler_steps"], "the learning-rate schedule resumes"),
        ("optimizer.pt", card["optimizer_steps"], "AdamW's bias correction resumes"),
    ):
        if count is not None and count != step:
            reader.problem(
                "step_mismatch",
                f"trainer_state.json says global step {step} but {name} has stepped {count} "
                f"times: {what} at another step than the run{skipped}",
                severity,
            )
    named = _CHECKPOINT_NAME.fullmatch(reader.folder.name)
    if named and int(named.group(1)) != step:
        reader.problem(
            "step_mismatch",
            f"the folder is named {reader.folder.name} but trainer_state.json says global step "
            f"{step}",
        )


def _warnings(reader: _Reader, settings: dict[str, Any] | None, names: set[str]) -> None:
    if TRAINING_ARGS not in names:
        reader.problem(
            "missing_training_args",
            "no training_args.bin: the settings the run used (save_only_model, fp16, the "
            "sampler) cannot be checked",
            "warning",
        )
    if settings is None:
        return
    if settings.get("ignore_data_skip") is True:
        reader.problem(
            "ignore_data_skip",
            "training_args.bin has ignore_data_skip: true: a resume starts the epoch's data "
            "from its first batch again",
            "warning",
        )
    if settings.get("use_seedable_sampler") is False:
        reader.problem(
            "unseeded_sampler",
            "training_args.bin has accelerator_config.use_seedable_sampler: false: the sampler "
            "draws its order from the global RNG, so a resume in a later epoch reorders the "
            "data (the resume check of evalkit smoke measures it)",
            "warning",
        )


def _weights(reader: _Reader, names: set[str], params: CardParams) -> tuple[Any, Any]:
    """(``adapter`` | ``model`` | None, the adapter's card or None)."""
    adapter_files = names & set(ADAPTER_WEIGHTS)
    if adapter_files and "adapter_config.json" in names:
        from evalkit.provenance.card import adapter_card

        try:
            return "adapter", adapter_card(reader.folder, params)
        except EvalkitError as error:
            reader.problem("no_weights", f"the adapter is unreadable: {error.message}")
            return "adapter", None
    if adapter_files:
        reader.problem(
            "no_weights", "adapter weights without adapter_config.json: PEFT cannot load them"
        )
        return "adapter", None
    if any(_MODEL_WEIGHTS.fullmatch(name) for name in names):
        return "model", None
    reader.problem("no_weights", "no adapter or model weights: there is nothing to resume from")
    return None, None


@takes(CardParams)
def checkpoint_card(
    checkpoint: str | os.PathLike[str], params: CardParams | None = None, /, **values: Any
) -> CheckpointCard:
    """The card of a Trainer ``checkpoint-N`` folder (see ``docs/resume.md``).

    ``params`` (the adapter card's options: ``base``, ``base_revision``,
    ``training``) apply to the card of the adapter the checkpoint holds.
    A folder that cannot be listed raises an
    :class:`~evalkit.errors.EvalkitError`; everything wrong inside it is a problem.
    """
    given = CardParams.build(params, values)
    folder = Path(checkpoint)
    if not folder.is_dir():
        raise UnreadableFile(f"{folder}: no such folder; pass a checkpoint-N folder")
    files = _files(folder)
    names = {file.name for file in files}
    reader = _Reader(folder)
    weights, adapter = _weights(reader, names, given)
    state = reader.trainer_state()
    settings = reader.training_args()
    if _only_model(settings):
        reader.problem(
            "save_only_model",
            f"training_args.bin has save_only_model: true, so the checkpoint keeps the weights "
            f"alone and transformers resumes from it with exit 0 as another run; {_FIX}",
        )
    _missing_state(reader, names, settings)
    optimizer = next((name for name in OPTIMIZER_NAMES if name in names), None)
    fields: dict[str, Any] = {
        "global_step": _int_or_none((state or {}).get("global_step")),
        "scheduler_steps": reader.scheduler_steps(),
        "optimizer_steps": reader.optimizer_steps(optimizer) if optimizer else None,
    }
    _step_problems(reader, fields, bool(settings and settings.get("fp16") is True))
    for name in sorted(name for name in names if _RNG.fullmatch(name)):
        reader.state(name)
    _warnings(reader, settings, names)
    problems = sorted(reader.problems, key=lambda problem: problem.severity != "error")
    epoch = (state or {}).get("epoch")
    return CheckpointCard(
        evalkit_version=__version__,
        path=str(folder),
        weights=weights,
        files=files,
        bytes=sum(file.bytes for file in files),
        max_steps=_int_or_none((state or {}).get("max_steps")),
        epoch=float(epoch)
        if isinstance(epoch, int | float) and not isinstance(epoch, bool)
        else None,
        rng_states=sorted(name for name in names if _RNG.fullmatch(name)),
        training_args=settings,
        adapter=adapter if isinstance(adapter, AdapterCard) else None,
        resumable=not any(problem.severity == "error" for problem in problems),
        problems=problems,
        **fields,
    )


def _int_or_none(value: Any) -> int | None:
    return int(value) if _whole(value) else None


def checkpoint_json(card: CheckpointCard) -> bytes:
    """The bytes of the checkpoint card: indented, keys in model order, a final newline."""
    import orjson

    return orjson.dumps(card.model_dump(mode="json"), option=orjson.OPT_INDENT_2) + b"\n"
