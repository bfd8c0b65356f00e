"""``evalkit reload-check``: the command-line face of :func:`evalkit.model.reload_check`."""

from __future__ import annotations

from pathlib import Path

import click

from evalkit.cli._model_options import DEVICES, DTYPES
from evalkit.cli._vocabulary import Command, Output, json_option, quiet_option, seed_option


@click.command("reload-check", cls=Command)
@click.argument("run_dir", metavar="RUN_DIR", type=click.Path(path_type=Path))
@click.option(
    "--n",
    default=16,
    show_default=True,
    type=int,
    help="Control examples to regenerate.",
)
@seed_option("Seed of the choice.")
@click.option(
    "--merged",
    type=click.Path(path_type=Path),
    help="A merged model folder to check instead of the run's base + adapter.",
)
@click.option(
    "--device",
    type=click.Choice(DEVICES),
    help="Where to reload (default: the run's device).",
)
@click.option(
    "--dtype",
    type=click.Choice(DTYPES),
    help="dtype to load in (default: the run's).",
)
@json_option("Write the whole report as JSON")
@click.option("--force", is_flag=True, help="Overwrite the --json file if it exists.")
@quiet_option
def reload_check_command(
    run_dir: Path,
    n: int,
    seed: int,
    merged: Path | None,
    device: str | None,
    dtype: str | None,
    json_path: Path | None,
    force: bool,
    quiet: bool,
) -> None:
    """Prove that the artifact a run pinned still gives the tokens that were scored.

    RUN_DIR is the --out folder of `evalkit generate`. First every hash its
    run.json pins is recomputed (the run's outputs, the data, the base config
    and weights, the adapter, the tokenizer): a file that changed is exit 2,
    naming it. Then a fresh Python process loads the artifact - the run's
    base + adapter, or --merged DIR, the merged folder people ship -
    renders the prompts again, regenerates N control examples chosen by
    --seed (each in its run batch, so only the artifact can differ) and
    compares token ids with tokens.parquet. Each differing example shows the
    first divergent position, both tokens, and the logits there: the largest
    difference over the run's top tokens, and how far each side preferred
    its token (a tiny gap is a near tie flipped by rounding, e.g. a merge
    saved in bf16; a large one is another model).

    \b
    Example:
      evalkit reload-check run/                      # the pinned base + adapter
      evalkit reload-check run/ --merged merged/     # the artifact to deploy

    Exit codes: 0 every control example identical; 1 one differs; 2 bad input
    or a pinned file changed.
    """
    from evalkit.cli import debug_enabled
    from evalkit.cli._files import run_inputs
    from evalkit.command_files import CommandFiles
    from evalkit.model.reload import reload_check
    from evalkit.report.model_summary import render_reload_summary

    output = Output(json_path, quiet)
    files = CommandFiles(force=force).reads_all(run_inputs(run_dir)).reads(merged)
    files.writes(output.json_file, option="--json").check()
    report = reload_check(
        run_dir,
        n=n,
        seed=seed,
        merged=merged,
        device=device,
        dtype=dtype,
        progress=not quiet,
        debug=debug_enabled(),
    )
    output.write_json(report.model_dump_json(indent=2) + "\n")
    output.say(render_reload_summary(report))
    output.wrote([json_path])
    click.get_current_context().exit(0 if report.verdict == "pass" else 1)
