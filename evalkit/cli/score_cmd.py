"""``evalkit score``: the command-line face of :func:`evalkit.score`."""

from __future__ import annotations

from pathlib import Path
from typing import cast

import click

from evalkit.cli._table_options import hf_split_option, one_table
from evalkit.cli._vocabulary import Command, Output, quiet_option
from evalkit.containers import is_hf_dataset_dict

PRED_FORMATS = ["auto", "jsonl", "json", "csv", "parquet", "openai-batch", "lm-eval", "hf"]


@click.command("score", cls=Command, aliases={"--id-col": "--id"})
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
@click.option("--name", help="Name of this result (default: the predictions file's stem).")
@click.option(
    "--pred-format",
    type=click.Choice(PRED_FORMATS),
    default="auto",
    show_default=True,
    help="Shape of the predictions; auto recognises each from the file.",
)
@click.option(
    "--id",
    "id_col",
    metavar="COL",
    help="Id column of the predictions, a dotted path for nested records (doc.qid). "
    "Default: the contract's id (doc.<id> for lm-eval; custom_id for openai-batch).",
)
@click.option(
    "--output-col",
    metavar="COL",
    help="Column with the raw model text (default: output).",
)
@click.option(
    "--on-duplicate",
    type=click.Choice(["error", "first", "last"]),
    default="error",
    show_default=True,
    help="What to do when an id has several predictions.",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    help="Parsing processes (default: all cores for large inputs, else 1).",
)
@click.option(
    "--card",
    "card_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="card.json of the adapter that produced the predictions (from evalkit card).",
)
@click.option(
    "--adapter",
    "adapter_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="The adapter folder itself: its card is made and recorded (instead of --card).",
)
@click.option(
    "--base-model",
    metavar="ID",
    help="Base model of a prompt-only run (no adapter), recorded so gate can refuse another base.",
)
@click.option(
    "--base-revision",
    metavar="SHA",
    help="The base's commit, with --base-model, or for an --adapter whose config has none.",
)
@click.option(
    "--ledger",
    "ledger_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Test-set ledger to record this look in (default: evalkit-ledger.jsonl beside --gold; "
    "gate counts one elsewhere only when the gold file has none beside it).",
)
@click.option(
    "--no-ledger",
    is_flag=True,
    help="Record no look (e.g. when scoring a validation split elsewhere).",
)
@click.option("--purpose", metavar="TEXT", help="Why this look, kept in the ledger line.")
@hf_split_option
@click.option("--force", is_flag=True, help="Replace an existing --out folder.")
@quiet_option
def score_command(
    contract_path: Path,
    gold_path: Path,
    predictions: Path,
    out: Path,
    name: str | None,
    pred_format: str,
    id_col: str | None,
    output_col: str | None,
    on_duplicate: str,
    workers: int | None,
    card_path: Path | None,
    adapter_dir: Path | None,
    base_model: str | None,
    base_revision: str | None,
    ledger_path: Path | None,
    no_ledger: bool,
    purpose: str | None,
    hf_split: str | None,
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
    from evalkit.command_files import LEDGER_NAME, CommandFiles
    from evalkit.io import hash_early
    from evalkit.scoring.processes import early_workers

    # A DatasetDict (gold or predictions) is read at the --hf-split split.
    gold_dict, pred_dict = is_hf_dataset_dict(gold_path), is_hf_dataset_dict(predictions)
    if hf_split is not None and not (gold_dict or pred_dict):
        raise click.UsageError(
            f"--hf-split {hf_split}: neither --gold nor --pred is a Hugging Face DatasetDict "
            "folder; leave out --hf-split"
        )
    gold_path = one_table(gold_path, hf_split if gold_dict else None)
    predictions = one_table(predictions, hf_split if pred_dict else None)
    files = CommandFiles(force=force).reads(contract_path, gold_path, predictions)
    files.reads(card_path, adapter_dir)
    if not no_ledger:  # the ledger this look is appended to
        files.reads(ledger_path or gold_path.parent / LEDGER_NAME)
    files.writes(out, option="--out", marker="summary.json").check()
    # The inputs are hashed and the parsing subprocesses start before the
    # imports below, so that both run beside this process's own start-up.
    hash_early([gold_path, predictions])
    with early_workers(predictions, workers):
        from evalkit.cli._score_provenance import look_message, provenance_options
        from evalkit.report.html.score import render_score_html
        from evalkit.report.score_summary import render_score_summary
        from evalkit.scoring.engine import OnDuplicate, compute_score
        from evalkit.scoring.write import publish_score

        provenance = provenance_options(
            gold_path, card_path, adapter_dir, base_model, base_revision, ledger_path, no_ledger
        )
        result = compute_score(
            contract_path,
            gold_path,
            predictions,
            name=name,
            pred_format=pred_format,
            id_col=id_col,
            output_col=output_col,
            on_duplicate=cast(OnDuplicate, on_duplicate),
            workers=workers,
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
        purpose=purpose,
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
