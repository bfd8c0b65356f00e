"""``evalkit smoke``: the command-line face of :func:`evalkit.model.smoke.smoke`."""

from __future__ import annotations

from pathlib import Path

import click

from evalkit.cli._model_options import device_options
from evalkit.cli._table_options import hf_split_option, one_table
from evalkit.cli._vocabulary import Command, Output, json_option, quiet_option, seed_option


@click.command("smoke", cls=Command, aliases={"--batch": "--batch-size"})
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
@hf_split_option
@click.option(
    "--text",
    "text_columns",
    required=True,
    multiple=True,
    metavar="COL",
    help="Conversation column; twice for TRL's prompt/completion pair.",
)
@click.option(
    "--method",
    type=click.Choice(["lora", "full"]),
    default="lora",
    show_default=True,
    help="lora: a new PEFT adapter trains; full: every weight does.",
)
@click.option("--r", type=int, help="LoRA rank (default 8, PEFT's).")
@click.option(
    "--targets",
    metavar="all-linear|NAMES",
    help="Linears the adapter wraps (default: PEFT's for the family, e.g. q_proj,v_proj).",
)
@click.option(
    "--steps",
    default=3,
    show_default=True,
    type=int,
    help="Optimizer steps; the first is a warm-up the training throughput leaves out.",
)
@click.option(
    "--seq-len",
    default=2048,
    show_default=True,
    type=int,
    help="Tokens per sequence: each is cut (start kept) and padded to it, as planned.",
)
@click.option(
    "--batch-size", "batch", default=1, show_default=True, type=int, help="Sequences per step."
)
@click.option("--lr", default=1e-4, show_default=True, type=float, help="AdamW learning rate.")
@click.option(
    "--grad-checkpointing", is_flag=True, help="Checkpoint every decoder layer (as planned)."
)
@click.option(
    "--loss",
    type=click.Choice(["assistant", "completion", "all"]),
    help="Supervised tokens, as evalkit tokens --loss (default: the assistant turns).",
)
@click.option(
    "--max-new-tokens",
    default=16,
    show_default=True,
    type=int,
    help="New tokens of the short generation (eval phase).",
)
@click.option(
    "--tokenizer",
    type=click.Path(path_type=Path),
    help="Tokenizer folder (default: --base).",
)
@device_options
@seed_option("Seeds the rows' order and the adapter's initialisation.")
@json_option("Write the whole report (plan included) as JSON")
@click.option("--force", is_flag=True, help="Overwrite the --json file if it exists.")
@quiet_option
def smoke_command(
    base: Path,
    data: Path,
    hf_split: str | None,
    text_columns: tuple[str, ...],
    method: str,
    r: int | None,
    targets: str | None,
    steps: int,
    seq_len: int,
    batch: int,
    lr: float,
    grad_checkpointing: bool,
    loss: str | None,
    max_new_tokens: int,
    tokenizer: Path | None,
    device: str,
    dtype: str,
    seed: int,
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

    Needs the [hf] extra (torch, transformers, peft).

    Exit codes: 0 every loss finite and the reload reproduces the trained
    logits; 1 a loss is not finite, the reload differs, or a phase ran out
    of GPU memory; 2 bad input (a folder without a model, an unknown
    column, data without conversations, --steps or --seq-len below 1,
    --device cuda without a GPU, an existing --json without --force).
    """
    from evalkit.cli import debug_enabled
    from evalkit.command_files import CommandFiles
    from evalkit.model.smoke import smoke
    from evalkit.report.smoke_summary import render_smoke_summary

    output = Output(json_path, quiet)
    files = CommandFiles(force=force).reads(base, data, tokenizer)
    files.writes(output.json_file, option="--json").check()
    data = one_table(data, hf_split)
    report = smoke(
        base,
        data,
        text=text_columns,
        method=method,
        r=r,
        targets=targets,
        steps=steps,
        seq_len=seq_len,
        batch=batch,
        lr=lr,
        max_new_tokens=max_new_tokens,
        grad_checkpointing=grad_checkpointing,
        device=device,
        dtype=dtype,
        seed=seed,
        tokenizer=tokenizer,
        loss=loss,  # type: ignore[arg-type]
        progress=not quiet,
        debug=debug_enabled(),
    )
    output.write_json(report.model_dump_json(indent=2) + "\n")
    output.say(render_smoke_summary(report))
    output.wrote([json_path])
    click.get_current_context().exit(0 if report.verdict == "pass" else 1)
