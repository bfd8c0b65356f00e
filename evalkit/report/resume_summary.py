"""What ``evalkit smoke --trainer hf --resume-at K`` prints: the three runs step by step."""

from __future__ import annotations

import textwrap

from evalkit.records._resume import ResumeCheck


def _number(value: float | None, digits: int = 6) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _small(value: float | None) -> str:
    return "-" if value is None else ("0" if value == 0 else f"{value:.3g}")


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}"


def _hash(value: str | None) -> str:
    return "-" if value is None else value[:8]


def _steps(check: ResumeCheck) -> list[str]:
    lines = [
        f"{'step':>5}  {'loss A':>9}  {'loss A′':>9}  {'loss B':>9}  {'|A-B|':>8}  "
        f"{'lr A':>9}  {'lr B':>9}  {'batch A':<8}  batch B"
    ]
    for index in range(check.steps):
        a, b = check.loss_a[index], check.loss_b[index]
        gap = abs(a - b) if a is not None and b is not None else None
        mark = "*" if index + 1 == check.at_step else " "
        lines.append(
            f"{index + 1:>4}{mark}  {_number(check.loss_a[index]):>9}  "
            f"{_number(check.loss_a2[index]):>9}  {_number(b):>9}  {_small(gap):>8}  "
            f"{_rate(check.lr_a[index]):>9}  {_rate(check.lr_b[index]):>9}  "
            f"{_hash(check.batch_sha256_a[index]):<8}  {_hash(check.batch_sha256_b[index])}"
        )
    lines.append(
        f"  (* checkpoint-{check.at_step}: B was killed right after writing it, resumed from it; "
        "batch: sha256 of its rows)"
    )
    return lines


def _verdicts(check: ResumeCheck) -> list[str]:
    if check.max_loss_diff is None:
        losses = "B's losses after the resume: missing"
    else:
        how = "bit for bit" if check.bitwise else f"within tolerance {_small(check.tolerance)}"
        if check.tolerance is not None and check.max_loss_diff > check.tolerance:
            how = f"OUTSIDE the tolerance {_small(check.tolerance)}"
        losses = (
            f"B after step {check.at_step}: max |A - B| {_small(check.max_loss_diff)}, {how} "
            f"(noise floor, A vs A': {_small(check.noise_floor)})"
        )
    weights = (
        f"final weights: max |A - B| {_small(check.adapter_max_diff)} (A vs A': "
        f"{_small(check.adapter_noise_floor)})"
    )
    lr = "equal" if check.lr_equal else "DIFFER"
    rows = "equal" if check.batches_equal else "DIFFER"
    size = check.checkpoint
    saved = "-" if size.save_seconds is None else f"{size.save_seconds:.3g} s"
    state = "resumable" if size.resumable else "NOT resumable"
    lines = []
    for sentence in (
        losses,
        f"learning rates: {lr}; batches (sha256 of each step's rows): {rows}; {weights}",
        f"checkpoint-{check.at_step}: {len(size.files)} files, {size.bytes:,} bytes, saved in "
        f"{saved} (run A): {state}",
    ):
        lines += textwrap.wrap(sentence, width=100, subsequent_indent="    ")
    return lines


def render_resume(check: ResumeCheck) -> list[str]:
    """The resume check's lines (the problems are printed with smoke's)."""
    args = check.trainer_args
    given = f"TrainingArguments from {args.file}" if args.file else "TrainingArguments defaults"
    overridden = f" ({', '.join(args.overridden)} set by smoke)" if args.overridden else ""
    head = (
        f"resume check: transformers' Trainer, {given}{overridden}; each run a fresh process: "
        f"A straight to step {check.steps}, A' again, B killed (SIGKILL) right after "
        f"checkpoint-{check.at_step} and resumed from it; {check.rows} rows, "
        f"{check.steps_per_epoch} steps an epoch"
    )
    lines = textwrap.wrap(head, width=100, subsequent_indent="      ")
    lines += _steps(check)
    lines += _verdicts(check)
    lines.append(f"resume: {'PASS' if check.ok else 'FAIL'}")
    return lines
