"""The campaign in hours: K runs, the baseline, export and reload, in a rented window.

With ``--measured smoke.json`` the hours come from the rates ``evalkit
smoke`` measured on its device; nothing is scaled to another card (a smoke
run on one card says nothing exact about another, and the report says which
class of the table, if any, it ran on). Without it only the lower bounds
exist, so a campaign is "at least" so many hours and can only be ruled out.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalkit.errors import MalformedFile, ParameterError
from evalkit.plan.bounds import check_price as check_price  # re-exported: the campaign's checks
from evalkit.plan.bounds import check_recovery as check_recovery
from evalkit.plan.bounds import finite_positive
from evalkit.plan.bounds import parse_window as parse_window
from evalkit.plan.gpus import GpuSpec, for_device
from evalkit.records._plan_time import Campaign, MeasuredRates

SIGNIFICANT = 6


def _round(value: float) -> float:
    return float(f"{value:.{SIGNIFICANT}g}")


@dataclass(frozen=True)
class Measured:
    """A smoke report's rates, and what it was measured on."""

    rates: MeasuredRates
    config_sha256: str
    config_path: str
    settings: dict[str, Any]
    saved_bytes: int | None = None  # the adapter (or model) smoke saved in save_seconds
    checkpoint: tuple[int, float | None] | None = None  # resume.checkpoint: bytes, seconds


def _not_smoke(path: Path, why: str) -> MalformedFile:
    return MalformedFile(
        f"{{measured}} {path}: not a report of evalkit smoke ({why}); pass the JSON report "
        "smoke wrote",
        refs=["measured"],
    )


def _impossible(path: Path, why: str) -> ParameterError:
    return ParameterError(
        "measured",
        f"{path}: {why}; no run measures that: run evalkit smoke again (or fix the report)",
    )


def _checked_throughput(path: Path, throughput: Any) -> None:
    """Refuse what no run measures: a rate or a duration that is not finite and above 0."""
    for name in ("train_tokens_per_second", "eval_tokens_per_second", "save_seconds",
                 "reload_seconds"):  # fmt: skip
        value = getattr(throughput, name)
        if value is None:
            continue
        try:
            finite_positive(value, f"throughput.{name}")
        except ValueError as error:
            raise _impossible(path, str(error)) from None


def _resume_checkpoint(path: Path, resume: Any) -> tuple[int, float | None] | None:
    """``resume.checkpoint: {files, bytes, save_seconds}`` (smoke --resume-at), if present.

    ``save_seconds`` is null when the straight run did not save: the bytes
    are still the checkpoint's, and its save time is then scaled from the
    adapter's (see :mod:`evalkit.plan.cadence`).
    """
    if resume is None:
        return None
    checkpoint = resume.get("checkpoint") if isinstance(resume, dict) else None
    if checkpoint is None:
        return None
    if not isinstance(checkpoint, dict):
        raise _not_smoke(path, "resume.checkpoint: expected an object")
    size = checkpoint.get("bytes")
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise _impossible(path, f"resume.checkpoint.bytes is {size!r}: a checkpoint has bytes")
    seconds = checkpoint.get("save_seconds")
    if seconds is None:
        return size, None
    try:
        return size, finite_positive(seconds, "resume.checkpoint.save_seconds")
    except ValueError as error:
        raise _impossible(path, str(error)) from None


def read_measured(path: Path, gpus: tuple[GpuSpec, ...]) -> Measured:
    """The throughput of a smoke report; anything else is one clear error.

    A report whose verdict is ``fail``, or whose rates or durations are not
    finite and above 0 (a negative rate, a zero, ``1e999``), is refused: the
    campaign and the cadence are divisions by these figures.
    """
    from evalkit.io import sha256_file
    from evalkit.records._smoke import read_smoke_document

    data, report = read_smoke_document(path, _not_smoke)
    resume = data.get("resume")
    if report.verdict != "pass":
        problems = "; ".join(report.problems) or "no reason given"
        raise ParameterError(
            "measured",
            f"{path}: verdict is {report.verdict!r} ({problems}): the rates of a failed smoke "
            "run are not a campaign's; fix the run and run evalkit smoke again",
        )
    throughput = report.throughput
    if throughput is None:
        raise ParameterError(
            "measured",
            f"{path}: this smoke report has no throughput (written before smoke "
            "measured it); run evalkit smoke again",
        )
    _checked_throughput(path, throughput)
    if throughput.train_tokens_per_second is None or throughput.eval_tokens_per_second is None:
        missing = "training" if throughput.train_tokens_per_second is None else "evaluation"
        raise ParameterError(
            "measured",
            f"{path}: no {missing} rate was measured (training needs 2 steps or "
            "more: the first step is a warm-up); run evalkit smoke again",
        )
    if throughput.save_seconds is None:
        raise ParameterError(
            "measured",
            f"{path}: the smoke run stopped before saving ({'; '.join(report.problems)}"
            "): its rates are incomplete; run evalkit smoke again",
        )
    saved = report.reload.saved_bytes if report.reload is not None else None
    if saved is not None and saved < 1:
        raise _impossible(path, f"reload.saved_bytes is {saved!r}: a saved adapter has bytes")
    device = throughput.device
    match = for_device(device.name, gpus) if device.type == "cuda" else None
    settings = report.settings
    checkpoint = _resume_checkpoint(path, resume)
    return Measured(
        rates=MeasuredRates(
            path=str(path),
            sha256=sha256_file(path),
            device=device.name,
            device_type=device.type,
            gpu_class=match.name if match else None,
            train_tokens_per_second=throughput.train_tokens_per_second,
            eval_tokens_per_second=throughput.eval_tokens_per_second,
            save_seconds=throughput.save_seconds,
            reload_seconds=throughput.reload_seconds,
            settings_differ=[],
            saved_bytes=saved,
            checkpoint_bytes=checkpoint[0] if checkpoint else None,
            checkpoint_save_seconds=checkpoint[1] if checkpoint else None,
        ),
        config_sha256=report.plan.inputs.config.sha256,
        config_path=report.plan.inputs.config.path,
        settings={
            "method": settings.method,
            "r": settings.r,
            "targets": ",".join(settings.targets),
            "seq_len": settings.seq_len,
            "batch": settings.batch,
            "grad_checkpointing": settings.grad_checkpointing,
        },
        saved_bytes=saved,
        checkpoint=checkpoint,
    )


def measured_campaign(
    rates: MeasuredRates,
    *,
    train_tokens: float,
    eval_tokens: float,
    runs: int,
    window_hours: float,
    recovery: float,
    price: float | None,
) -> Campaign:
    """Hours at the measured rates: runs × (train + eval) + baseline eval + export + reload.

    ``train_tokens`` is every epoch's tokens, ``eval_tokens`` one pass's new
    tokens. A window shorter than one run is refused: nothing could finish.
    """
    train = train_tokens / rates.train_tokens_per_second / 3600
    evaluation = eval_tokens / rates.eval_tokens_per_second / 3600
    if window_hours < train + evaluation:
        raise ParameterError(
            "window",
            f"{window_hours:g} h is shorter than one run ({train + evaluation:.3g} h "
            f"of training and evaluation at the rates of {rates.path}); rent a longer window",
        )
    export = rates.save_seconds / 3600
    reload = (rates.reload_seconds or 0.0) / 3600
    total = runs * (train + evaluation) + evaluation + export + reload
    kept = window_hours * recovery
    margin = window_hours - kept - total
    return Campaign(
        runs=runs,
        train_hours_per_run=_round(train),
        eval_hours_per_run=_round(evaluation),
        baseline_eval_hours=_round(evaluation),
        export_hours=_round(export),
        reload_check_hours=_round(reload),
        total_hours=_round(total),
        window_hours=window_hours,
        recovery=recovery,
        recovery_hours=_round(kept),
        margin_hours=_round(margin),
        fits=margin >= 0,
        price_per_hour=price,
        cost=None if price is None else round(price * total, 2),
        window_cost=None if price is None else round(price * window_hours, 2),
    )


def bound_campaign(run_hours: float, eval_hours: float, runs: int) -> float:
    """The least hours of a campaign: runs × (train + eval) + the baseline's evaluation."""
    return runs * run_hours + eval_hours
