"""What ``evalkit smoke`` prints: the steps, each phase's peak beside the plan, the reload."""

from __future__ import annotations

import textwrap

from evalkit.records._smoke import PhasePeak, SmokeReport

_LOSS = {"assistant": "assistant turns", "completion": "the completion", "all": "every token"}


def _gb(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.2f}" if value >= 0.1 else f"{value:.4f}"


def _headline(report: SmokeReport) -> list[str]:
    settings = report.settings
    plan_count = report.plan.trainable_params
    same = "= the plan's" if plan_count == report.trainable_params else f"plan: {plan_count:,}"
    if settings.method == "lora":
        method = f"lora, r {settings.r} on {','.join(settings.targets)}"
    else:
        method = "full fine-tuning"
    device = report.device
    checkpointing = ", grad checkpointing" if settings.grad_checkpointing else ""
    return [
        f"smoke {report.base}: {method}: {report.trainable_params:,} trainable ({same}) | "
        f"{settings.dtype} on {device.type} ({device.name}){checkpointing}",
        f"      {report.data.path}: {report.steps} steps x {settings.batch} rows x "
        f"{settings.seq_len:,} tokens (cut and padded), loss on {_LOSS[report.data.loss]}, "
        f"AdamW lr {settings.lr:g}, seed {settings.seed}",
    ]


def _steps(report: SmokeReport) -> list[str]:
    lines = [f"{'step':>4}  {'rows (0-based)':<24}{'targets':>8}  {'loss':>9}"]
    for number, rows in enumerate(report.batches, start=1):
        ran = number <= len(report.losses)
        loss = report.losses[number - 1] if ran else None
        shown = "-" if not ran else ("not finite" if loss is None else f"{loss:.4f}")
        names = ", ".join(str(row) for row in rows)
        if len(names) > 22:
            names = names[:21] + "…"
        lines.append(f"{number:>4}  {names:<24}{report.targets[number - 1]:>8}  {shown:>9}")
    if report.data.skipped_rows:
        lines.append(
            f"  ({report.data.skipped_rows} rows passed over: no supervised token within "
            f"{report.settings.seq_len:,} tokens)"
        )
    return lines


def _what_ran(report: SmokeReport, name: str) -> str:
    settings = report.settings
    if name == "load":
        return "the base" + (" + a new adapter" if settings.method == "lora" else "")
    if name == "train":
        return f"{report.steps} AdamW steps"
    if name == "eval":
        run = report.generation
        if run is None:
            return "greedy generation"
        tokens = f"{run.prompt_tokens} + {run.new_tokens} tokens"
        return f"greedy generation: {run.prompts} prompts, {tokens}"
    artifact = "adapter" if settings.method == "lora" else "model"
    return f"save the {artifact}, reload it in a fresh process"


def _phase_line(report: SmokeReport, name: str, phase: PhasePeak) -> str:
    comparable = report.memory.comparable
    unit = "" if comparable else " RSS"
    measured = _gb(phase.measured_gb) + (unit if phase.measured_gb is not None else "")
    ratio = f"{phase.ratio:.3f}" if phase.ratio is not None else "-"
    return f"{name:<8}{measured:>14}{_gb(phase.bound_gb):>12}{ratio:>8}  {_what_ran(report, name)}"


def _phases(report: SmokeReport) -> list[str]:
    lines = [f"{'phase':<8}{'measured GB':>14}{'bound GB':>12}{'ratio':>8}  what ran"]
    lines += [_phase_line(report, name, phase) for name, phase in report.phases.items()]
    lines += textwrap.wrap(
        report.memory.note, width=100, initial_indent="  measured: ", subsequent_indent=" " * 12
    )
    if report.memory.comparable:
        lines.append("  ratio = bound / measured: at most 1 when the bound holds")
        over = [name for name, phase in report.phases.items() if (phase.ratio or 0) > 1]
        if over:
            lines.append(
                f"  note: the bound exceeds the measured peak of {', '.join(over)}: the plan "
                "overstates this stack (please report it with this output)"
            )
    return lines


def _reload(report: SmokeReport) -> list[str]:
    check = report.reload
    if check is None:
        return ["reload: did not run"]
    status = "PASS" if check.ok else "FAIL"
    difference = "none" if check.max_logit_diff is None else f"{check.max_logit_diff:.3g}"
    effect = "-" if check.training_effect is None else f"{check.training_effect:.3g}"
    sentence = (
        f"reload: {status}: the saved {check.artifact} ({check.saved_bytes:,} bytes), loaded in a "
        f"fresh process, against the trained model at {check.positions} positions: max |diff| "
        f"{difference} (tolerance {check.tolerance:.2g}; training moved them by {effect})"
    )
    return textwrap.wrap(sentence, width=100, subsequent_indent=" " * 8)


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g} s"


def _throughput(report: SmokeReport) -> list[str]:
    rates = report.throughput
    if rates is None:
        return []
    settings = report.settings
    timed = report.steps - 1
    if rates.train_tokens_per_second is None:
        train = "train - (one step: only the warm-up ran)"
    else:
        train = (
            f"train {rates.train_tokens_per_second:,.1f} tokens/s (steps 2-{report.steps}: "
            f"{timed} x {settings.batch} x {settings.seq_len:,} positions in "
            f"{rates.train_seconds:.3g} s)"
        )
    if rates.eval_tokens_per_second is None:
        evaluation = "eval -"
    else:
        evaluation = (
            f"eval {rates.eval_tokens_per_second:,.1f} new tokens/s ({rates.eval_new_tokens} in "
            f"{rates.eval_seconds:.3g} s)"
        )
    sentence = (
        f"throughput on {rates.device.type} ({rates.device.name}): {train}; {evaluation}; "
        f"save {_seconds(rates.save_seconds)}; reload check {_seconds(rates.reload_seconds)} "
        "(fresh process)"
    )
    return textwrap.wrap(sentence, width=100, subsequent_indent=" " * 12)


def render_smoke_summary(report: SmokeReport) -> str:
    """The steps, the phases measured beside the plan, the reload, the verdict."""
    lines = [*_headline(report), "", *_steps(report), "", *_phases(report), "", *_reload(report)]
    lines += _throughput(report)
    if report.resume is not None:
        from evalkit.report.resume_summary import render_resume

        lines += ["", *render_resume(report.resume)]
    lines += [f"problem: {problem}" for problem in report.problems]
    lines.append(f"smoke: {report.verdict.upper()}")
    return "\n".join(lines)
