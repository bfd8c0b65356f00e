"""Every command, every output option, every input: an output never replaces an input.

The walk reads each command's options from click itself, so a command or an
option added later is walked too: every path option that is not an output
is an input, and every output is tried on every input - the same path, a
path inside an input folder, a folder holding the input - with ``--force``.
Each must be exit 2 with one line, and the input must keep its bytes.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from conftest import assert_one_line_error

from evalkit.cli import COMMANDS, cli

# The options that name what a command writes (their parameter names).
OUTPUT_PARAMS = {"out", "json_path", "junit", "markdown", "html", "html_path"}
# Commands that write nothing (they print).
NO_OUTPUT = {"contract check"}


def _leaf_commands() -> Iterator[tuple[str, click.Command]]:
    context = click.Context(cli)
    for name in sorted(COMMANDS):
        command = cli.get_command(context, name)
        assert command is not None
        if isinstance(command, click.Group):
            for sub in sorted(command.commands):
                yield f"{name} {sub}", command.commands[sub]
        else:
            yield name, command


LEAVES = dict(_leaf_commands())


def _path_params(command: click.Command) -> list[click.Parameter]:
    return [param for param in command.params if isinstance(param.type, click.Path)]


def _outputs(command: click.Command) -> list[click.Parameter]:
    return [param for param in _path_params(command) if param.name in OUTPUT_PARAMS]


def _inputs(command: click.Command) -> list[click.Parameter]:
    return [param for param in _path_params(command) if param.name not in OUTPUT_PARAMS]


def _flag(param: click.Parameter) -> str:
    assert isinstance(param, click.Option)
    return max(param.opts, key=len)


def _value(param: click.Parameter) -> str:
    """A value click accepts for a required non-path parameter."""
    if isinstance(param.type, click.Choice):
        return str(param.type.choices[0])
    if isinstance(param.type, click.types._NumberRangeBase | click.types._NumberParamTypeBase):
        return "1"
    return "x"


def _makes_folder(param: click.Parameter) -> bool:
    assert isinstance(param.type, click.Path)
    return not param.type.file_okay


def _command_line(
    name: str, tmp_path: Path, chosen: dict[str, Path], force: bool = True
) -> tuple[list[str], dict[str, Path]]:
    """Arguments for ``name``: ``chosen`` params as given, other required ones filled in."""
    command = LEAVES[name]
    paths: dict[str, Path] = {}
    positional: list[str] = []
    options: list[str] = []
    for param in command.params:
        assert param.name is not None
        if param.name in chosen:
            value: str | None = str(chosen[param.name])
            paths[param.name] = chosen[param.name]
        elif not param.required:
            continue
        elif isinstance(param.type, click.Path):
            made = tmp_path / "given" / param.name
            made.parent.mkdir(parents=True, exist_ok=True)
            if param.name in OUTPUT_PARAMS:
                made = made.with_suffix(".out")
            elif _makes_folder(param):
                made.mkdir(exist_ok=True)
            elif not made.exists():
                made.write_text("an input\n")
            value = str(made)
            paths[param.name] = made
        else:
            value = _value(param)
        if isinstance(param, click.Argument):
            positional.append(value)
        else:
            options += [_flag(param), value]
    if force and any(param.name == "force" for param in command.params):
        options.append("--force")
    return [*name.split(), *options, *positional], paths


def _input_file(tmp_path: Path, param: click.Parameter) -> Path:
    """An existing input for ``param``: a folder with a file in it, or a file."""
    path = tmp_path / "inputs" / f"{param.name}"
    path.parent.mkdir(parents=True, exist_ok=True)
    if _makes_folder(param):
        path.mkdir()
        (path / "inside.json").write_text("{}\n")
    else:
        path.write_text('{"kept": true}\n')
    return path


def _snapshot(path: Path) -> dict[str, bytes]:
    if path.is_file():
        return {"": path.read_bytes()}
    return {str(p.relative_to(path)): p.read_bytes() for p in path.rglob("*") if p.is_file()}


CASES = [
    (name, output.name, source.name)
    for name, command in LEAVES.items()
    for output, source in itertools.product(_outputs(command), _inputs(command))
]


def test_the_walk_covers_every_command() -> None:
    walked = {name for name, _, _ in CASES}
    for name, command in LEAVES.items():
        if name in NO_OUTPUT:
            assert not _outputs(command), f"{name} writes a file: walk it"
        elif _outputs(command):
            assert name in walked or not _inputs(command), name
        else:
            raise AssertionError(f"{name}: no output option known to the walk; list it")
    # The commands the issue names are all walked, each with at least one input.
    assert {"audit", "ledger", "gate", "reload-check", "card", "score", "compare"} <= walked


@pytest.mark.parametrize(("name", "output", "source"), CASES)
def test_an_output_never_is_an_input(run_cli, tmp_path: Path, name, output, source) -> None:
    command = LEAVES[name]
    source_param = next(param for param in command.params if param.name == source)
    output_param = next(param for param in command.params if param.name == output)
    given = _input_file(tmp_path, source_param)
    before = _snapshot(given)
    targets = [(given, "would replace the input")]
    if given.is_dir():
        targets.append((given / "inside.out", "inside the input folder"))
    targets.append((given.parent, "which lies inside it"))
    kind = output_param.type
    assert isinstance(kind, click.Path)
    for target, message in targets:
        if (target.is_dir() and not kind.dir_okay) or (target.is_file() and not kind.file_okay):
            continue  # click itself refuses a folder for a file option, and the reverse
        args, _ = _command_line(name, tmp_path, {source: given, output: target})
        result = run_cli(*args)
        assert_one_line_error(result, message)
        assert _snapshot(given) == before, (name, output, target)


TWO_OUTPUTS = [
    (name, first.name, second.name)
    for name, command in LEAVES.items()
    for first, second in itertools.combinations(_outputs(command), 2)
]


def test_commands_with_several_outputs_are_walked() -> None:
    assert {name for name, _, _ in TWO_OUTPUTS} == {"compare", "gate", "tokens"}


@pytest.mark.parametrize(("name", "first", "second"), TWO_OUTPUTS)
@pytest.mark.parametrize("force", [False, True])
def test_two_outputs_never_share_a_path(run_cli, tmp_path: Path, name, first, second, force):
    target = tmp_path / "same.out"
    args, _ = _command_line(name, tmp_path, {first: target, second: target}, force=force)
    assert_one_line_error(run_cli(*args), "name the same path")
    assert not target.exists()
