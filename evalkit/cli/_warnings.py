"""The library's warnings, shown as the command line's: ``evalkit: warning: …`` on stderr.

A command is one library call; what that call finds worth saying but not
stopping for (a look that goes unrecorded, a damaged ledger, an adapter card
with errors) it says as an :class:`~evalkit.errors.EvalkitWarning`, the same
for a Python caller. Here each is printed as it is raised, its parameters
named as this command line's flags (``--ledger``), so that the command and
the library warn about the same things in the same words.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from typing import Any

import click

from evalkit.cli._vocabulary import line_naming
from evalkit.errors import EvalkitWarning


@contextlib.contextmanager
def library_warnings() -> Iterator[None]:
    """Print each :class:`EvalkitWarning` the block raises (every time), other warnings as usual."""
    naming = line_naming(click.get_current_context(silent=True))
    with warnings.catch_warnings():
        warnings.simplefilter("always", EvalkitWarning)
        shown = warnings.showwarning

        def show(message: Any, category: Any, *rest: Any, **keywords: Any) -> None:
            if isinstance(message, EvalkitWarning):
                click.echo(f"evalkit: warning: {message.named(naming)}", err=True)
            else:
                shown(message, category, *rest, **keywords)

        warnings.showwarning = show
        yield


@contextlib.contextmanager
def deferred_warnings() -> Iterator[list[str]]:
    """Collect each :class:`EvalkitWarning` the block raises as its line, to print later.

    For a warning that speaks of what the command prints after the call (``gate``:
    "the verdict above stands"): the command prints the lines after its summary.
    """
    naming = line_naming(click.get_current_context(silent=True))
    lines: list[str] = []
    with warnings.catch_warnings():
        warnings.simplefilter("always", EvalkitWarning)
        shown = warnings.showwarning

        def show(message: Any, category: Any, *rest: Any, **keywords: Any) -> None:
            if isinstance(message, EvalkitWarning):
                lines.append(f"evalkit: warning: {message.named(naming)}")
            else:
                shown(message, category, *rest, **keywords)

        warnings.showwarning = show
        yield lines
