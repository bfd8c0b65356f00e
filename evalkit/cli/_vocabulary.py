"""The one vocabulary of the command line: shared options, deprecated spellings, outputs.

Every concept has one spelling on every command (``--id``, ``--seq-len``,
``--batch-size``, ``--json FILE``, ``-q/--quiet``, ``--seed``);
``tests/test_cli_vocabulary.py`` walks every command's options and fails on a
concept spelled two ways. An older spelling stays accepted as a *deprecated
alias*: it is not in the option list, the ``--help`` epilog names it, and
using it prints one line on stderr. :class:`Command` does that by rewriting
the alias to the current spelling before click parses the line, so an alias
means exactly what the option means (same type, same checks, same errors).

``-q/--quiet`` has one meaning everywhere: print only errors (and warnings)
on stderr and the path of what was written on stdout; no summary, no
progress. ``--json -`` writes the JSON report to stdout, and then everything
else a command prints goes to stderr, so the output can be piped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import click

from evalkit.errors import NO_VALUE, EvalkitError, Naming, python_name

F = TypeVar("F", bound=Callable[..., Any])

STDOUT = Path("-")
QUIET_HELP = "Print only errors and the path of what was written: no summary, no progress."

ALIASES_ATTRIBUTE = "__evalkit_aliases__"
"""Where a command keeps the deprecated spellings of its options (set by ``_params``)."""


class Command(click.Command):
    """A click command whose options may keep deprecated spellings (``aliases``).

    ``aliases`` maps an old spelling to the option's current one, e.g.
    ``{"--batch": "--batch-size"}``. The epilog of ``--help`` lists them.
    """

    def __init__(self, *args: Any, aliases: Mapping[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.aliases: dict[str, str] = {
            **getattr(self.callback, ALIASES_ATTRIBUTE, {}),
            **(aliases or {}),
        }
        if self.aliases:
            listed = ", ".join(f"{old} (use {new})" for old, new in self.aliases.items())
            note = f"Deprecated spellings, still accepted with a note on stderr: {listed}."
            self.epilog = f"{self.epilog}\n\n{note}" if self.epilog else note

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if self.aliases:
            args = _rewrite_aliases(self, ctx, args)
        with flags_named(ctx):
            return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        with flags_named(ctx):
            return super().invoke(ctx)


class Group(click.Group):
    """A click group whose subcommands are :class:`Command` s (errors name their flags)."""

    command_class = Command

    def invoke(self, ctx: click.Context) -> Any:
        with flags_named(ctx):
            return super().invoke(ctx)


@contextmanager
def flags_named(ctx: click.Context) -> Iterator[None]:
    """Re-raise an :class:`EvalkitError` with its parameters named as flags of ``ctx``'s line.

    The one place the library's words become the command line's: an error
    says ``pass force=True`` from Python and ``pass --force`` here. A
    parameter is looked up in the running command's options, then in those
    of the groups above it (``--debug`` of ``evalkit``).
    """
    try:
        yield
    except EvalkitError as error:
        raise error.naming(line_naming(ctx)) from None


def line_naming(ctx: click.Context | None) -> Naming:
    """How ``ctx``'s command line names a parameter: its flag, or its own name."""
    commands = []
    while ctx is not None:
        commands.append(ctx.command)
        ctx = ctx.parent
    return lambda name, value: spelling(commands, name, value)


def spelling(
    commands: click.Command | Sequence[click.Command], parameter: str, value: Any = NO_VALUE
) -> str:
    """How a command line writes ``parameter`` (set to ``value``, when one is given).

    ``force`` -> ``--force``; ``{"force": True}`` -> ``--force``; ``{"ledger":
    False}`` -> ``--no-ledger`` for a ``--ledger/--no-ledger`` pair, or where
    the command has a ``--no-ledger`` flag beside ``--ledger PATH``;
    ``{"null_group": "singleton"}`` -> ``--null-group singleton``. The
    option is the first of ``commands`` (the running command, then its
    groups) that sets the parameter; a parameter none sets keeps the
    library's words.
    """
    if isinstance(commands, click.Command):
        commands = [commands]
    for command in commands:
        option = option_of(command, parameter)
        if option is not None:
            return _spelled(command, option, value)
    return python_name(parameter, value)


def _spelled(command: click.Command, option: click.Option, value: Any) -> str:
    flag = _long(option.opts)
    if value is NO_VALUE:
        return flag
    if isinstance(value, bool):
        if value is False and option.is_flag and option.secondary_opts:
            return _long(option.secondary_opts)
        if (
            value is False
            and (negative := flag_of(command, "no_" + flag[2:].replace("-", "_"))) is not None
        ):
            return negative
        if option.is_flag:
            return flag
    if isinstance(value, list | tuple):
        value = ",".join(str(item) for item in value)
    return f"{flag} {value}"


def option_of(command: click.Command, parameter: str) -> click.Option | None:
    """The option of ``command`` that sets the library's ``parameter`` (None: none does).

    An option's Python name is the parameter it is passed to (``--seq-len``
    -> ``seq_len``), so the option list itself is the table; an option
    whose Python name differs (``--format`` -> ``fmt``) is also found by its
    flag's own words.
    """
    options = [param for param in command.params if isinstance(param, click.Option)]
    for option in options:
        if option.name == parameter:
            return option
    for option in options:
        for opt in option.opts:
            if opt.startswith("--") and opt[2:].replace("-", "_") == parameter:
                return option
    return None


def flag_of(command: click.Command, parameter: str) -> str | None:
    """The flag that sets the library's ``parameter`` (None: no option of ``command`` does)."""
    option = option_of(command, parameter)
    if option is None:
        return None
    if option.name != parameter:  # found by its flag's words: that flag
        for opt in option.opts:
            if opt[2:].replace("-", "_") == parameter:
                return opt
    return _long(option.opts)


def _long(opts: list[str]) -> str:
    """The long spelling of an option (``--quiet`` of ``-q/--quiet``)."""
    longs = [opt for opt in opts if opt.startswith("--")]
    return (longs or opts)[0]


def _takes_value(command: click.Command, ctx: click.Context) -> set[str]:
    """The option spellings of ``command`` that consume the next word as their value."""
    names: set[str] = set()
    for param in command.get_params(ctx):
        if isinstance(param, click.Option) and not param.is_flag and not param.count:
            names.update(param.opts)
    return names


def _rewrite_aliases(command: Command, ctx: click.Context, args: list[str]) -> list[str]:
    """``args`` with every deprecated spelling replaced by its option's current one."""
    valued = _takes_value(command, ctx)
    rewritten: list[str] = []
    used: dict[str, str] = {}
    given: set[str] = set()
    skip_next = False
    for position, word in enumerate(args):
        if skip_next:
            rewritten.append(word)
            skip_next = False
            continue
        if word == "--":
            rewritten += args[position:]
            break
        name, equals, value = word.partition("=")
        if name in command.aliases:
            new = command.aliases[name]
            used[name] = new
            word = f"{new}={value}" if equals else new
            name = new
        elif name.startswith("-"):
            given.add(name)
        skip_next = name in valued and not equals
        rewritten.append(word)
    for old, new in used.items():
        if new in given:
            raise click.UsageError(f"give {new} only ({old} is its deprecated spelling)", ctx)
        click.echo(f"evalkit: warning: {old} is deprecated; use {new}", err=True)
    return rewritten


def quiet_option(function: F) -> F:
    """``-q/--quiet``, with its one meaning."""
    return click.option("-q", "--quiet", is_flag=True, help=QUIET_HELP)(function)


def json_option(help: str) -> Callable[[F], F]:
    """``--json FILE`` (``-``: stdout) for a command's JSON report."""
    return click.option(
        "--json",
        "json_path",
        type=click.Path(dir_okay=False, path_type=Path, allow_dash=True),
        metavar="FILE",
        help=f"{help} (- for stdout).",
    )


@dataclass(frozen=True)
class Output:
    """Where a command's words go, given ``--json`` and ``--quiet``.

    The JSON report goes to its file (written by the command's library call,
    ``json=``), or to stdout for ``--json -`` (:meth:`print_json`); then the
    summary and the paths go to stderr, so that stdout holds the JSON alone.
    With ``quiet`` the summary is left out and the written paths are printed.
    """

    json_path: Path | None = None
    quiet: bool = False

    @property
    def json_to_stdout(self) -> bool:
        """Whether ``--json -`` asked for the report on stdout."""
        return self.json_path == STDOUT

    @property
    def json_file(self) -> Path | None:
        """The ``--json`` file to write (None when there is none, or it is stdout)."""
        return None if self.json_to_stdout else self.json_path

    @property
    def json_name(self) -> str | None:
        """How a summary names where the JSON went (None: nowhere)."""
        if self.json_path is None:
            return None
        return "stdout" if self.json_to_stdout else str(self.json_path)

    def print_json(self, text: str | bytes) -> None:
        """Print the JSON report for ``--json -`` (a ``--json`` file is the library call's)."""
        if self.json_to_stdout:
            click.echo(text.encode("utf-8") if isinstance(text, str) else text, nl=False)

    def say(self, text: str) -> None:
        """Print a summary line (not with ``quiet``)."""
        if not self.quiet:
            click.echo(text, err=self.json_to_stdout)

    def wrote(self, paths: Iterable[Path | str | None]) -> None:
        """With ``quiet``: the paths written, one a line (the JSON file included)."""
        if not self.quiet:
            return
        for path in paths:
            if path is not None and Path(path) != STDOUT:
                click.echo(str(path), err=self.json_to_stdout)
