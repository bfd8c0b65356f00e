"""``evalkit rescore``: the command line of :func:`evalkit.rescore`, and nothing else.

Options -> one call of :func:`evalkit.rescore` with every RESULT (which
checks every input and output first, then per result appends the look and
publishes the folder) -> what each look counted as, printed -> exit code.
"""

from __future__ import annotations

from pathlib import Path

import click

from evalkit.cli._params import params_options
from evalkit.cli._vocabulary import Command, Output, quiet_option
from evalkit.scoring.options import RescoreParams


@click.command("rescore", cls=Command)
@click.argument(
    "results", metavar="RESULT...", nargs=-1, required=True, type=click.Path(path_type=Path)
)
@click.option(
    "--contract",
    "contract_path",
    required=True,
    type=click.Path(path_type=Path),
    help="The new evaluation contract (YAML or JSON) to score under.",
)
@click.option(
    "--out",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder for the new results: one DIR/<name>/ per RESULT, named as its folder.",
)
@params_options(RescoreParams)
@click.option("--force", is_flag=True, help="Replace existing DIR/<name> folders.")
@quiet_option
def rescore_command(
    results: tuple[Path, ...],
    contract_path: Path,
    out: Path,
    params: RescoreParams,
    force: bool,
    quiet: bool,
) -> None:
    """Re-score result folders under a new contract version, from their recorded predictions.

    When a fix changes the rules (a renamed class, a stricter parser), every
    candidate still needed is re-scored under the new version, so that no
    figure made under the old rules is compared with one made under the new.
    Each RESULT (a folder written by `evalkit score`) names the predictions
    and gold files it scored, with their sha256: they are read again, as they
    were read then, and a file that changed since is refused (exit 2). Each
    new result, DIR/<name>/ with <name> the RESULT folder's name, is what
    `evalkit score` writes for the same files under the new contract, byte
    for byte, except that summary.json names the contract and folder it
    replaces (rescored_from).

    The ledger: each re-score appends a line to the ledger the result
    recorded (--ledger to choose another). Under the same rules (only the
    evaluator changed) it is no new look; under changed rules it is a new
    look, and rules changed after the test was seen burn it, as for any
    score. The terminal says which.

    \b
    Example:
      evalkit rescore runs/baseline runs/cand-a runs/cand-b \\
        --contract contracts/ticket-triage-v2.yaml --out runs-v2/
      evalkit compare runs-v2/baseline runs-v2/cand-a runs-v2/cand-b

    Exit codes: 0 re-scored; 2 bad input (a result that records no
    predictions file, a predictions or gold file changed or not found, a
    contract column the gold file lacks, an existing DIR/<name> without
    --force).
    """
    from evalkit.cli._warnings import library_warnings
    from evalkit.comparison.rescore import rescore
    from evalkit.report.score_files import score_report_files

    with library_warnings():
        done = rescore(
            list(results), contract_path, params, out=out, force=force,
            extra_files=score_report_files,
        )  # fmt: skip
    from evalkit.report.look_lines import rescore_look_line
    from evalkit.report.score_summary import render_rescore_lines

    output = Output(quiet=quiet)
    for result in done:
        target = str(result.folder)
        lines = render_rescore_lines(result.summary, result.replaced, target)
        output.say("\n".join([*lines, rescore_look_line(result)]))
        output.wrote([result.folder])
