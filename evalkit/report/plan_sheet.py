"""The order sheet ``evalkit plan`` prints: per GPU class the host RAM, disk, stack, hours, cost.

And the checkpoint cadence of preemptible mode. Rendering only: every
figure comes from the :class:`~evalkit.records._plan.PlanResult`.
"""

from __future__ import annotations

import textwrap

from evalkit.plan.stacks import least_versions
from evalkit.records._plan import PlanResult
from evalkit.records._plan_sheet import Cadence, StackPlan
from evalkit.records._plan_time import TimePlan

WIDTH = 100
_VENDOR = {"nvidia": "CUDA", "amd": "ROCm", None: "stack unknown"}


def _wrap(text: str, indent: int, hang: int = 2) -> list[str]:
    return textwrap.wrap(
        text,
        width=WIDTH,
        initial_indent=" " * indent,
        subsequent_indent=" " * (indent + hang),
        break_on_hyphens=False,
        break_long_words=False,
    )


def _hours(value: float) -> str:
    return f"{value:,.2f}" if value >= 0.01 or value == 0 else f"{value:.2g}"


def _gb(value: float) -> str:
    """GB with two decimals, or two significant figures below 0.01 (a tiny model's MB)."""
    return _hours(value)


def _summary(stack: StackPlan) -> str:
    packages = [
        package if version is None else f"{package}>={version}"
        for package, version in least_versions(stack).items()
    ]
    return f"{_VENDOR[stack.vendor]}: {', '.join(packages)}" if packages else _VENDOR[stack.vendor]


def _time_cells(name: str, time: TimePlan | None) -> tuple[str, float | None]:
    """The hours shown for a class (and the figure a price multiplies)."""
    if time is None or name not in time.gpus:
        return "-", None
    campaign, measured = time.campaign, time.measured
    if campaign is not None and measured is not None and measured.gpu_class == name:
        return _hours(campaign.total_hours), campaign.total_hours
    gpu = time.gpus[name]
    hours = gpu.campaign_hours_lower_bound
    if hours is None:
        hours = gpu.train_hours_lower_bound + (gpu.eval_hours_lower_bound or 0.0)
    return f">= {_hours(hours)}", hours


def _rows(result: PlanResult) -> list[str]:
    assert result.host is not None and result.disk is not None and result.stack is not None
    time = result.time
    price = None
    if time is not None and time.campaign_inputs is not None:
        price = time.campaign_inputs.price_per_hour
    lines = [
        f"  {'GPU':<16}{'GB':>5}{'holds':>6}{'host RAM':>9}{'disk':>8}  {'stack':<34}"
        f"{'hours':>9}{'cost':>9}"
    ]
    for name, stack in result.stack.items():
        hours, figure = _time_cells(name, time)
        cost = "-" if price is None or figure is None else f"{price * figure:,.2f}"
        if cost != "-" and hours.startswith(">="):
            cost = ">= " + cost
        lines.append(
            f"  {name:<16}{stack.memory_gb:>5g}{'yes' if stack.holds_plan else 'no':>6}"
            f"{_gb(result.host.peak_gb):>9}{_gb(result.disk.total_gb):>8}  {_summary(stack):<34}"
            f"{hours:>9}{cost:>9}"
        )
    lines += _wrap(
        "GB: the card's memory; holds: every phase's needs fit it; host RAM and disk: the "
        "same on every card; hours: at least (the campaign's, or one run's, from the bounds), "
        "or as measured on the smoke's card; cost: those hours at --price-per-hour",
        2,
    )
    return lines


def _stacks(result: PlanResult) -> list[str]:
    assert result.stack is not None
    by_vendor: dict[str | None, list[str]] = {}
    for name, stack in result.stack.items():
        by_vendor.setdefault(stack.vendor, []).append(name)
    lines = ["stack, per vendor, for this method (each fact with its source):"]
    for vendor, names in by_vendor.items():
        stack = result.stack[names[0]]
        lines.append(f"  {_VENDOR[vendor]} ({', '.join(names)}):")
        for requirement in stack.requires:
            version = f" >= {requirement.min_version}" if requirement.min_version else ""
            lines += _wrap(f"{requirement.package}{version}: {requirement.why}", 4, 4)
            lines += _wrap(f"source: {requirement.source}", 6, 2)
        for caveat in stack.caveats:
            lines += _wrap(f"check: {caveat.note}", 4, 4)
            if caveat.source:
                lines += _wrap(f"source: {caveat.source}", 6, 2)
    return lines


def render_sheet(result: PlanResult) -> list[str]:
    """The order sheet (empty for a plan made before it existed)."""
    host, disk = result.host, result.disk
    if host is None or disk is None or result.stack is None:
        return []
    options = result.inputs.options
    if options.export == "merge":
        export = "merging on the CPU: the 16-bit model and the adapter"
    elif options.export == "adapter":
        export = "saving the adapter"
    else:
        export = "saving the trained weights, tensor by tensor"
    plural = "s" if disk.checkpoints > 1 else ""
    lines = [
        "order sheet: what to rent with the card (lower bounds, GB = 10^9 bytes)",
        *_wrap(
            f"host RAM  at least {_gb(host.peak_gb)} GB: export {_gb(host.export_gb)} ({export});"
            f" load {_gb(host.load_gb)} (the largest tensor, from memory-mapped safetensors)",
            2,
            10,
        ),
        *_wrap(
            f"disk      at least {_gb(disk.total_gb)} GB: base {_gb(disk.base_gb)} + "
            f"{disk.checkpoints} checkpoint{plural} x {_gb(disk.checkpoint_gb)} (weights and "
            f"optimizer states; --save-total-limit) + export {_gb(disk.export_gb)} + adapter "
            f"{_gb(disk.adapter_gb)}",
            2,
            10,
        ),
        "",
        *_rows(result),
        "",
        *_stacks(result),
    ]
    return lines


def render_cadence(cadence: Cadence) -> list[str]:
    """Preemptible mode: the checkpoint cadence at measured rates."""
    given = "--save-every" if cadence.save_every_given else "suggested"
    best = cadence.save_every_for_max
    keeps = (
        f"--save-every {best:,} is the most that keeps a preemption's loss within "
        f"--max-lost-minutes {cadence.max_lost_minutes:g}"
        if best is not None
        else f"no --save-every keeps a preemption's loss within --max-lost-minutes "
        f"{cadence.max_lost_minutes:g}: one step and a save take longer"
    )
    return [
        f"preemptible: a checkpoint every {cadence.save_every:,} steps ({given})",
        *_wrap(
            f"step    {cadence.step_tokens:,} tokens at the measured rate = "
            f"{cadence.step_seconds:.3g} s",
            2,
            8,
        ),
        *_wrap(
            f"save    {cadence.checkpoint_bytes:,} bytes a checkpoint in "
            f"{cadence.save_seconds:.3g} s ({cadence.save_seconds_from})",
            2,
            8,
        ),
        *_wrap(
            f"lost    at most {cadence.save_every:,} x {cadence.step_seconds:.3g} s + "
            f"{cadence.save_seconds:.3g} s = {cadence.lost_minutes:.3g} min a preemption; "
            f"saving {100 * cadence.saving_share:.3g}% of the time ({cadence.saves_per_run:,} "
            f"checkpoints, {_hours(cadence.save_hours_per_run)} h a run of "
            f"{cadence.steps_per_run:,} steps)",
            2,
            8,
        ),
        *_wrap(keeps, 2, 8),
    ]
