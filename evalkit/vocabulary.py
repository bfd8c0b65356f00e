"""The fields that several commands' options objects share, each spelled once.

A concept that more than one command takes (a seed, an id column, the near-
duplicate threshold, a conversation's system and tools columns, a
DatasetDict's split, where a search runs) is a field made here, so its flag,
its check and the core of its help are the same on every command; a command
adds only what the concept means for it (``help``). The command line's
vocabulary test (``tests/test_cli_vocabulary.py``) holds the spellings.
"""

from __future__ import annotations

from typing import Any

from evalkit import params
from evalkit.errors import ParameterError
from evalkit.options import option

HF_SPLIT_HELP = (
    "For a Hugging Face DatasetDict folder (save_to_disk): the split to read, e.g. test."
)


def seed_field(help: str, *, default: int | None = 0) -> Any:
    """``seed``: a whole number >= 0 (``--seed N``)."""
    return option(default, metavar="N", check=params.seed, help=help)


def near_dup_field(help: str, *, default: float | None = None) -> Any:
    """``near_dup``: a Jaccard threshold in (0, 1] (``--near-dup T``)."""
    return option(default, metavar="T", check=params.near_dup, help=help)


def id_field(
    help: str,
    *,
    required: bool = False,
    aliases: tuple[str, ...] = (),
    renamed: tuple[str, ...] = (),
) -> Any:
    """``id_column``: the column of ids (``--id COL``), read as written; ``renamed``: the
    field's deprecated Python spellings (``score``'s ``id_col``)."""
    if required:
        return option(flag="--id", metavar="COL", help=help, aliases=aliases, renamed=renamed)
    return option(None, flag="--id", metavar="COL", help=help, aliases=aliases, renamed=renamed)


def text_field(help: str, *, renamed: tuple[str, ...] = ()) -> Any:
    """``text``: the column(s) of text or conversations (``--text COL``, once to three
    times); one name may be given as a string in Python. ``renamed``: the field's
    deprecated Python spellings (``generate``'s ``text_columns``)."""
    return option(metavar="COL", check=params.text_columns, help=help, renamed=renamed)


def system_field() -> Any:
    """``system``: the column of system prompts (LLaMA-Factory's ``system``)."""
    return option(
        None,
        metavar="COL",
        help="Column of system prompts, put first in each conversation that has none.",
        default_help="a column named system, if any",
    )


def tools_field(use: str) -> Any:
    """``tools``: the column of each conversation's tools; ``use`` says what the command
    does with them."""
    return option(
        None,
        metavar="COL",
        help="Column of each conversation's tools (a list of function schemas, or its JSON "
        f"text), {use}.",
        default_help="a column named tools, if any",
    )


def hf_split_field() -> Any:
    """``hf_split``: which split of a DatasetDict folder a command reads."""
    return option(None, metavar="NAME", help=HF_SPLIT_HELP)


def engine_field() -> Any:
    """``engine``: where a duplicate search runs (one process, or a Ray cluster)."""
    return option(
        "local",
        help="Where the duplicate search runs: one process, or a Ray cluster "
        "(pip install 'evalkit[ray]'); both give the same results.",
    )


def ray_address_field() -> Any:
    """``ray_address``: the Ray cluster of ``engine="ray"``."""
    return option(
        None,
        metavar="ADDR",
        help="Ray cluster to run on with --engine ray (e.g. ray://head:10001 or head:6379).",
        default_help="RAY_ADDRESS, else a local cluster of the run's own, which it starts "
        "and stops",
    )


def check_engine(engine: str, ray_address: str | None) -> None:
    """``ray_address`` applies to ``engine="ray"`` only (the check of every command with both)."""
    if ray_address is not None and engine != "ray":
        raise ParameterError("ray_address", "needs {engine} ray", refs=["engine"])
