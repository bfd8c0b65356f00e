"""The options of a split, as given: ``evalkit.split``'s and ``evalkit split``'s.

Defined once here, as the fields of :class:`SplitParams`: the library takes
the object (or keywords that build it) and the command line is built from it.
Stdlib only: ``evalkit split --help`` imports this module, not polars.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from evalkit import params
from evalkit.errors import ParameterError
from evalkit.options import Params, option
from evalkit.vocabulary import (
    check_engine,
    engine_field,
    hf_split_field,
    near_dup_field,
    ray_address_field,
    seed_field,
    system_field,
    tools_field,
)

NullGroupPolicy = Literal["error", "singleton"]
DEFAULT_NAMES = ("train", "val", "test")
RESERVED_NAMES = {"assignments", "manifest"}
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def check_names(names: Sequence[str], parameter: str = "names") -> tuple[str, ...]:
    """Split names must be distinct, usable as file names, and not reserved."""
    if len(names) < 2:
        raise ParameterError(parameter, f"must name at least two splits, got {list(names)!r}")
    for name in names:
        if not _NAME.match(name) or name in RESERVED_NAMES:
            raise ParameterError(
                parameter,
                f"{name!r} cannot name a split; use letters, digits, '_', '-', '.' "
                f"(and not {sorted(RESERVED_NAMES)})",
            )
    if len(set(names)) != len(names):
        raise ParameterError(parameter, f"must be distinct, got {list(names)!r}")
    return tuple(names)


def _numbers(kind: type[int] | type[float], parameter: str) -> Any:
    """The parser of a comma-separated list of numbers, e.g. ``840,180,180``."""

    def parse(text: str) -> tuple[int | float, ...]:
        try:
            return tuple(kind(part) for part in text.split(",") if part.strip())
        except ValueError:
            noun = "whole numbers" if kind is int else "numbers"
            raise ParameterError(
                parameter, f"{text!r} is not a comma-separated list of {noun}"
            ) from None

    return parse


def _names(text: str) -> tuple[str, ...]:
    return tuple(name.strip() for name in text.split(","))


def _tolerance(value: object, parameter: str) -> int:
    if isinstance(value, float) and value.is_integer():  # 2.0 is 2 items, as the record says
        value = int(value)
    return params.at_least(value, 0, parameter, "items")


def _text(value: tuple[str, ...], parameter: str) -> tuple[str, ...]:
    return params.text_columns(value, parameter) if value else value


@dataclass(frozen=True, kw_only=True)
class SplitParams(Params):
    """The options of a split (:func:`evalkit.split`, ``evalkit split``).

    A single column name is taken for ``group`` and ``text`` as well as a list;
    ``roles`` is comma-separated text or a list of roles.
    """

    group: tuple[str, ...] = option(
        metavar="COL",
        help="Group column; repeat for a composite key. A group never spans two splits.",
    )
    stratify: str | None = option(
        None, metavar="COL", help="Class column whose shares every split tracks."
    )
    sizes: tuple[int, ...] | None = option(
        None,
        metavar="N,N,N",
        parse=_numbers(int, "sizes"),
        help="Items per split, e.g. 840,180,180 (may add up to less than the input).",
    )
    ratios: tuple[float, ...] | None = option(
        None,
        metavar="R,R,R",
        parse=_numbers(float, "ratios"),
        help="Share of items per split, summing to 1, e.g. 0.7,0.15,0.15.",
    )
    names: tuple[str, ...] = option(
        DEFAULT_NAMES,
        metavar="A,B,C",
        parse=_names,
        check=check_names,
        default_help=",".join(DEFAULT_NAMES),
        help="Split names, in the order of --sizes/--ratios.",
    )
    seed: int = seed_field("Random seed.")
    id_column: str | None = option(
        None,
        flag="--id",
        metavar="COL",
        help="Unique id column; outputs are sorted by it (recommended).",
    )
    text: tuple[str, ...] | None = option(
        None,
        metavar="COL",
        check=_text,
        help="Text or conversation column (messages, ShareGPT; nested or as JSON text): length "
        "statistics per split, and what --near-dup compares. Twice for prompt-completion "
        "(--text prompt --text completion), three times for Alpaca (--text instruction "
        "--text input --text output).",
    )
    roles: str | tuple[str, ...] | None = option(
        None,
        metavar="ROLES",
        help="Conversation turns compared by --near-dup (their text and their tool calls' names "
        "and arguments), comma-separated [default: user,assistant,tool - every role but "
        "system].",
    )
    system: str | None = system_field()
    tools: str | None = tools_field("checked and rendered with --tokenizer")
    null_group: NullGroupPolicy = option(
        "error", help="Rows with an empty group key: refuse, or one group each."
    )
    tolerance: int | None = option(
        None,
        metavar="N",
        check=_tolerance,
        help="Fail (exit 2) if a split's count misses its target by more than N items.",
    )
    near_dup: float | None = near_dup_field(
        "Merge groups whose --text values are (near) duplicates, Jaccard >= T."
    )
    freeze: Path | None = option(
        None,
        metavar="ASSIGNMENTS",
        help="assignments.parquet of an earlier split: known groups stay where they were.",
    )
    tokenizer: Path | None = option(
        None,
        metavar="PATH",
        help="Local tokenizer or model folder (lengths in tokens as `evalkit tokens` counts "
        "them), or a tokenizer.json file: report --text lengths in tokens.",
    )
    hf_split: str | None = hf_split_field()
    engine: Literal["local", "ray"] = engine_field()
    ray_address: str | None = ray_address_field()

    def __post_init__(self) -> None:
        if isinstance(self.roles, list):
            object.__setattr__(self, "roles", tuple(self.roles))
        super().__post_init__()
        check_engine(self.engine, self.ray_address)
