"""The option that picks one split of a Hugging Face DatasetDict folder, defined once."""

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


def one_table(path: Path, hf_split: str | None) -> Path:
    """The table ``path`` names once ``--hf-split`` picked a DatasetDict's split."""
    from evalkit.containers import resolve_hf_split

    return resolve_hf_split(path, hf_split)
