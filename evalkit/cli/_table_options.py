"""Options about the table a command reads, each defined once: the DatasetDict split, and
the columns that hold a conversation's system prompt and tools."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

HF_SPLIT_HELP = (
    "For a Hugging Face DatasetDict folder (save_to_disk): the split to read, e.g. test."
)


def hf_split_option(function: Callable[..., Any]) -> Callable[..., Any]:
    """``--hf-split NAME``, in the style of the commands that read one table."""
    return click.option("--hf-split", "hf_split", metavar="NAME", help=HF_SPLIT_HELP)(function)


def system_option(function: Callable[..., Any]) -> Callable[..., Any]:
    """``--system COL``: the column of system prompts (LLaMA-Factory's ``system``)."""
    return click.option(
        "--system",
        metavar="COL",
        help="Column of system prompts, put first in each conversation that has none "
        "[default: a column named system, if any].",
    )(function)


def tools_option(use: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--tools COL``: the column of each conversation's tools; ``use`` says what the
    command does with them."""
    return click.option(
        "--tools",
        "tools",
        metavar="COL",
        help="Column of each conversation's tools (a list of function schemas, or its JSON "
        f"text), {use} [default: a column named tools, if any].",
    )


def one_table(path: Path, hf_split: str | None) -> Path:
    """The table ``path`` names once ``--hf-split`` picked a DatasetDict's split."""
    from evalkit.containers import resolve_hf_split

    return resolve_hf_split(path, hf_split)
