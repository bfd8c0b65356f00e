"""``evalkit rescore``: the command-line face of :func:`evalkit.rescore`.

The library appends the look before it returns; the command appends it when
it publishes each folder (the look first, then the folder), by the same rules.
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
    from evalkit.cli._files import result_inputs, schema_file_input
    from evalkit.cli._rescore_ledger import choose_ledger, rescore_message
    from evalkit.contract.load import load_contract
    from evalkit.errors import UsageError
    from evalkit.io import CommandFiles, check_new_output
    from evalkit.report.html.score import render_score_html
    from evalkit.report.score_summary import render_rescore_lines
    from evalkit.scoring.rescore import compute_rescore, recorded_inputs, rescore_purpose
    from evalkit.scoring.write import publish_score

    # What the command line names is checked before anything is read or scored.
    files = CommandFiles(force=force).reads(*results, contract_path, params.ledger)
    files.reads_all(result_inputs(results)).reads(schema_file_input(contract_path))
    files.writes_into(out, option="--out").check()
    load_contract(contract_path)  # a bad contract fails before any result is read
    names: dict[str, Path] = {}
    for folder in results:
        name = folder.resolve().name
        if name in names:
            raise UsageError(
                f"{names[name]} and {folder} would both be re-scored into {out / name}; "
                "give results whose folders have different names"
            )
        names[name] = folder
    # Every input is found and checked before anything is scored or written.
    plans = []
    for name, folder in names.items():
        inputs = recorded_inputs(folder)
        summary = inputs.result.summary
        ledger = choose_ledger(summary.ledger, inputs.ledger, inputs.gold, params)
        target = out / name
        sources = [folder, contract_path, inputs.gold, inputs.predictions, ledger]
        check_new_output(target, force, inputs=sources, marker="summary.json")
        plans.append((inputs, ledger, target))
    for inputs, ledger, target in plans:
        result = compute_rescore(inputs, contract_path, workers=params.workers, ledger=ledger)
        report = render_score_html(result.summary).encode("utf-8")
        # The look is appended (and fsynced) before the folder is published.
        published = publish_score(
            result,
            target,
            force=force,
            extra_files={"report.html": report},
            purpose=rescore_purpose(inputs.result, params.purpose),
        )
        ledger_line = rescore_message(ledger, published.summary, inputs.result, published.look)
        output = Output(quiet=quiet)
        lines = render_rescore_lines(result.summary, inputs.result, str(target))
        output.say("\n".join([*lines, *([ledger_line] if ledger_line else [])]))
        output.wrote([target])
