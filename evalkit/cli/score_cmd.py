"""``evalkit score``: the command line of :func:`evalkit.score`, and nothing else.

Options -> one call of :func:`evalkit.score` (which reads, records the look,
checks and publishes the folder) -> the summary printed -> exit code.
"""

from __future__ import annotations

from pathlib import Path

import click

from evalkit.cli._params import params_options
from evalkit.cli._vocabulary import Command, Output, quiet_option
from evalkit.scoring.options import ScoreParams


@click.command("score", cls=Command)
@click.option(
    "--contract",
    "contract_path",
    required=True,
    type=click.Path(path_type=Path),
    help="Evaluation contract (YAML or JSON).",
)
@click.option(
    "--gold",
    "gold_path",
    required=True,
    type=click.Path(path_type=Path),
    help="Gold table (JSONL, CSV, Parquet, .json or a Hugging Face save_to_disk folder), "
    "e.g. the test split of evalkit split.",
)
@click.option(
    "--pred",
    "predictions",
    required=True,
    type=click.Path(path_type=Path),
    help="Predictions: a file, or a Hugging Face save_to_disk folder.",
)
@click.option(
    "--out",
    "out",
    required=True,
    type=click.Path(path_type=Path),
    help="Result folder for summary.json, examples.parquet and report.html "
    "(must not exist unless --force).",
)
@params_options(ScoreParams)
@click.option("--force", is_flag=True, help="Replace an existing --out folder.")
@quiet_option
def score_command(
    contract_path: Path,
    gold_path: Path,
    predictions: Path,
    out: Path,
    params: ScoreParams,
    force: bool,
    quiet: bool,
) -> None:
    """Score predictions against gold under an evaluation contract.

    Every gold item gets a verdict: format-valid (found, parsed,
    schema-valid) or one error category (missing, empty, no_json,
    invalid_json, schema:<keyword>, unknown_label); and content-correct or
    not. Writes OUT/summary.json (overall, per field, per class with
    precision/recall/F1, per slice, errors, confusion matrix, fingerprints),
    OUT/examples.parquet (one row per gold item) and OUT/report.html (the
    same figures as charts: one self-contained page, no script).

    Provenance: --card/--adapter record the adapter's card (base, LoRA
    settings, weights hash) and --base-model/--base-revision the base of a
    prompt-only run, so that compare and gate can refuse to compare across
    bases. Every score appends a line to the test-set ledger
    (evalkit-ledger.jsonl beside the gold file, with its head
    evalkit-ledger.head; see `evalkit ledger`) before the result is
    written: a failed append writes no result.

    With the contract key gold_answer, gold is the reference answer in each
    conversation's last assistant turn (a test split in training format),
    parsed strictly under the contract.

    \b
    Example:
      evalkit score --contract contracts/ticket-triage.yaml \\
        --gold demo-out/split/test.parquet \\
        --pred demo-out/predictions/baseline.jsonl --out demo-out/score/baseline

    Exit codes: 0 scored; 2 bad input (unknown contract key, missing column,
    corrupt predictions line, duplicate ids, existing --out without --force).
    """
    from evalkit.cli._warnings import library_warnings
    from evalkit.report.score_files import score_report_files
    from evalkit.scoring.api import score

    with library_warnings():
        result = score(
            contract_path,
            gold_path,
            predictions,
            params,
            out=out,
            force=force,
            extra_files=score_report_files,
        )
    from evalkit.report.look_lines import score_look_line
    from evalkit.report.score_summary import render_score_summary

    for warning in result.summary.warnings:
        click.echo(f"evalkit: warning: {warning}", err=True)
    output = Output(quiet=quiet)
    output.say(render_score_summary(result.summary, str(out)))
    look = score_look_line(result)
    if look:
        output.say(look)
    output.wrote([out])
