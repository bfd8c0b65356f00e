"""``evalkit plan``: the command-line face of :func:`evalkit.plan`."""

from __future__ import annotations

from pathlib import Path

import click

from evalkit.cli._vocabulary import Command, Output, json_option, quiet_option

# Whole numbers the library checks (evalkit.plan.options): one check, one message.
_POSITIVE = click.INT


@click.command("plan", cls=Command, aliases={"--batch": "--batch-size"})
@click.option(
    "--config",
    "config",
    required=True,
    type=click.Path(path_type=Path),
    metavar="CONFIG",
    help="A model's config.json, or the folder holding it (nothing is downloaded).",
)
@click.option(
    "--method",
    type=click.Choice(["full", "lora", "qlora"]),
    default="lora",
    show_default=True,
    help="Train every weight, a LoRA adapter, or an adapter on a 4/8-bit base.",
)
@click.option("--r", type=_POSITIVE, metavar="N", help="LoRA rank.  [default: 8]")
@click.option(
    "--targets",
    metavar="all-linear|q_proj,v_proj,...",
    help="Linears the adapter wraps; all-linear excludes the output head, as PEFT does.  "
    "[default: PEFT's for the family, q_proj,v_proj for Llama-style models]",
)
@click.option(
    "--quant",
    type=click.Choice(["nf4", "nf4-dq", "int8"]),
    help="How qlora stores the base's linears.  [default: nf4-dq, NF4 with double quantization]",
)
@click.option(
    "--kbit-prep/--no-kbit-prep",
    default=None,
    help="qlora: PEFT's prepare_model_for_kbit_training, which upcasts the unquantized "
    "weights to fp32 and turns gradient checkpointing on.  [default: on]",
)
@click.option(
    "--seq-len",
    type=_POSITIVE,
    default=2048,
    show_default=True,
    metavar="N",
    help="Tokens per training sequence (the padded or packed length).",
)
@click.option(
    "--batch-size",
    "batch",
    type=_POSITIVE,
    default=1,
    show_default=True,
    metavar="N",
    help="Sequences per step, per GPU.",
)
@click.option(
    "--grad-checkpointing/--no-grad-checkpointing",
    default=None,
    help="Checkpoint each decoder layer (keep its input, rebuild it in the backward).  "
    "[default: on for qlora with k-bit prep, off otherwise]",
)
@click.option(
    "--optimizer",
    type=click.Choice(
        ["adamw", "adamw-foreach", "adamw-8bit", "paged-adamw", "paged-adamw-8bit", "sgd"]
    ),
    default="adamw",
    show_default=True,
    help="adamw: two states per parameter (fused kernel, the HF Trainer's default); "
    "adamw-foreach: plus a parameter-sized temporary in the step (torch.optim.AdamW's "
    "default); 8-bit: one byte per state; paged: states in unified memory.",
)
@click.option(
    "--precision",
    type=click.Choice(["bf16", "fp16", "fp32", "amp"]),
    default="bf16",
    show_default=True,
    help="bf16/fp16: weights, gradients and states in 16 bits; amp: fp32 weights with "
    "16-bit compute; fp32: everything in fp32.",
)
@click.option(
    "--attention",
    type=click.Choice(["sdpa", "eager"]),
    default="sdpa",
    show_default=True,
    help="sdpa/flash keeps no seq x seq matrix; eager keeps the softmax.",
)
@click.option(
    "--gpus",
    type=_POSITIVE,
    default=1,
    show_default=True,
    metavar="N",
    help="Shard weights, gradients and optimizer states over N GPUs (FSDP/ZeRO-3).",
)
@click.option(
    "--eval-batch",
    type=_POSITIVE,
    default=8,
    show_default=True,
    metavar="N",
    help="Sequences generated at once when evaluating.",
)
@click.option(
    "--eval-tokens",
    type=_POSITIVE,
    metavar="N",
    help="Prompt + new tokens per generated sequence.  [default: --seq-len]",
)
@click.option(
    "--export",
    type=click.Choice(["merge", "adapter"]),
    help="merge: the adapter merged into a 16-bit base (for qlora, the dequantized base); "
    "adapter: save the adapter alone.  [default: merge]",
)
@click.option(
    "--train-tokens",
    type=int,
    metavar="N",
    help="Time: tokens of one epoch (every position the model computes; with padding, the "
    "padded count). Adds lower bounds of hours per GPU class.",
)
@click.option(
    "--tokens-report",
    type=click.Path(path_type=Path, dir_okay=False),
    metavar="FILE",
    help="Time: the tokens of an epoch from `evalkit tokens --json` of the training split "
    "(its total; derived, and said how, when the report lacks it).",
)
@click.option(
    "--tokens-split",
    metavar="NAME",
    help="The training split's name in --tokens-report.  [default: train, or its only split]",
)
@click.option(
    "--epochs",
    type=float,
    default=1.0,
    show_default=True,
    metavar="E",
    help="Time: passes over the training tokens.",
)
@click.option(
    "--eval-examples",
    type=int,
    metavar="M",
    help="Time: sequences one evaluation pass generates for (prompts of --eval-tokens minus "
    "--eval-new-tokens tokens, --eval-batch at once).",
)
@click.option(
    "--eval-new-tokens",
    type=int,
    metavar="T",
    help="Time: new tokens generated per sequence.",
)
@click.option(
    "--gpu",
    "gpu",
    multiple=True,
    metavar="NAME|NAME:MEMORY_GB:TFLOPS[:BANDWIDTH_GBPS]",
    help="Time: a GPU of the shipped table (repeat to choose several), or a new class with "
    "its peak dense bf16 TFLOP/s and memory bandwidth in GB/s (without it, only FLOPs bound "
    "decoding).  [default: the whole table]",
)
@click.option(
    "--measured",
    type=click.Path(path_type=Path, dir_okay=False),
    metavar="SMOKE_JSON",
    help="Campaign: the rates `evalkit smoke --json` measured on its device (same model).",
)
@click.option("--runs", type=int, metavar="K", help="Campaign: variants trained and evaluated.")
@click.option("--window", metavar="7d|36h|90m", help="Campaign: the rented window.")
@click.option(
    "--recovery",
    type=float,
    default=0.0,
    show_default=True,
    metavar="SHARE",
    help="Campaign: share of the window kept for reruns.",
)
@click.option(
    "--price-per-hour",
    type=float,
    metavar="P",
    help="Campaign: rental price per hour (the cost of the hours and of the window).",
)
@json_option("Write the whole plan (every term of every phase) as JSON")
@click.option("--force", is_flag=True, help="Overwrite the --json file if it exists.")
@quiet_option
def plan_command(
    config: Path,
    method: str,
    r: int | None,
    targets: str | None,
    quant: str | None,
    kbit_prep: bool | None,
    seq_len: int,
    batch: int,
    grad_checkpointing: bool | None,
    optimizer: str,
    precision: str,
    attention: str,
    gpus: int,
    eval_batch: int,
    eval_tokens: int | None,
    export: str | None,
    train_tokens: int | None,
    tokens_report: Path | None,
    tokens_split: str | None,
    epochs: float,
    eval_examples: int | None,
    eval_new_tokens: int | None,
    gpu: tuple[str, ...],
    measured: Path | None,
    runs: int | None,
    window: str | None,
    recovery: float,
    price_per_hour: float | None,
    json_path: Path | None,
    force: bool,
    quiet: bool,
) -> None:
    """Plan the GPU memory of a fine-tuning cycle before renting the GPU.

    From a model's config.json alone (no weights, no torch), a lower bound
    of the peak allocated GPU memory of each phase: load (the base as held
    for training), train (one optimizer step), eval (generation with a KV
    cache of --eval-batch x --eval-tokens) and export (a merge into a 16-bit
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

    Exit codes: 0 planned, 2 bad input (a missing key in the config, an
    option that does not apply to the method or the model, a token count
    below 1, an unknown --gpu, a --measured file that is not a smoke report,
    a window shorter than one run).

    \b
    Examples:
      evalkit plan --config examples/plan/llama-2-7b --method qlora \\
        --seq-len 1024 --eval-batch 8 --eval-tokens 1024 --json plan.json
      evalkit plan --config examples/plan/llama-2-7b --train-tokens 20000000 \\
        --epochs 2 --eval-examples 500 --eval-new-tokens 256 --runs 2 --window 7d
    """
    from evalkit.command_files import CommandFiles
    from evalkit.plan.api import plan
    from evalkit.plan.time_api import TimeRequest
    from evalkit.report.plan_table import render_plan

    output = Output(json_path, quiet)
    CommandFiles(force=force).reads(config, tokens_report, measured).writes(
        output.json_file, option="--json"
    ).check()
    time = TimeRequest(
        train_tokens=train_tokens,
        tokens_report=tokens_report,
        tokens_split=tokens_split,
        epochs=epochs,
        eval_examples=eval_examples,
        eval_new_tokens=eval_new_tokens,
        gpu=gpu,
        measured=measured,
        runs=runs,
        window=window,
        recovery=recovery,
        price_per_hour=price_per_hour,
    )
    result = plan(
        config,
        time=time,
        method=method,  # type: ignore[arg-type]
        r=r,
        targets=targets,
        quant=quant,  # type: ignore[arg-type]
        kbit_prep=kbit_prep,
        seq_len=seq_len,
        batch=batch,
        grad_checkpointing=grad_checkpointing,
        optimizer=optimizer,  # type: ignore[arg-type]
        precision=precision,  # type: ignore[arg-type]
        attention=attention,  # type: ignore[arg-type]
        gpus=gpus,
        eval_batch=eval_batch,
        eval_tokens=eval_tokens,
        export=export,  # type: ignore[arg-type]
    )
    output.write_json(result.model_dump_json(indent=2) + "\n")
    output.say(render_plan(result, output.json_name))
    output.wrote([json_path])
