"""What ``evalkit plan`` prints about time: the FLOPs terms, bounds per GPU, the campaign."""

from __future__ import annotations

import textwrap

from evalkit.records._plan import PlanResult
from evalkit.records._plan_time import Campaign, GpuTime, MeasuredRates, TimePlan

_TERM_LABELS = {
    "forward_linears": "forward: linears and head",
    "forward_attention": "forward: attention",
    "adapter_forward": "forward: adapter",
    "backward_weight_gradients": "backward: weight gradients",
    "backward_input_gradients": "backward: input gradients",
    "backward_attention": "backward: attention",
    "adapter_backward": "backward: adapter",
    "recomputation": "recomputation (checkpointing)",
}
WIDTH = 100


def _count(value: float) -> str:
    """FLOPs (or bytes) with an SI prefix."""
    for factor, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return f"{value / factor:,.2f} {prefix}"
    return f"{value:,.0f} "


def _hours(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.2f}" if value >= 0.01 or value == 0 else f"{value:.2g}"


def _inputs(inputs: dict[str, int | float | str]) -> str:
    return ", ".join(f"{key} {_number(value)}" for key, value in inputs.items())


def _number(value: int | float | str) -> str:
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.6g}"
    return value


def _wrap(text: str, indent: int, hang: int = 2) -> list[str]:
    return textwrap.wrap(
        text,
        width=WIDTH,
        initial_indent=" " * indent,
        subsequent_indent=" " * (indent + hang),
        break_on_hyphens=False,
    )


def _work(result: PlanResult, time: TimePlan) -> list[str]:
    options = result.inputs.options
    tokens = time.tokens
    epochs = f"{time.epochs:g} epoch{'s' if time.epochs != 1 else ''}"
    exact = "" if tokens.exact else "at least "
    supervised = ""
    if tokens.supervised_tokens is not None:
        supervised = f" ({tokens.supervised_tokens:,} supervised)"
    lines = [
        f"time: {exact}{tokens.tokens:,} tokens an epoch{supervised} x {epochs}, from "
        f"{tokens.source}",
    ]
    checkpointing = "checkpointing" if options.grad_checkpointing else "no checkpointing"
    lines.append(
        f"FLOPs per training token ({options.method}, {options.seq_len:,}-token sequences, "
        f"{checkpointing}):"
    )
    for term in time.flop_terms:
        label = _TERM_LABELS.get(term.name, term.name)
        lines.append(f"  {label:<32}{_count(term.flops_per_token):>12}FLOP")
        lines += _wrap(f"{term.formula}: {_inputs(term.inputs)}", 6)
    lines.append(f"  {'total':<32}{_count(time.flops_per_train_token):>12}FLOP a token")
    evaluation = time.eval
    if evaluation is not None:
        lines += _wrap(
            f"evaluation pass: {evaluation.examples:,} sequences of a {evaluation.prompt_tokens:,}"
            f"-token prompt + {evaluation.new_tokens:,} new tokens, {evaluation.batch} at once; "
            f"prefill {_count(evaluation.prefill_flops_per_sequence)}FLOP a sequence; a step "
            f"{_count(evaluation.step_flops)}FLOP + {_count(evaluation.attention_flops_per_key)}"
            f"FLOP a key attended, reading {_count(evaluation.weight_bytes_per_step)}B of weights "
            f"+ {_count(evaluation.kv_bytes_per_cached_token)}B a cached token a layer",
            0,
        )
    return lines


def _decode(gpu: GpuTime) -> str:
    if gpu.decode_steps is None:
        return "-"
    if gpu.decode_steps_bandwidth_bound is None:
        return "FLOPs only"
    if not gpu.decode_steps:
        return "-"
    return f"{100 * gpu.decode_steps_bandwidth_bound / gpu.decode_steps:.0f}%"


def _gpu_table(time: TimePlan) -> list[str]:
    epochs = f"train x{time.epochs:g}"
    lines = [
        "lower bounds (hours at the peak: no run is faster)",
        f"  {'GPU':<16}{'GB':>5}{'TFLOP/s':>9}{'GB/s':>7}{'holds':>7}{epochs:>12}"
        f"{'eval pass':>11}{'bytes bound':>13}",
    ]
    for name, gpu in time.gpus.items():
        bandwidth = f"{gpu.bandwidth_gbps:,.0f}" if gpu.bandwidth_gbps else "-"
        lines.append(
            f"  {name:<16}{gpu.memory_gb:>5g}{gpu.peak_tflops:>9g}{bandwidth:>7}"
            f"{'yes' if gpu.holds_plan else 'no':>7}{_hours(gpu.train_hours_lower_bound):>12}"
            f"{_hours(gpu.eval_hours_lower_bound):>11}{_decode(gpu):>13}"
        )
    lines += _wrap(
        "holds: every phase's memory needs fit one card; bytes bound: the share of decoding "
        "steps that reading the weights and the KV cache bounds more than their FLOPs",
        2,
    )
    return lines


def _bound_campaign(time: TimePlan) -> list[str]:
    inputs = time.campaign_inputs
    if inputs is None or time.campaign is not None:
        return []
    usable = inputs.window_hours * (1 - inputs.recovery)
    lines = _wrap(
        f"campaign: {inputs.runs} run{'s' if inputs.runs > 1 else ''} (train + eval) + the "
        f"baseline's evaluation, in a {inputs.window_hours:g} h window less "
        f"{100 * inputs.recovery:g}% recovery = {usable:,.2f} h usable; from the bounds alone:",
        0,
    )
    for name, gpu in time.gpus.items():
        if gpu.campaign_hours_lower_bound is None:
            continue
        verdict = "does not fit" if gpu.ruled_out else "may fit (a bound: measure with smoke)"
        lines.append(
            f"  {name:<16} at least {_hours(gpu.campaign_hours_lower_bound):>10} h  {verdict}"
        )
    return lines


def _measured(rates: MeasuredRates, campaign: Campaign, time: TimePlan) -> list[str]:
    evaluation = time.eval
    assert evaluation is not None
    tokens = time.train_tokens * time.epochs
    run = campaign.train_hours_per_run + campaign.eval_hours_per_run
    # With a floor of the tokens (a report without the total), the hours are a floor too.
    least, most = ("at least ", "at most ") if not time.tokens.exact else ("", "")
    verdict = "FITS" if campaign.fits else "DOES NOT FIT"
    if least and campaign.fits:
        verdict = "FITS at this token floor"
    lines = [
        f"campaign at the rates evalkit smoke measured on {rates.device} ({rates.device_type}), "
        f"{rates.path}:",
        f"  train   {least}{tokens:,.0f} tokens / {rates.train_tokens_per_second:,.1f} tokens/s "
        f"= {least}{_hours(campaign.train_hours_per_run)} h a run",
        f"  eval    {evaluation.examples:,} x {evaluation.new_tokens:,} new tokens / "
        f"{rates.eval_tokens_per_second:,.1f} tokens/s = {_hours(campaign.eval_hours_per_run)} h "
        "a pass",
    ]
    lines += _wrap(
        f"total   {campaign.runs} x {_hours(run)} h + baseline "
        f"{_hours(campaign.baseline_eval_hours)} h + export {_hours(campaign.export_hours)} h + "
        f"reload {_hours(campaign.reload_check_hours)} h = {least}"
        f"{_hours(campaign.total_hours)} h",
        2,
        8,
    )
    lines += _wrap(
        f"window  {campaign.window_hours:g} h - {100 * campaign.recovery:g}% recovery "
        f"({_hours(campaign.recovery_hours)} h) - {_hours(campaign.total_hours)} h = margin "
        f"{most}{_hours(campaign.margin_hours)} h: {verdict}",
        2,
        8,
    )
    if campaign.price_per_hour is not None:
        lines.append(
            f"  cost    {campaign.price_per_hour:,.2f}/h x {_hours(campaign.total_hours)} h = "
            f"{campaign.cost:,.2f} (the whole window: {campaign.window_cost:,.2f})"
        )
    if rates.gpu_class is not None and rates.gpu_class in time.gpus:
        bound = time.gpus[rates.gpu_class].train_hours_lower_bound
        if campaign.train_hours_per_run > 0:
            lines.append(
                f"  {rates.gpu_class}: training at least {_hours(bound)} h a run at the peak; "
                f"measured {_hours(campaign.train_hours_per_run)} h = "
                f"{100 * bound / campaign.train_hours_per_run:.0f}% of the peak"
            )
    return lines


def render_time(result: PlanResult) -> list[str]:
    """The time section of the plan (empty without --train-tokens or --tokens-report)."""
    time = result.time
    if time is None:
        return []
    lines = ["", *_work(result, time), "", *_gpu_table(time)]
    bound = _bound_campaign(time)
    if bound:
        lines += ["", *bound]
    if time.measured is not None and time.campaign is not None:
        lines += ["", *_measured(time.measured, time.campaign, time)]
    if time.cadence is not None:
        from evalkit.report.plan_sheet import render_cadence

        lines += ["", *render_cadence(time.cadence)]
    for note in time.notes:
        lines += _wrap(f"note: {note}", 0)
    return lines
