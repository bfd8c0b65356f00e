"""``evalkit score``: the command-line face of :func:`evalkit.score`."""

from __future__ import annotations

from pathlib import Path
from typing import cast

import click

PRED_FORMATS = ["auto", "jsonl", "csv", "parquet", "openai-batch", "lm-eval", "hf"]


@click.command("score")
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
    help="Gold file (JSONL, CSV or Parquet), e.g. the test split of evalkit split.",
)
@click.option(
    "--pred",
    "pred_path",
    required=True,
    type=click.Path(path_type=Path),
    help="Predictions: a file, or a Hugging Face save_to_disk folder.",
)
@click.option(
    "--out",
    "out",
    required=True,
    type=click.Path(path_type=Path),
    help="Result folder for summary.json and examples.parquet (must not exist unless --force).",
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
    "--id-col",
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
@click.option("--force", is_flag=True, help="Replace an existing --out folder.")
@click.option("--quiet", "-q", is_flag=True, help="Print only the result folder.")
def score_command(
    contract_path: Path,
    gold_path: Path,
    pred_path: Path,
    out: Path,
    name: str | None,
    pred_format: str,
    id_col: str | None,
    output_col: str | None,
    on_duplicate: str,
    workers: int | None,
    force: bool,
    quiet: bool,
) -> None:
    """Score predictions against gold under an evaluation contract.

    Every gold item gets a verdict: format-valid (found, parsed,
    schema-valid) or one error category (missing, empty, no_json,
    invalid_json, schema:<keyword>, unknown_label); and content-correct or
    not. Writes OUT/summary.json (overall, per field, per class with
    precision/recall/F1, per slice, errors, fingerprints) and
    OUT/examples.parquet (one row per gold item).

    \b
    Example:
      evalkit score --contract contracts/ticket-triage.yaml \\
        --gold demo-out/split/test.parquet \\
        --pred demo-out/predictions/baseline.jsonl --out demo-out/score/baseline

    Exit codes: 0 scored; 2 bad input (unknown contract key, missing column,
    corrupt predictions line, duplicate ids, existing --out without --force).
    """
    from evalkit.io import check_new_output, hash_early
    from evalkit.scoring.processes import early_workers

    check_new_output(
        out, force, inputs=[contract_path, gold_path, pred_path], marker="summary.json"
    )
    # The inputs are hashed and the parsing subprocesses start before the
    # imports below, so that both run beside this process's own start-up.
    hash_early([gold_path, pred_path])
    with early_workers(pred_path, workers):
        from evalkit.report.score_summary import render_score_summary
        from evalkit.scoring.engine import OnDuplicate, score

        result = score(
            contract_path,
            gold_path,
            pred_path,
            name=name,
            pred_format=pred_format,
            id_col=id_col,
            output_col=output_col,
            on_duplicate=cast(OnDuplicate, on_duplicate),
            workers=workers,
        )
    result.write(out, force=force)
    click.echo(str(out) if quiet else render_score_summary(result.summary, str(out)))
