"""Options shared by the commands that load a model (``generate``, ``smoke``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])

DEVICES = ["auto", "cpu", "cuda"]
DTYPES = ["auto", "float32", "bfloat16", "float16"]


def device_options(function: F) -> F:
    """``--device`` and ``--dtype``, with the rules of docs/generate.md for ``auto``."""
    function = click.option(
        "--dtype",
        type=click.Choice(DTYPES),
        default="auto",
        show_default=True,
        help="auto: float32 on the CPU; on CUDA the saved 16-bit dtype, else float32.",
    )(function)
    function = click.option(
        "--device",
        type=click.Choice(DEVICES),
        default="auto",
        show_default=True,
        help="auto: CUDA when torch sees a GPU, else the CPU.",
    )(function)
    return function
