"""``evalkit audit``: the command-line face of :func:`evalkit.audit`."""

from __future__ import annotations

from pathlib import Path

import click

from evalkit.cli._params import params_options
from evalkit.cli._vocabulary import Command, Output, json_option, quiet_option
from evalkit.leakage.options import AuditParams


@click.command("audit", cls=Command)
@click.argument(
    "files", metavar="FILE...", nargs=-1, required=True, type=click.Path(path_type=Path)
)
@params_options(AuditParams)
@json_option("Write the full report (every pair and group) as JSON")
@click.option("--force", is_flag=True, help="Overwrite the --json file if it exists.")
@quiet_option
def audit_command(
    files: tuple[Path, ...],
    params: AuditParams,
    json_path: Path | None,
    force: bool,
    quiet: bool,
) -> None:
    """Check the splits of a dataset for leakage between them.

    Each FILE (JSONL, CSV, Parquet, .json, or a Hugging Face Dataset folder)
    is one split, named by its file stem; a folder written by `evalkit split`,
    or a Hugging Face DatasetDict folder, stands for all its splits. Reports groups
    (--group) and ids found in more than one split, pairs of items in
    different splits whose texts are equal after normalisation (Unicode NFKC,
    lower case, whitespace), pairs whose texts are near duplicates (Jaccard
    similarity of word 3-shingles >= --near-dup, found with MinHash LSH and
    checked exactly), and the classes of --stratify missing from a split.

    --text may name a conversation column ({role, content} messages or
    ShareGPT {from, value}, nested or as JSON text): the text compared is
    then the content and tool calls of the --roles turns, so a system prompt
    shared by every example is no leak.

    Repetition within each split is reported too (not a leak): the share of
    its items in exact and in near-duplicate clusters of its own, the largest
    clusters with an example id, and the most repeated openings (the first
    --opening-words words, 1 to 100). --within lists those pairs in --json,
    at most 100,000 of each kind per split (the report names a split that
    had more; its clusters count every item). A template
    repeated through the training split is merged into one group by
    `evalkit split --near-dup` (docs/leakage.md).

    --engine ray runs the same stages on a Ray cluster (--ray-address, else
    RAY_ADDRESS, else a local one of the run's own; never another cluster
    found on the machine) for data past one machine's memory (about
    3 GB per million texts here); the report is the same, byte for byte,
    but for options.engine.

    Exit codes: 0 no leak, 1 leak found, 2 bad input (a missing file or
    column, an unknown format) or a Ray stage that could not finish. A
    missing class is a warning, not a leak.

    \b
    Example:
      evalkit audit split/ --id ticket_id --text text \\
        --group conversation_id --stratify category --json audit.json
      evalkit audit chat-split/ --id ticket_id --text messages --roles user
      evalkit audit corpus/ --id id --text messages --engine ray \\
        --ray-address head-node:6379 --json audit.json
    """
    from evalkit.leakage.api import audit
    from evalkit.report.audit_summary import render_audit_summary

    output = Output(json_path, quiet)
    report = audit(list(files), params, progress=not quiet, json=output.json_file, force=force)
    output.print_json(report.model_dump_json(indent=2) + "\n")
    output.say(render_audit_summary(report, output.json_name))
    output.wrote([json_path])
    click.get_current_context().exit(1 if report.leak else 0)
