"""``evalkit smoke``: the command-line face of :func:`evalkit.model.smoke.smoke`."""

from __future__ import annotations

from pathlib import Path

import click

from evalkit.cli._params import params_options
from evalkit.cli._vocabulary import Command, Output, json_option, quiet_option
from evalkit.model.options import SmokeParams


@click.command("smoke", cls=Command)
@click.option(
    "--base",
    required=True,
    type=click.Path(path_type=Path),
    help="Base model folder (config.json + weights) to train.",
)
@click.option(
    "--data",
    required=True,
    type=click.Path(path_type=Path),
    help="A split of conversations (JSONL, CSV, Parquet, .json or a Hugging Face "
    "save_to_disk folder), e.g. the train split.",
)
@params_options(SmokeParams)
@json_option("Write the whole report (plan included) as JSON")
@click.option("--force", is_flag=True, help="Overwrite the --json file if it exists.")
@quiet_option
def smoke_command(
    base: Path,
    data: Path,
    params: SmokeParams,
    json_path: Path | None,
    force: bool,
    quiet: bool,
) -> None:
    """Run a few real training steps and measure each phase beside `evalkit plan`.

    Before a long run: --steps optimizer steps (AdamW) of --method on real
    batches of --data, each sequence rendered by the chat template, cut and
    padded to --seq-len, the loss on the tokens `evalkit tokens` reports as
    supervised. Then a short greedy generation, the adapter (or the whole
    model, for full) saved, reloaded in a FRESH process and its logits
    compared with the trained model's on the first batch.

    Each phase (load, train, eval, export) is measured beside the plan's
    lower bound for exactly these settings: on a GPU the peak of
    torch.cuda.max_memory_allocated (reset between phases), comparable
    with the bound; on the CPU the process's peak resident memory (RSS),
    which is NOT comparable (it counts the interpreter and libraries).
    The throughput of each phase on this device (training tokens/s after the
    first step, the greedy pass's new tokens/s, the save and the reload) is
    recorded for `evalkit plan --measured`. Nothing is downloaded; the saved
    artifact is a temporary folder.

    \b
    Example:
      evalkit smoke --base examples/model/base --data train.jsonl --text messages \\
        --seq-len 512 --batch-size 2 --json smoke.json

    With --trainer hf --resume-at K, the resume check follows: transformers'
    Trainer with PEFT on the same rows, with the TrainingArguments fields of
    --trainer-args FILE, each run in a fresh process: A straight to --steps,
    A' again (the noise floor), B killed with SIGKILL right after checkpoint
    K is written, then resumed from it (resume_from_checkpoint) in a new
    process. Per step: the losses, learning rates and rows of A and B; the
    final weights compared; the checkpoint's files, bytes and save seconds
    (for `evalkit plan`); the checkpoint checked as `evalkit card` checks one.

    \b
      evalkit smoke --base examples/model/base --data train.jsonl --text messages \\
        --seq-len 512 --steps 6 --trainer hf --resume-at 4 --trainer-args args.yaml

    Needs the [hf] extra (torch, transformers, peft).

    Exit codes: 0 every loss finite and the reload reproduces the trained
    logits (and B resumes A's run); 1 a loss is not finite, the reload
    differs, a phase ran out of GPU memory, or B leaves A's noise floor, a
    learning rate or a batch differs, or the checkpoint lacks a state file a
    resume needs; 2 bad input (a folder without a model, an unknown column,
    data without conversations, --steps or --seq-len below 1, --device cuda
    without a GPU, an existing --json without --force, an unknown
    TrainingArguments field, a value TrainingArguments refuses, --resume-at
    not below --steps).
    """
    from evalkit.cli import debug_enabled
    from evalkit.model.smoke import smoke
    from evalkit.report.smoke_summary import render_smoke_summary

    output = Output(json_path, quiet)
    report = smoke(
        base,
        data,
        params,
        progress=not quiet,
        debug=debug_enabled(),
        json=output.json_file,
        force=force,
    )
    output.print_json(report.model_dump_json(indent=2) + "\n")
    output.say(render_smoke_summary(report))
    output.wrote([json_path])
    click.get_current_context().exit(0 if report.verdict == "pass" else 1)
