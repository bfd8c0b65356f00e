"""``evalkit plan``: the command-line face of :func:`evalkit.plan`."""

from __future__ import annotations

from pathlib import Path

import click

from evalkit.cli._params import params_options
from evalkit.cli._vocabulary import Command, Output, json_option, quiet_option
from evalkit.plan.options import PlanParams, TimeRequest


@click.command("plan", cls=Command)
@click.option(
    "--config",
    "config",
    required=True,
    type=click.Path(path_type=Path),
    metavar="CONFIG",
    help="A model's config.json, or the folder holding it (nothing is downloaded).",
)
@params_options(PlanParams)
@params_options(TimeRequest, into="time")
@json_option("Write the whole plan (every term of every phase) as JSON")
@click.option("--force", is_flag=True, help="Overwrite the --json file if it exists.")
@quiet_option
def plan_command(
    config: Path,
    params: PlanParams,
    time: TimeRequest,
    json_path: Path | None,
    force: bool,
    quiet: bool,
) -> None:
    """Plan the GPU memory of a fine-tuning cycle before renting the GPU.

    From a model's config.json alone (no weights, no torch), a lower bound
    of the peak allocated GPU memory of each phase: load (the base as held
    for training), train (one optimizer step), eval (generation with a KV
    cache of --eval-batch-size x --eval-tokens) and export (a merge into a 16-bit
    base, or the adapter alone). A card with less memory than a phase's bound
    cannot run that phase. The train phase is the largest of three moments
    of a step (loss backward, block backward, optimizer step): terms that
    are never live together are not summed. The recommendation is the
    smallest GPU class (24, 48, 80, 141, 192 GB) that holds the largest
    phase with headroom (CUDA context and allocator slack, listed apart), or
    the number of 80 GB GPUs sharding needs. GB = 10^9 bytes.

    Time, given the work (--train-tokens or --tokens-report, --epochs,
    --eval-examples and --eval-new-tokens): the FLOPs of a training token
    term by term, and per GPU class (memory, peak dense bf16 TFLOP/s and
    bandwidth, each from its datasheet) the LOWER BOUND of the hours of the
    epochs and of an evaluation pass: no run on that card is faster. With
    --runs K --window 7d, a campaign of K runs and the baseline's
    evaluation: at least so many hours on each card; with --measured
    smoke.json, the hours at the rates `evalkit smoke` measured on its
    device (nothing scaled to another card), the margin left in the window
    after --recovery, and with --price-per-hour the cost.

    The order sheet, for what to rent beside the card: host RAM (loading,
    a merge on the CPU) and disk (the base, --save-total-limit checkpoints,
    the export, the adapter) as lower bounds, and per GPU class the software
    stack its vendor needs for the method (CUDA or ROCm: packages, least
    versions, why, each with its source). One GPU table serves the memory
    recommendation, the hours and the stack: --gpu NAME:GB:TFLOPS[:GBPS]
    [:nvidia|amd] adds a class to all three. With --preemptible (and
    --measured), the checkpoint cadence: the work a preemption loses every
    --save-every steps, the share of time spent saving, and the --save-every
    that keeps the loss within --max-lost-minutes.

    Exit codes: 0 planned, 2 bad input (a missing key in the config, an
    option that does not apply to the method or the model, a count or
    figure out of range, an unknown --gpu, a --measured file that is not a
    smoke report, failed, or holds impossible rates, a window shorter than
    one run).

    \b
    Examples:
      evalkit plan --config examples/plan/llama-2-7b --method qlora \\
        --seq-len 1024 --eval-batch-size 8 --eval-tokens 1024 --json plan.json
      evalkit plan --config examples/plan/llama-2-7b --train-tokens 20000000 \\
        --epochs 2 --eval-examples 500 --eval-new-tokens 256 --runs 2 --window 7d
    """
    from evalkit.plan.api import plan
    from evalkit.report.plan_table import render_plan

    output = Output(json_path, quiet)
    result = plan(config, params, time=time, json=output.json_file, force=force)
    output.print_json(result.model_dump_json(indent=2) + "\n")
    output.say(render_plan(result, output.json_name))
    output.wrote([json_path])
