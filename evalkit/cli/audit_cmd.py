"""``evalkit audit``: the command-line face of :func:`evalkit.audit`."""

from __future__ import annotations

from pathlib import Path

import click

from evalkit.cli._engine_options import engine_options, ray_options
from evalkit.cli._table_options import system_option, tools_option
from evalkit.cli._vocabulary import (
    Command,
    Output,
    json_option,
    near_dup_option,
    quiet_option,
    seed_option,
)


@click.command("audit", cls=Command)
@click.argument(
    "files", metavar="FILE...", nargs=-1, required=True, type=click.Path(path_type=Path)
)
@click.option("--id", "id_column", required=True, metavar="COL", help="Id column of every split.")
@click.option(
    "--text",
    "text_column",
    required=True,
    multiple=True,
    metavar="COL",
    help="Text or conversation column (messages, ShareGPT; nested or as JSON text) to "
    "compare; twice for prompt-completion (--text prompt --text completion), three times "
    "for Alpaca (--text instruction --text input --text output).",
)
@click.option(
    "--roles",
    metavar="ROLES",
    help="Conversation turns compared (their text and their tool calls' names and "
    "arguments), comma-separated [default: user,assistant,tool - every role but system]. "
    "Exit 2 when --text holds plain text.",
)
@system_option
@tools_option("checked")
@click.option(
    "--group",
    multiple=True,
    metavar="COL",
    help="Group column (conversation, document, source); repeat for a composite key.",
)
@click.option("--stratify", metavar="COL", help="Class column: coverage per split.")
@near_dup_option("Jaccard threshold (word 3-shingles) for near duplicates.", default=0.8)
@click.option("--exact-only", is_flag=True, help="Skip the near-duplicate search.")
@seed_option("Seed of the MinHash.")
@click.option(
    "--within",
    is_flag=True,
    help="List the exact and near-duplicate pairs inside each split too (in --json).",
)
@click.option(
    "--opening-words",
    default=5,
    show_default=True,
    type=int,
    metavar="N",
    help="Words of an opening, for the most repeated openings of each split.",
)
@json_option("Write the full report (every pair and group) as JSON")
@engine_options
@click.option("--force", is_flag=True, help="Overwrite the --json file if it exists.")
@quiet_option
def audit_command(
    files: tuple[Path, ...],
    id_column: str,
    text_column: tuple[str, ...],
    roles: str | None,
    system: str | None,
    tools: str | None,
    group: tuple[str, ...],
    stratify: str | None,
    near_dup: float,
    exact_only: bool,
    seed: int,
    within: bool,
    opening_words: int,
    json_path: Path | None,
    engine: str,
    ray_address: str | None,
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
    --opening-words words). --within lists those pairs in --json. A template
    repeated through the training split is merged into one group by
    `evalkit split --near-dup` (docs/leakage.md).

    --engine ray runs the same stages on a Ray cluster (--ray-address, else
    RAY_ADDRESS or a local one) for data past one machine's memory (about
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
    from evalkit.command_files import CommandFiles
    from evalkit.leakage.api import audit
    from evalkit.report.audit_summary import render_audit_summary

    ray = ray_options(engine, ray_address)
    output = Output(json_path, quiet)
    CommandFiles(force=force).reads(*files).writes(output.json_file, option="--json").check()
    report = audit(
        list(files),
        id_column=id_column,
        text_column=list(text_column),
        roles=roles,
        system=system,
        tools=tools,
        group=list(group),
        stratify=stratify,
        near_dup=None if exact_only else near_dup,
        seed=seed,
        progress=not quiet,
        within=within,
        opening_words=opening_words,
        engine="ray" if ray is not None else "local",
        ray=ray,
    )
    output.write_json(report.model_dump_json(indent=2) + "\n")
    output.say(render_audit_summary(report, output.json_name))
    output.wrote([json_path])
    click.get_current_context().exit(1 if report.leak else 0)
