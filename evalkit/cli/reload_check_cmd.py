"""``evalkit reload-check``: the command-line face of :func:`evalkit.model.reload_check`."""

from __future__ import annotations

from pathlib import Path

import click

from evalkit.cli._params import params_options
from evalkit.cli._vocabulary import Command, Output, json_option, quiet_option
from evalkit.model.options import ReloadCheckParams


@click.command("reload-check", cls=Command)
@click.argument("run_dir", metavar="RUN_DIR", type=click.Path(path_type=Path))
@params_options(ReloadCheckParams)
@json_option("Write the whole report as JSON")
@click.option("--force", is_flag=True, help="Overwrite the --json file if it exists.")
@quiet_option
def reload_check_command(
    run_dir: Path,
    params: ReloadCheckParams,
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

    --backend vllm regenerates with vLLM's engine (the adapter as a server
    runs it) and --backend hf with transformers, whichever made the run: the
    report gives the exact-match rate of token ids, and --min-match RATE
    (default 1.0) is the smallest that passes.

    \b
    Example:
      evalkit reload-check run/                      # the pinned base + adapter
      evalkit reload-check run/ --merged merged/     # the artifact to deploy
      evalkit reload-check run/ --backend vllm --n 500 --min-match 0.95

    Exit codes: 0 the exact-match rate reaches --min-match (by default: every
    control example identical); 1 it does not; 2 bad input or a pinned file
    changed.
    """
    from evalkit.cli import debug_enabled
    from evalkit.model.reload import reload_check
    from evalkit.report.model_summary import render_reload_summary

    output = Output(json_path, quiet)
    report = reload_check(
        run_dir,
        params,
        progress=not quiet,
        debug=debug_enabled(),
        json=output.json_file,
        force=force,
    )
    output.print_json(report.model_dump_json(indent=2) + "\n")
    output.say(render_reload_summary(report))
    output.wrote([json_path])
    click.get_current_context().exit(0 if report.verdict == "pass" else 1)
