"""The ``TrainingArguments`` of ``smoke --trainer hf``: the user's fields, and what smoke sets.

The resume check runs the user's training settings (``--trainer-args
FILE``, YAML or JSON, read with evalkit's bounded readers); a field that
``TrainingArguments`` does not have is exit 2 naming it, and the whole set is
given to ``TrainingArguments`` here, in the parent, so that a value it refuses
is exit 2 too, before any model loads. A few fields belong to the check
(where to save, how many steps, when to save, logging every step, one process
on the chosen device): smoke sets them and records the user's value it
replaced. Smoke's own options (``--batch-size``, ``--lr``, ``--seed``,
``--grad-checkpointing``) fill the fields the file leaves out.
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalkit.errors import MalformedFile, UsageError
from evalkit.records._resume import TrainerArgs

# Fields a run with several processes or devices needs: smoke runs one process.
_DISTRIBUTED = ("deepspeed", "fsdp", "fsdp_config", "parallelism_config")


@dataclass(frozen=True)
class ResolvedArgs:
    """The fields every run of the check is given, and their record."""

    fields: dict[str, Any]
    """``TrainingArguments(**fields)`` for a run (``output_dir`` replaced per run)."""
    record: TrainerArgs

    @property
    def gradient_accumulation_steps(self) -> int:
        """Micro-batches per optimizer step."""
        return int(self.fields.get("gradient_accumulation_steps", 1))

    @property
    def batch(self) -> int:
        """Rows per micro-batch."""
        return int(self.fields["per_device_train_batch_size"])

    @property
    def seed(self) -> int:
        """The Trainer's seed, also set before the adapter is made."""
        return int(self.fields["seed"])


def _read(path: Path) -> tuple[dict[str, Any], str]:
    from evalkit.io import parse_json, parse_yaml, read_bytes

    data = read_bytes(path, "TrainingArguments file")  # read once: hashed and parsed
    digest = hashlib.sha256(data).hexdigest()
    if path.suffix.lower() in (".yaml", ".yml"):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as error:
            raise MalformedFile(f"{path}: not UTF-8 text ({error.reason})") from None
        value = parse_yaml(text, str(path))
    else:
        value = parse_json(data, str(path))
    if value is None:
        value = {}
    if not isinstance(value, dict):
        raise MalformedFile(
            f"{path}: expected a mapping of TrainingArguments fields (learning_rate: 2e-4, …), "
            f"got {type(value).__name__}"
        )
    try:
        json.dumps(value)
    except (TypeError, ValueError) as error:
        raise MalformedFile(
            f"{path}: a value is not plain data ({error}); write numbers, text, true/false, "
            "lists and mappings"
        ) from error
    return {str(key): value[key] for key in value}, digest


def _check_names(path: Path, given: dict[str, Any], known: list[str], version: str) -> None:
    unknown = sorted(set(given) - set(known))
    if not unknown:
        return
    hints = []
    for name in unknown:
        close = difflib.get_close_matches(name, known, n=1)
        hints.append(f"{name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    what = "field" if len(unknown) == 1 else "fields"
    raise UsageError(
        f"{path}: unknown TrainingArguments {what} {', '.join(hints)}; the file takes the fields "
        f"of transformers {version}'s TrainingArguments"
    )


def _check_single_process(path: Path, given: dict[str, Any]) -> None:
    for name in _DISTRIBUTED:
        if given.get(name):
            raise UsageError(
                f"{path}: {name} is set, and smoke runs the check in one process on one device; "
                f"remove {name} from the file for the check"
            )


def resolve_args(
    path: Path | None,
    *,
    steps: int,
    at_step: int,
    device: str,
    batch: int,
    lr: float,
    seed: int,
    grad_checkpointing: bool,
) -> ResolvedArgs:
    """The user's fields (``path``), smoke's defaults under them and its own fields over them.

    Refuses (exit 2) an unknown field, a distributed setting, and a set of
    values ``TrainingArguments`` itself refuses (its message, one line).
    """
    from evalkit.model import runtime

    transformers = runtime.transformers_module()
    given, digest = _read(path) if path is not None else ({}, None)
    known = [f.name for f in dataclasses.fields(transformers.TrainingArguments) if f.init]
    where = path if path is not None else Path("(smoke's defaults)")
    _check_names(where, given, known, transformers.__version__)
    _check_single_process(where, given)
    defaults: dict[str, Any] = {
        "per_device_train_batch_size": batch,
        "learning_rate": lr,
        "seed": seed,
    }
    if grad_checkpointing:
        defaults["gradient_checkpointing"] = True
    owned: dict[str, Any] = {
        "output_dir": "(per run)",
        "max_steps": steps,
        "save_strategy": "steps",
        "save_steps": at_step,
        "save_total_limit": None,
        "logging_strategy": "steps",
        "logging_steps": 1,
        "report_to": "none",
        "disable_tqdm": True,
        "remove_unused_columns": False,
        "use_cpu": device == "cpu",
        "push_to_hub": False,
        "eval_strategy": "no",
        "load_best_model_at_end": False,
        "resume_from_checkpoint": None,
    }
    fields = {**defaults, **given, **owned}
    overridden = sorted(name for name in given if name in owned and given[name] != owned[name])
    set_by_smoke = {**{k: v for k, v in defaults.items() if k not in given}, **owned}
    _validate(where, transformers, fields)
    record = TrainerArgs(
        file=str(path) if path is not None else None,
        sha256=digest,
        given=given,
        set_by_smoke=set_by_smoke,
        overridden=overridden,
    )
    return ResolvedArgs(fields=fields, record=record)


def _validate(path: Path, transformers: Any, fields: dict[str, Any]) -> None:
    """``TrainingArguments(**fields)``: a value it refuses is exit 2 with its words."""
    import tempfile

    from evalkit.model import runtime

    with tempfile.TemporaryDirectory(prefix="evalkit-args-") as scratch:
        try:
            with runtime.quiet_warnings():
                transformers.TrainingArguments(**{**fields, "output_dir": scratch})
        except Exception as error:  # it raises ValueError, TypeError, ImportError, …
            text = str(error).strip().splitlines()
            first = text[0][:300] if text else type(error).__name__
            raise UsageError(
                f"{path}: transformers' TrainingArguments refuses these fields: {first}"
            ) from None
