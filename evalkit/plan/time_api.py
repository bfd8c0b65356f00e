"""The time plan: lower bounds per GPU class, and the campaign at measured rates.

read (the work: tokens, evaluation; the GPU table; a smoke report) ->
validate -> compute (FLOPs, bounds, campaign) -> a
:class:`~evalkit.records._plan_time.TimePlan` in ``PlanResult.time``. Arithmetic
only: no torch, so it runs before anything is rented.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

from evalkit.errors import ParameterError
from evalkit.plan.cadence import plan_cadence
from evalkit.plan.campaign import (
    Measured,
    bound_campaign,
    check_price,
    check_recovery,
    measured_campaign,
    parse_window,
    read_measured,
)
from evalkit.plan.config import ModelShape
from evalkit.plan.flops import train_flops
from evalkit.plan.gpus import GpuSpec, choose
from evalkit.plan.options import Options, TimeRequest
from evalkit.plan.timing import eval_bound, generation_costs, train_hours
from evalkit.plan.work import EvalWork, TrainTokens, eval_work, from_count, from_report
from evalkit.records._plan_time import (
    CampaignInputs,
    EvalInput,
    FlopTerm,
    GpuTime,
    MeasuredRates,
    TimePlan,
    TokensInput,
)

SIGNIFICANT = 6


def _round(value: float) -> float:
    """Six significant digits: hours of a tiny model and of a week both keep their figures."""
    return float(f"{value:.{SIGNIFICANT}g}")


def _tokens(request: TimeRequest) -> TrainTokens:
    if (request.train_tokens is None) == (request.tokens_report is None):
        raise ParameterError(
            "train_tokens",
            "N or {tokens_report} FILE gives the tokens of an epoch, for the time: "
            "give one of them",
            refs=["tokens_report"],
        )
    if request.tokens_split is not None and request.tokens_report is None:
        raise ParameterError("tokens_split", "applies to {tokens_report}", refs=["tokens_report"])
    if request.train_tokens is not None:
        return from_count(request.train_tokens)
    return from_report(Path(request.tokens_report or ""), request.tokens_split)


def _epochs(epochs: float) -> float:
    if isinstance(epochs, bool) or not (
        isinstance(epochs, float | int) and math.isfinite(epochs) and epochs > 0
    ):
        raise ParameterError("epochs", f"must be a positive number, got {epochs!r}")
    return float(epochs)


def wants_time(request: TimeRequest | None) -> bool:
    """Whether any time option was given (then the tokens are required).

    ``--gpu`` alone is not one: a class it adds joins the memory recommendation
    and the order sheet without hours.
    """
    if request is None:
        return False
    return replace(request, gpu=()) != TimeRequest()


def _check_preemptible(request: TimeRequest) -> None:
    """--save-every and --max-lost-minutes need --preemptible, which needs --measured."""
    if request.preemptible and not request.measured:
        raise ParameterError(
            "preemptible",
            "needs {measured} smoke.json: the cadence comes from the save time smoke measured",
            refs=["measured"],
        )
    if request.preemptible:
        return
    for parameter, given in (
        ("save_every", request.save_every is not None),
        ("max_lost_minutes", request.max_lost_minutes != TimeRequest().max_lost_minutes),
    ):
        if given:
            raise ParameterError(
                parameter, "applies to {preemptible} (with {measured})",
                refs=["preemptible", "measured"],
            )  # fmt: skip


def _differences(measured: Measured, options: Options) -> list[str]:
    planned = {
        "method": options.method,
        "r": options.r,
        "targets": ",".join(options.targets),
        "seq_len": options.seq_len,
        "batch": options.batch_size,  # smoke.json's key
        "grad_checkpointing": options.grad_checkpointing,
    }
    return [
        f"{key} {measured.settings[key]} (plan: {value})"
        for key, value in planned.items()
        if measured.settings[key] != value
    ]


def _check_same_model(measured: Measured, config_sha256: str, config_path: str) -> None:
    if measured.config_sha256 != config_sha256:
        raise ParameterError(
            "measured",
            f"{measured.rates.path}: measured {measured.config_path}, a different "
            f"model config than {config_path} (sha256 differs): its rates are another model's; "
            "run evalkit smoke on this model",
        )


def _gpu_time(
    gpu: GpuSpec,
    *,
    needs_gb: float,
    train: float,
    shape: ModelShape,
    options: Options,
    work: EvalWork | None,
    inputs: CampaignInputs | None,
) -> GpuTime:
    evaluation = eval_bound(shape, options, work, gpu) if work else None
    eval_hours = evaluation.hours if evaluation else None
    campaign = ruled_out = None
    if inputs is not None and eval_hours is not None:
        campaign = bound_campaign(train + eval_hours, eval_hours, inputs.runs)
        ruled_out = campaign > inputs.window_hours * (1 - inputs.recovery)
    return GpuTime(
        memory_gb=gpu.memory_gb,
        peak_tflops=gpu.peak_tflops,
        bandwidth_gbps=gpu.bandwidth_gbps,
        source=gpu.source,
        holds_plan=needs_gb <= gpu.memory_gb,
        train_hours_lower_bound=_round(train),
        eval_hours_lower_bound=None if eval_hours is None else _round(eval_hours),
        decode_steps=evaluation.decode_steps if evaluation else None,
        decode_steps_bandwidth_bound=(
            evaluation.steps_bound_by_bandwidth
            if evaluation and gpu.bandwidth_gbps is not None
            else None
        ),
        campaign_hours_lower_bound=None if campaign is None else _round(campaign),
        ruled_out=ruled_out,
    )


def _campaign_inputs(request: TimeRequest, work: EvalWork | None) -> CampaignInputs | None:
    asked = request.runs is not None or request.window is not None or request.measured
    if not asked:
        for value, parameter in ((request.recovery, "recovery"),
                                 (request.price_per_hour, "price_per_hour")):  # fmt: skip
            if value:
                raise ParameterError(
                    parameter,
                    "applies to a campaign: give {runs} K {window} 7d",
                    refs=["runs", "window"],
                )
        return None
    if request.runs is None or request.window is None:
        raise ParameterError(
            "runs" if request.runs is None else "window",
            "is needed: a campaign needs both {runs} K and {window} (e.g. 7d)",
            refs=["runs", "window"],
        )
    if work is None:
        raise ParameterError(
            "eval_examples",
            "M {eval_new_tokens} T is needed: a campaign evaluates each run and the baseline",
            refs=["eval_new_tokens"],
        )
    return CampaignInputs(
        runs=request.runs,
        window_hours=parse_window(request.window),
        recovery=check_recovery(request.recovery),
        price_per_hour=check_price(request.price_per_hour),
    )


def _notes(
    tokens: TrainTokens, gpus: dict[str, GpuTime], measured: MeasuredRates | None
) -> list[str]:
    notes = []
    if not tokens.exact:
        notes.append(f"train tokens: {tokens.how}")
    for name, gpu in gpus.items():
        if gpu.bandwidth_gbps is None and gpu.eval_hours_lower_bound is not None:
            notes.append(f"{name}: no bandwidth given, so only FLOPs bound its decoding")
    if measured is not None:
        if measured.gpu_class is None:
            notes.append(
                f"measured on {measured.device} ({measured.device_type}), which is none of the "
                "table's GPU classes: the campaign's hours are that device's; nothing is scaled "
                "to another card"
            )
        else:
            notes.append(
                f"measured on {measured.device} = {measured.gpu_class} of the table: its lower "
                "bounds are beside the measured hours; nothing is scaled to other cards"
            )
        if measured.settings_differ:
            notes.append(
                "the smoke ran with " + "; ".join(measured.settings_differ) + ": its rates are "
                "of those settings"
            )
    return notes


def plan_time(
    shape: ModelShape,
    options: Options,
    request: TimeRequest,
    *,
    needs_gb: float,
    config_sha256: str,
    checkpoint_bytes: int = 0,
) -> TimePlan:
    """The time plan of ``request`` for a model and its resolved options.

    ``needs_gb`` is the largest phase's memory with headroom (a card with
    less cannot run the cycle); ``config_sha256`` the planned config's, that
    a smoke report must have measured; ``checkpoint_bytes`` the plan's bound
    of one checkpoint (the cadence's, when the smoke measured none).
    """
    _check_preemptible(request)
    tokens = _tokens(request)
    epochs = _epochs(request.epochs)
    work = eval_work(
        request.eval_examples, request.eval_new_tokens, options.eval_tokens, options.eval_batch_size
    )
    gpus = choose(tuple(request.gpu))
    inputs = _campaign_inputs(request, work)
    counted = train_flops(shape, options)
    per_token = counted.per_token
    epoch_tokens = tokens.tokens * epochs
    times = {
        gpu.name: _gpu_time(
            gpu,
            needs_gb=needs_gb,
            train=train_hours(epoch_tokens, per_token, gpu, options.gpus),
            shape=shape,
            options=options,
            work=work,
            inputs=inputs,
        )
        for gpu in gpus
    }
    if inputs is not None and not request.measured:
        fastest = min(
            (time.train_hours_lower_bound + (time.eval_hours_lower_bound or 0.0))
            for time in times.values()
        )
        if inputs.window_hours < fastest:
            raise ParameterError(
                "window",
                f"{inputs.window_hours:g} h is shorter than one run on any card of the "
                f"table (at least {fastest:.3g} h of training and evaluation); "
                "rent a longer window",
            )
    measured_rates = campaign = cadence = None
    if request.measured:
        measured = read_measured(Path(request.measured), gpus)
        _check_same_model(measured, config_sha256, shape.path)
        measured_rates = measured.rates.model_copy(
            update={"settings_differ": _differences(measured, options)}
        )
        assert inputs is not None and work is not None  # _campaign_inputs required them
        campaign = measured_campaign(
            measured_rates,
            train_tokens=epoch_tokens,
            eval_tokens=work.examples * work.new_tokens,
            runs=inputs.runs,
            window_hours=inputs.window_hours,
            recovery=inputs.recovery,
            price=inputs.price_per_hour,
        )
        if request.preemptible:
            cadence = plan_cadence(
                measured_rates,
                step_tokens=options.batch_size * options.seq_len,
                run_tokens=epoch_tokens,
                plan_checkpoint_bytes=checkpoint_bytes,
                save_every=request.save_every,
                max_lost_minutes=request.max_lost_minutes,
            )
    return TimePlan(
        train_tokens=tokens.tokens,
        epochs=epochs,
        flops_per_train_token=round(per_token, 3),
        tokens=TokensInput(
            tokens=tokens.tokens,
            supervised_tokens=tokens.supervised,
            exact=tokens.exact,
            source=tokens.source,
            how=tokens.how,
        ),
        flop_terms=[
            FlopTerm(
                name=term.name,
                flops_per_token=round(term.flops / counted.length, 3),
                formula=term.formula,
                inputs=term.inputs,
            )
            for term in counted.terms
        ],
        eval=_eval_input(shape, options, work),
        gpus=times,
        campaign_inputs=inputs,
        measured=measured_rates,
        campaign=campaign,
        notes=_notes(tokens, times, measured_rates),
        cadence=cadence,
    )


def _eval_input(shape: ModelShape, options: Options, work: EvalWork | None) -> EvalInput | None:
    if work is None:
        return None
    costs = generation_costs(shape, options, work.prompt_tokens)
    return EvalInput(
        examples=work.examples,
        prompt_tokens=work.prompt_tokens,
        new_tokens=work.new_tokens,
        batch=work.batch,
        prefill_flops_per_sequence=costs.prefill_flops,
        step_flops=costs.step_flops,
        attention_flops_per_key=costs.attention_per_key,
        weight_bytes_per_step=costs.weight_bytes,
        kv_bytes_per_cached_token=costs.kv_bytes_per_token,
    )
