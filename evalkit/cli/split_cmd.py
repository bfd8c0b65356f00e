"""``evalkit split``: the command-line face of :func:`evalkit.split`."""

from __future__ import annotations

from pathlib import Path

import click

from evalkit.cli._params import params_options
from evalkit.cli._vocabulary import Command, Output, quiet_option
from evalkit.splitting.options import SplitParams


@click.command("split", cls=Command)
@click.argument("input_file", metavar="INPUT", type=click.Path(path_type=Path))
@click.option(
    "--out",
    "out",
    required=True,
    type=click.Path(path_type=Path),
    help="Output folder (created; must not exist unless --force).",
)
@params_options(SplitParams)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["parquet", "jsonl", "csv"]),
    default="parquet",
    show_default=True,
    help="Format of the split files.",
)
@click.option("--force", is_flag=True, help="Overwrite the output folder if it exists.")
@quiet_option
def split_command(
    input_file: Path,
    out: Path,
    params: SplitParams,
    fmt: str,
    force: bool,
    quiet: bool,
) -> None:
    """Split INPUT into train/val/test, keeping groups whole.

    INPUT is JSONL, CSV, Parquet, a .json file (an array of objects, or JSON
    Lines) or a Hugging Face save_to_disk folder (a DatasetDict with
    --hf-split NAME).

    Every item of a group (a conversation, document, source) lands in the same
    split. Item counts hit --sizes exactly wherever the group sizes allow
    (otherwise the closest counts are used and the deviation reported); with
    --stratify each split's class shares track the whole and every class found
    in at least as many groups as there are splits appears in each split. The
    same data and seed give the same split, whatever the row order.

    --text may name a conversation column ({role, content} messages with tool
    calls, ShareGPT {from, value} with function_call/observation turns, or
    their JSON text in a CSV column); lengths then count the characters of
    every turn, and --near-dup compares the --roles turns (not the system
    prompt, which every example may share), tool calls included.

    --engine ray runs the --near-dup search on a Ray cluster (--ray-address,
    else RAY_ADDRESS, else a local one of the run's own); the split and its
    files are the same.

    Writes OUT/<name>.<format> per split, OUT/assignments.parquet (id, group,
    split; reusable with --freeze) and OUT/manifest.json, and prints a report.
    A JSONL input is written back as written: --format jsonl split files hold
    its lines byte for byte; in Parquet, a nested column whose keys differ
    from row to row is written as each value's JSON text.

    \b
    Example:
      evalkit split tickets.jsonl --out splits --group conversation_id \\
        --stratify category --id ticket_id --sizes 840,180,180 --seed 7
      evalkit split tickets_chat.jsonl --out chat-splits --group conversation_id \
        --stratify category --id ticket_id --text messages --near-dup 0.8 \
        --sizes 840,180,180 --seed 7
    """
    from evalkit.cli import heavy_imports

    # Its matrix products (class vectors of a few hundred groups) use one BLAS thread.
    with heavy_imports(blas_threads=1):
        from evalkit.report.split_summary import render_split_summary
        from evalkit.splitting.api import split

    result = split(
        input_file,
        params,
        out=out,
        fmt="jsonl" if fmt == "jsonl" else "csv" if fmt == "csv" else "parquet",
        force=force,
    )
    assert result.written is not None  # written with out
    output = Output(quiet=quiet)
    output.say(render_split_summary(result.written, str(out)))
    output.wrote([out])
