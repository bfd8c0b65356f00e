"""One options object per command: the library takes it, the click command is built from it."""

from __future__ import annotations

import dataclasses
import functools
import inspect
from pathlib import Path
from typing import Literal

import click
import pytest
from click.testing import CliRunner

from evalkit import params
from evalkit.cli._params import params_options
from evalkit.cli._vocabulary import Command
from evalkit.errors import ParameterError
from evalkit.options import Params, option, takes

ROOT = Path(__file__).resolve().parents[1]
LLAMA7 = ROOT / "examples" / "plan" / "llama-2-7b"


@dataclasses.dataclass(frozen=True, kw_only=True)
class ToyParams(Params):
    """A command's options, every kind the builder handles."""

    mode: Literal["fast", "exact"] = option("exact", help="How to run.")
    seq_len: int = option(
        16,
        metavar="N",
        check=functools.partial(params.positive, unit="tokens"),
        help="Tokens per sequence.",
        aliases=("--max-seq-length",),
    )
    sizes: tuple[int, ...] | None = option(
        None,
        metavar="A,B",
        parse=lambda text: tuple(int(part) for part in text.split(",")),
        help="Comma-separated sizes.",
    )
    gpu: tuple[str, ...] = option((), metavar="NAME", help="A GPU (repeat for more).")
    prep: bool | None = option(None, secondary="--no-prep", help="Prepare.", default_help="on")
    force: bool = option(False, help="Overwrite.")
    batch: int = option(1, flag="--batch-size", metavar="N", help="Per step.")
    hidden_knob: int = option(3, cli=False, help="Python only.")
    report: Path | None = option(None, metavar="FILE", help="A file to read.")


@click.command("toy", cls=Command)
@params_options(ToyParams)
@click.option("--extra", default="x")
def toy(params: ToyParams, extra: str) -> None:
    click.echo(repr(params))
    click.echo(extra)


@takes(ToyParams)
def library_toy(data: str, given: ToyParams | None = None, /, **values: object) -> ToyParams:
    return ToyParams.build(given, values)


def _run(*args: str) -> click.testing.Result:
    return CliRunner().invoke(toy, list(args))


def test_the_command_gets_one_object_built_from_its_options() -> None:
    result = _run(
        "--mode", "fast", "--seq-len", "8", "--sizes", "3,2", "--gpu", "a", "--gpu", "b",
        "--no-prep", "--force", "--batch-size", "4", "--extra", "y",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    expected = ToyParams(
        mode="fast", seq_len=8, sizes=(3, 2), gpu=("a", "b"), prep=False, force=True, batch=4
    )
    assert result.output == f"{expected!r}\ny\n"
    assert _run().output == f"{ToyParams()!r}\nx\n"


def test_help_comes_from_the_fields() -> None:
    text = CliRunner().invoke(toy, ["--help"], terminal_width=200).output
    for words in (
        "--mode [fast|exact]",
        "[default: exact]",
        "--seq-len N",
        "--sizes A,B",
        "--prep / --no-prep",
        "[default: on]",
        "--batch-size N",
        "--max-seq-length (use --seq-len)",
    ):
        assert words in text, words
    assert "--hidden-knob" not in text
    # help lists the options in the order of the fields
    assert text.index("--mode") < text.index("--seq-len") < text.index("--batch-size")


def test_a_refused_value_names_the_flag_on_the_command_line_and_the_parameter_in_python() -> None:
    result = _run("--seq-len", "0")
    assert result.exit_code == 2
    assert "'--seq-len': must be a positive number of tokens, got 0" in result.output
    with pytest.raises(ParameterError, match=r"^seq_len must be a positive number of tokens"):
        ToyParams(seq_len=0)
    with pytest.raises(ParameterError, match=r"^mode must be one of fast, exact, got 'slow'"):
        ToyParams(mode="slow")  # type: ignore[arg-type]
    assert _run("--mode", "slow").exit_code == 2


def test_a_deprecated_alias_sets_the_same_field_with_a_note() -> None:
    result = CliRunner().invoke(toy, ["--max-seq-length", "9"])
    assert result.exit_code == 0
    assert "seq_len=9" in result.output
    assert "--max-seq-length is deprecated; use --seq-len" in result.output


def test_the_library_takes_the_object_or_keywords_and_shows_its_parameters() -> None:
    assert library_toy("d", seq_len=4) == ToyParams(seq_len=4)
    given = ToyParams(mode="fast")
    assert library_toy("d", given) is given
    assert library_toy("d", given, batch=2) == ToyParams(mode="fast", batch=2)
    assert library_toy("d", gpu=["a"]).gpu == ("a",)  # a list is kept as a tuple
    assert library_toy("d", gpu="a").gpu == ("a",)  # and one name is a tuple of one
    assert library_toy("d", report="r.json").report == Path("r.json")  # a path as text
    with pytest.raises(TypeError, match="unexpected keyword argument 'seqlen'"):
        library_toy("d", seqlen=4)
    signature = inspect.signature(library_toy)
    assert list(signature.parameters)[:2] == ["data", "given"]
    assert signature.parameters["seq_len"].default == 16
    assert signature.parameters["seq_len"].kind is inspect.Parameter.KEYWORD_ONLY
    assert "hidden_knob" in signature.parameters
    with pytest.raises(dataclasses.FrozenInstanceError):
        given.mode = "exact"  # type: ignore[misc]


def test_evalkit_plan_takes_its_options_object(tmp_path: Path) -> None:
    from evalkit.plan import PlanParams, plan

    by_keywords = plan(LLAMA7, method="qlora", seq_len=1024)
    by_object = plan(LLAMA7, PlanParams(method="qlora", seq_len=1024))
    assert by_keywords.model_dump() == by_object.model_dump()
    assert "seq_len" in inspect.signature(plan).parameters
    import evalkit

    assert inspect.signature(evalkit.plan) == inspect.signature(plan)


def test_every_plan_option_is_a_field_of_its_options_objects() -> None:
    """The click command declares no plan option of its own beyond input and output."""
    from evalkit.cli.plan_cmd import plan_command
    from evalkit.plan.options import PlanParams, TimeRequest

    fields = {f.name for f in dataclasses.fields(PlanParams)} | {
        f.name for f in dataclasses.fields(TimeRequest)
    }
    names = {param.name for param in plan_command.params}
    assert names - fields == {"config", "json_path", "force", "quiet"}


# What a command may declare by hand: its inputs, its outputs and how it prints.
INPUTS_AND_OUTPUTS = {
    # inputs: files and folders the command reads
    "config", "base", "data", "contract_path", "gold_path", "predictions", "tokenizer",
    # outputs and printing
    "json_path", "html_path", "junit", "markdown", "html", "out", "out_dir", "fmt", "format",
    "force", "quiet",
}  # fmt: skip


def test_every_command_option_comes_from_an_options_object() -> None:
    """A library option declared only in click would be a second definition: every option of
    every command is a field of an options object, but for inputs, outputs and printing."""
    from evalkit.cli import cli
    from evalkit.cli._params import FieldOption

    ctx = click.Context(cli)
    by_hand: dict[str, list[str]] = {}

    def walk(command: click.Command, path: str) -> None:
        if isinstance(command, click.Group):
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                assert sub is not None
                walk(sub, f"{path} {name}".strip())
            return
        for param in command.params:
            if not isinstance(param, click.Option) or isinstance(param, FieldOption):
                continue
            if param.name not in {*INPUTS_AND_OUTPUTS, "help"}:
                by_hand.setdefault(path, []).append(str(param.name))

    walk(cli, "")
    assert by_hand == {}
