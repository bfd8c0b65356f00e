"""``evalkit split``: the command-line face of :func:`evalkit.split`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from evalkit.cli._engine_options import engine_options, ray_options
from evalkit.cli._table_options import hf_split_option, one_table, system_option, tools_option
from evalkit.cli._vocabulary import Command, Output, near_dup_option, quiet_option, seed_option


class _NumberList(click.ParamType):
    """A comma-separated list of numbers, e.g. ``840,180,180`` or ``0.7,0.15,0.15``."""

    def __init__(self, kind: type[int] | type[float]) -> None:
        self.kind = kind
        self.name = "int-list" if kind is int else "float-list"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, list):
            return value
        try:
            return [self.kind(part) for part in str(value).split(",") if part.strip()]
        except ValueError:
            noun = "whole numbers" if self.kind is int else "numbers"
            self.fail(f"{value!r} is not a comma-separated list of {noun}", param, ctx)


@click.command("split", cls=Command)
@click.argument("input_file", metavar="INPUT", type=click.Path(path_type=Path))
@click.option(
    "--out",
    "out",
    required=True,
    type=click.Path(path_type=Path),
    help="Output folder (created; must not exist unless --force).",
)
@click.option(
    "--group",
    "group",
    multiple=True,
    required=True,
    metavar="COL",
    help="Group column; repeat for a composite key. A group never spans two splits.",
)
@click.option("--stratify", metavar="COL", help="Class column whose shares every split tracks.")
@click.option(
    "--sizes",
    type=_NumberList(int),
    metavar="N,N,N",
    help="Items per split, e.g. 840,180,180 (may add up to less than the input).",
)
@click.option(
    "--ratios",
    type=_NumberList(float),
    metavar="R,R,R",
    help="Share of items per split, summing to 1, e.g. 0.7,0.15,0.15.",
)
@click.option(
    "--names",
    default="train,val,test",
    show_default=True,
    metavar="A,B,C",
    help="Split names, in the order of --sizes/--ratios.",
)
@seed_option("Random seed.")
@click.option(
    "--id",
    "id_column",
    metavar="COL",
    help="Unique id column; outputs are sorted by it (recommended).",
)
@click.option(
    "--text",
    multiple=True,
    metavar="COL",
    help="Text or conversation column (messages, ShareGPT; nested or as JSON text): length "
    "statistics per split, and what --near-dup compares. Twice for prompt-completion "
    "(--text prompt --text completion), three times for Alpaca (--text instruction "
    "--text input --text output).",
)
@click.option(
    "--roles",
    metavar="ROLES",
    help="Conversation turns compared by --near-dup (their text and their tool calls' names "
    "and arguments), comma-separated [default: user,assistant,tool - every role but system].",
)
@system_option
@tools_option("checked and rendered with --tokenizer")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["parquet", "jsonl", "csv"]),
    default="parquet",
    show_default=True,
    help="Format of the split files.",
)
@click.option(
    "--null-group",
    type=click.Choice(["error", "singleton"]),
    default="error",
    show_default=True,
    help="Rows with an empty group key: refuse, or one group each.",
)
@click.option(
    "--tolerance",
    type=int,
    metavar="N",
    help="Fail (exit 2) if a split's count misses its target by more than N items.",
)
@near_dup_option("Merge groups whose --text values are (near) duplicates, Jaccard >= T.")
@click.option(
    "--freeze",
    type=click.Path(path_type=Path),
    metavar="ASSIGNMENTS",
    help="assignments.parquet of an earlier split: known groups stay where they were.",
)
@click.option(
    "--tokenizer",
    type=click.Path(path_type=Path),
    metavar="PATH",
    help="Local tokenizer or model folder (lengths in tokens as `evalkit tokens` counts "
    "them), or a tokenizer.json file: report --text lengths in tokens.",
)
@hf_split_option
@engine_options
@click.option("--force", is_flag=True, help="Overwrite the output folder if it exists.")
@quiet_option
def split_command(
    input_file: Path,
    out: Path,
    group: tuple[str, ...],
    stratify: str | None,
    sizes: list[int] | None,
    ratios: list[float] | None,
    names: str,
    seed: int,
    id_column: str | None,
    text: tuple[str, ...],
    roles: str | None,
    system: str | None,
    tools: str | None,
    fmt: str,
    null_group: str,
    tolerance: int | None,
    near_dup: float | None,
    freeze: Path | None,
    tokenizer: Path | None,
    hf_split: str | None,
    engine: str,
    ray_address: str | None,
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
    else RAY_ADDRESS or a local one); the split and its files are the same.

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
    from evalkit.command_files import CommandFiles
    from evalkit.io import hash_early

    ray = ray_options(engine, ray_address)
    files = CommandFiles(force=force).reads(input_file, freeze, tokenizer)
    files.writes(out, option="--out", marker="manifest.json").check()
    input_file = one_table(input_file, hf_split)
    hash_early([input_file, *([freeze] if freeze is not None else [])])  # beside the imports

    from evalkit.cli import heavy_imports

    # Its matrix products (class vectors of a few hundred groups) use one BLAS thread.
    with heavy_imports(blas_threads=1):
        from evalkit.report.split_summary import render_split_summary
        from evalkit.splitting.api import split

    result = split(
        input_file,
        group=list(group),
        sizes=sizes,
        ratios=ratios,
        names=[name.strip() for name in names.split(",")],
        stratify=stratify,
        seed=seed,
        id_column=id_column,
        text=list(text) or None,
        roles=roles,
        null_group="singleton" if null_group == "singleton" else "error",
        tolerance=tolerance,
        near_dup=near_dup,
        freeze=freeze,
        tokenizer=tokenizer,
        system=system,
        tools=tools,
        engine="ray" if ray is not None else "local",
        ray=ray,
    )
    written = result.write(
        out, fmt="jsonl" if fmt == "jsonl" else "csv" if fmt == "csv" else "parquet", force=force
    )
    output = Output(quiet=quiet)
    output.say(render_split_summary(written, str(out)))
    output.wrote([out])
