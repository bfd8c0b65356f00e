"""``evalkit score``: the command-line face of :func:`evalkit.score`."""

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
    from evalkit.io import LEDGER_NAME, CommandFiles, hash_early
    from evalkit.scoring.processes import early_workers
    from evalkit.scoring.sources import score_tables

    # A DatasetDict (gold or predictions) is read at the --hf-split split.
    gold_path, predictions = score_tables(gold_path, predictions, params.hf_split)
    files = CommandFiles(force=force).reads(contract_path, gold_path, predictions)
    files.reads(params.card if isinstance(params.card, Path) else None, params.adapter)
    if not params.no_ledger:  # the ledger this look is appended to
        files.reads(params.ledger or gold_path.parent / LEDGER_NAME)
    files.writes(out, option="--out", marker="summary.json").check()
    # The inputs are hashed and the parsing subprocesses start before the
    # imports below, so that both run beside this process's own start-up.
    hash_early([gold_path, predictions])
    with early_workers(predictions, params.workers):
        from evalkit.cli._score_provenance import look_message, provenance_options
        from evalkit.report.html.score import render_score_html
        from evalkit.report.score_summary import render_score_summary
        from evalkit.scoring.engine import compute_score
        from evalkit.scoring.write import publish_score

        provenance = provenance_options(gold_path, params)
        result = compute_score(
            contract_path,
            gold_path,
            predictions,
            params,
            card=provenance.card,
            base=provenance.base,
            ledger=provenance.ledger,
        )
    from evalkit.cli._files import schema_file_input

    files.reads(schema_file_input(contract_path), provenance.ledger).check()
    report = render_score_html(result.summary).encode("utf-8")
    # The look is appended (and fsynced) before the folder is published.
    published = publish_score(
        result,
        out,
        force=force,
        extra_files={"report.html": report},
        purpose=params.purpose,
        inputs=files.inputs,
    )
    ledger_line = look_message(provenance.ledger, published.look)
    for warning in result.summary.warnings:
        click.echo(f"evalkit: warning: {warning}", err=True)
    output = Output(quiet=quiet)
    output.say(render_score_summary(result.summary, str(out)))
    if ledger_line:
        output.say(ledger_line)
    output.wrote([out])
