"""``evalkit card``: the command-line face of :func:`evalkit.adapter_card`."""

from __future__ import annotations

from pathlib import Path

import click

from evalkit.cli._params import params_options
from evalkit.cli._vocabulary import Command, Output, json_option, quiet_option
from evalkit.provenance.card_options import CardParams


@click.command("card", cls=Command, aliases={"--out": "--json"})
@click.argument("adapter_dir", type=click.Path(path_type=Path))
@params_options(CardParams)
@json_option("Write the card (card.json)")
@click.option("--force", is_flag=True, help="Overwrite the --json file if it exists.")
@quiet_option
def card_command(
    adapter_dir: Path,
    params: CardParams,
    json_path: Path | None,
    force: bool,
    quiet: bool,
) -> None:
    """Describe a PEFT adapter folder without loading it, and check it.

    Reads adapter_config.json (any peft version) and the weights'
    safetensors header and bytes, never torch: the base and whether it is
    pinned to a commit, r, alpha and the scaling rule (alpha/r, or
    alpha/sqrt(r) under rsLoRA), every adapted module with d_in, d_out, r
    (rank_pattern/alpha_pattern applied) and its parameters, the trainable
    count peft reports, a canonical sha256 of the tensors, the hashes of
    the folder's files, the tokenizer saved with it, and the training
    settings.

    \b
    Problems (error unless marked):
      unpinned_base       no revision, or not a 40-hex commit (pass --base-revision;
                          a base named by a local path: pin its weights' sha256)
      empty_adapter       no LoRA tensor, or every lora_B all zeros (saved untrained)
      rank_mismatch       tensor shapes disagree with r / rank_pattern
      unknown_config_key  (warning) a key the card cannot account for is set
      shape_mismatch      with --base: d_in/d_out differ from the base's weights
      coverage            with --base: target_modules on the base vs adapted modules
      vocab_mismatch      saved embedding rows vs the tokenizer's length

    \b
    Example:
      evalkit card runs/r16/adapter --base-revision 0123…cdef --json runs/r16/card.json
      evalkit score … --card runs/r16/card.json    # the card travels with the result

    A Trainer checkpoint folder (checkpoint-N, or one holding
    trainer_state.json, optimizer.pt, scheduler.pt, rng_state*.pth or
    training_args.bin) gets a checkpoint card instead: its files by what a
    resume uses them for, global_step against the scheduler's and the
    optimizer's step counts (the pickles read without running their code),
    the adapter's card inside, and "resumable" or exactly why not; exit 0
    resumable, 1 not (the adapter's own problems do not count there).

    \b
      evalkit card runs/r16/checkpoint-500 --json checkpoint.json

    Exit codes: 0 no error (warnings allowed), 1 an error was found (the
    card is still written), 2 bad input (not an adapter folder, a corrupt
    weights file, an existing --json file without --force).
    """
    from evalkit.provenance.card import card_json
    from evalkit.provenance.cards import card
    from evalkit.provenance.checkpoint import checkpoint_json
    from evalkit.records import CheckpointCard
    from evalkit.report.card_summary import render_card_summary
    from evalkit.report.checkpoint_summary import render_checkpoint_summary

    output = Output(json_path, quiet)
    found = card(adapter_dir, params, json=output.json_file, force=force)
    if isinstance(found, CheckpointCard):
        output.print_json(checkpoint_json(found))
        output.say(render_checkpoint_summary(found, output.json_name))
        output.wrote([json_path])
        click.get_current_context().exit(0 if found.resumable else 1)
    output.print_json(card_json(found))
    output.say(render_card_summary(found, output.json_name))
    output.wrote([json_path])
    click.get_current_context().exit(1 if found.errors else 0)
