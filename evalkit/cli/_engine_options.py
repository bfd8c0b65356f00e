"""``--engine`` and ``--ray-address``: where ``audit`` and ``split --near-dup`` search."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:
    from evalkit.leakage.distributed.session import RayOptions

F = TypeVar("F", bound=Callable[..., Any])


def engine_options(function: F) -> F:
    """Add ``--engine local|ray`` and ``--ray-address ADDR`` to a command."""
    function = click.option(
        "--ray-address",
        metavar="ADDR",
        help="Ray cluster to run on with --engine ray (e.g. ray://head:10001 or head:6379) "
        "[default: RAY_ADDRESS, else a cluster running here, else a local one evalkit "
        "starts and stops].",
    )(function)
    return click.option(
        "--engine",
        type=click.Choice(["local", "ray"]),
        default="local",
        show_default=True,
        help="Where the duplicate search runs: one process, or a Ray cluster "
        "(pip install 'evalkit[ray]'); both give the same results.",
    )(function)


def ray_options(engine: str, address: str | None) -> RayOptions | None:
    """The Ray engine's options for the command line's values (None for --engine local)."""
    if engine != "ray":
        if address is not None:
            raise click.UsageError("--ray-address needs --engine ray")
        return None
    from evalkit.leakage.distributed.session import RayOptions

    return RayOptions(address=address)
