"""The text ``evalkit card`` prints for a Trainer checkpoint: its files, step counts, verdict."""

from __future__ import annotations

import textwrap

from evalkit.records._checkpoint import CheckpointCard

_SHOWN_SETTINGS = (
    "save_only_model",
    "gradient_accumulation_steps",
    "seed",
    "lr_scheduler_type",
    "optim",
    "fp16",
    "bf16",
)


def _count(value: int | None) -> str:
    return "-" if value is None else str(value)


def _headline(card: CheckpointCard) -> str:
    what = {"adapter": "a PEFT adapter", "model": "a whole model's weights", None: "no weights"}
    adapter = card.adapter
    if adapter is not None and adapter.lora is not None:
        targets = adapter.lora.target_modules
        shown = ",".join(targets) if isinstance(targets, list) else str(targets)
        held = f"LoRA r {adapter.lora.r} on {shown}, {adapter.trainable_params:,} params"
    else:
        held = what[card.weights]
    step = f"global step {_count(card.global_step)}"
    if card.max_steps:
        step += f" of {card.max_steps}"
    epoch = f", epoch {card.epoch:.2f}" if card.epoch is not None else ""
    return f"checkpoint {card.path}: {held}; {step}{epoch}"


def _wrapped(text: str, indent: int = 4) -> list[str]:
    return textwrap.wrap(text, width=100, subsequent_indent=" " * indent)


def render_checkpoint_summary(card: CheckpointCard, out: str | None = None) -> str:
    """A plain-text view of a checkpoint card, for a terminal or a CI log."""
    lines = [_headline(card), "", f"{'file':<30}{'used for':<16}{'bytes':>14}"]
    for file in card.files:
        lines.append(f"{file.name:<30}{file.role:<16}{file.bytes:>14,}")
    lines.append(f"{'total':<46}{card.bytes:>14,}")
    lines.append("")
    lines.append(
        f"steps: trainer_state.json {_count(card.global_step)} | scheduler.pt "
        f"{_count(card.scheduler_steps)} | optimizer.pt {_count(card.optimizer_steps)}"
    )
    if card.training_args is not None:
        shown = ", ".join(
            f"{key} {str(card.training_args.get(key)).lower()}" for key in _SHOWN_SETTINGS
        )
        lines += _wrapped(f"training_args.bin: {shown}")
    if card.adapter is not None and card.adapter.problems:
        codes = ", ".join(sorted({problem.code for problem in card.adapter.problems}))
        lines += _wrapped(
            f"adapter card: {len(card.adapter.problems)} problem(s) of the adapter itself "
            f"({codes}: see the JSON card, or evalkit card on an adapter folder); they do not "
            "decide whether the checkpoint resumes"
        )
    for problem in card.problems:
        lines += _wrapped(f"{problem.severity} {problem.code}: {problem.message}")
    where = f" -> {out}" if out else ""
    if card.resumable:
        lines.append(f"checkpoint: resumable{where}")
    else:
        errors = len(card.errors)
        lines.append(
            f"checkpoint: NOT resumable ({errors} error{'s' if errors > 1 else ''}){where}"
        )
    return "\n".join(lines)
