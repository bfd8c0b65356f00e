"""One error, two vocabularies: parameters from Python, flags on the command line.

An :class:`~evalkit.errors.EvalkitError` names the parameters of its advice as
``{name}`` refs; ``str(error)`` says ``force=True``, and the command line
(:func:`evalkit.cli._vocabulary.flags_named`, in one place) says ``--force``.
Each case below raises the same error both ways and reads both messages.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
import pytest
from conftest import assert_one_line_error

from evalkit.cli._vocabulary import Command, Group, flags_named, spelling
from evalkit.errors import (
    NO_VALUE,
    EvalkitError,
    InfeasibleSplit,
    InvalidTable,
    OutputExists,
    ParameterError,
    Ref,
    UsageError,
)

ROOT = Path(__file__).resolve().parents[1]
LLAMA7 = ROOT / "examples" / "plan" / "llama-2-7b"


def _groups(tmp_path: Path, groups: list[str | None]) -> Path:
    path = tmp_path / "data.jsonl"
    rows = [{"id": f"i{n}", "g": group} for n, group in enumerate(groups)]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


# --- the same error from Python and from the command line ---------------------------------


def test_the_tolerance_advice_of_an_infeasible_split(run_cli, tmp_path: Path) -> None:
    from evalkit.splitting.api import split

    data = _groups(tmp_path, ["a", "a", "a", "b"])
    with pytest.raises(InfeasibleSplit) as raised:
        split(data, group=["g"], sizes=[2, 2], names=["x", "y"], tolerance=0)
    assert "(off by +1, tolerance=0); the group sizes do not allow closer counts: change " \
        "sizes or raise tolerance" in str(raised.value)  # fmt: skip
    assert "--" not in str(raised.value)
    result = run_cli("split", data, "--out", tmp_path / "out", "--group", "g", "--sizes", "2,2",
                     "--names", "x,y", "--tolerance", "0")  # fmt: skip
    assert_one_line_error(result, "(off by +1, --tolerance 0); the group sizes do not allow "
                          "closer counts: change --sizes or raise --tolerance")  # fmt: skip


def test_an_output_that_exists_without_force(run_cli, tmp_path: Path) -> None:
    from evalkit.splitting.api import split

    data = _groups(tmp_path, ["a", "b", "c", "d"])
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    result = split(data, group=["g"], sizes=[2, 2], names=["x", "y"])
    with pytest.raises(OutputExists, match=r"folder exists already; pass force=True to overwrite"):
        result.write(out)
    cli = run_cli("split", data, "--out", out, "--group", "g", "--sizes", "2,2", "--names", "x,y")
    assert_one_line_error(cli, "folder exists already; pass --force to overwrite it")
    assert (out / "keep.txt").read_text() == "mine"


def test_a_tokenizer_without_its_package(
    run_cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from evalkit.splitting.api import split

    monkeypatch.setitem(sys.modules, "tokenizers", None)  # import tokenizers: ImportError
    data = tmp_path / "t.jsonl"
    data.write_text('{"id": "a", "t": "x y"}\n{"id": "b", "t": "z"}\n')
    tokenizer = tmp_path / "tokenizer.json"
    tokenizer.write_text("{}")
    with pytest.raises(UsageError, match=r"^tokenizer needs the optional 'tokenizers' package"):
        split(data, group=["id"], sizes=[1, 1], names=["x", "y"], id_column="id", text="t",
              stratify="length", tokenizer=tokenizer)  # fmt: skip
    result = run_cli("split", data, "--out", tmp_path / "o", "--group", "id", "--sizes", "1,1",
                     "--names", "x,y", "--id", "id", "--text", "t", "--stratify", "length",
                     "--tokenizer", tokenizer)  # fmt: skip
    assert_one_line_error(result, "evalkit: error: --tokenizer needs the optional 'tokenizers'")


def test_a_prequantized_base_planned_with_another_method(run_cli, tmp_path: Path) -> None:
    from evalkit.plan.api import plan

    config = json.loads((LLAMA7 / "config.json").read_text())
    config["quantization_config"] = {"quant_method": "bitsandbytes", "load_in_4bit": True,
                                     "bnb_4bit_quant_type": "nf4"}  # fmt: skip
    (tmp_path / "config.json").write_text(json.dumps(config))
    with pytest.raises(UsageError) as raised:
        plan(tmp_path, method="lora")
    assert "this base trains as QLoRA; use method='qlora' (quant='nf4'), or pass" in str(
        raised.value
    )
    result = run_cli("plan", "--config", tmp_path, "--method", "lora")
    assert_one_line_error(result, "this base trains as QLoRA; use --method qlora (--quant nf4)")


def test_a_value_carrying_ref_null_groups(run_cli, tmp_path: Path) -> None:
    from evalkit.splitting.api import split

    data = _groups(tmp_path, ["a", "b", None, "c"])
    with pytest.raises(InvalidTable, match=r"or pass null_group='singleton' to make each its"):
        split(data, group=["g"], sizes=[2, 2], names=["x", "y"])
    result = run_cli("split", data, "--out", tmp_path / "o", "--group", "g", "--sizes", "2,2",
                     "--names", "x,y")  # fmt: skip
    assert_one_line_error(result, "or pass --null-group singleton to make each its own group")


def test_a_no_ref_names_the_negative_flag(run_cli, tmp_path: Path) -> None:
    """``{"ledger": False}``: ``ledger=False`` from Python, ``--no-ledger`` for score."""
    from evalkit.provenance.ledger import check_ledger_file

    other = tmp_path / "notes.jsonl"
    other.write_text('{"a": 1}\n')
    with pytest.raises(UsageError) as raised:
        check_ledger_file(other)
    assert str(raised.value).endswith(
        "pass ledger with a new path or an evalkit-ledger.jsonl, or ledger=False"
    )
    command = Command("score", params=[click.Option(["--ledger", "ledger_path"]),
                                       click.Option(["--no-ledger"], is_flag=True)])  # fmt: skip
    ctx = click.Context(command)
    with pytest.raises(UsageError) as raised, flags_named(ctx):
        check_ledger_file(other)
    assert str(raised.value).endswith(
        "pass --ledger with a new path or an evalkit-ledger.jsonl, or --no-ledger"
    )


def test_the_contract_group_names_flags(run_cli, tmp_path: Path) -> None:
    out = tmp_path / "schema.json"
    out.write_text("{}")
    result = run_cli("contract", "schema", "--out", out)
    assert_one_line_error(result, "file exists already; pass --force to overwrite it")


# --- the mechanism ------------------------------------------------------------------------


def _command(*options: click.Option) -> Command:
    return Command("c", params=list(options))


def test_spelling_of_each_kind_of_ref() -> None:
    command = _command(
        click.Option(["--force"], is_flag=True),
        click.Option(["--ledger/--no-ledger"], default=True),
        click.Option(["--null-group"], type=click.Choice(["error", "singleton"])),
        click.Option(["--batch-size", "batch"], type=int),
        click.Option(["--format", "fmt"]),
        click.Option(["--sizes"]),
        click.Option(["-q", "--quiet"], is_flag=True),
    )
    assert spelling(command, "force") == "--force"
    assert spelling(command, "force", True) == "--force"
    assert spelling(command, "ledger", True) == "--ledger"
    assert spelling(command, "ledger", False) == "--no-ledger"
    assert spelling(command, "null_group", "singleton") == "--null-group singleton"
    assert spelling(command, "batch") == "--batch-size"
    assert spelling(command, "batch", 4) == "--batch-size 4"
    assert spelling(command, "fmt", "jsonl") == "--format jsonl"
    assert spelling(command, "sizes", [8, 1, 1]) == "--sizes 8,1,1"
    assert spelling(command, "quiet") == "--quiet"
    assert spelling(command, "tolerance") == "tolerance"  # no option sets it: its own name
    assert spelling(command, "tolerance", 3) == "tolerance=3"
    lone = _command(click.Option(["--force"], is_flag=True))
    assert spelling(lone, "force", False) == "--force"  # no --no-force: the flag's own words


def test_python_words_of_each_kind_of_ref() -> None:
    error = EvalkitError(
        "{tolerance} {force} {ledger} {null_group} {cpu} {json} {x}",
        refs={"tolerance": NO_VALUE, "force": True, "ledger": False, "null_group": "singleton",
              "cpu": Ref("device", "cpu"), "json": NO_VALUE},
    )  # fmt: skip
    assert str(error) == "tolerance force=True ledger=False null_group='singleton' " \
        "device='cpu' json {x}"  # fmt: skip
    assert error.template.startswith("{tolerance}")
    assert EvalkitError("a {b} c").message == "a {b} c"  # braces that are no ref stay


def test_a_ref_the_command_has_no_option_for_keeps_its_name() -> None:
    @click.command("c", cls=Command)
    @click.option("--force", is_flag=True)
    def command(force: bool) -> None:
        raise OutputExists(
            "pass {force}, raise {tolerance} or set {null_group}",
            refs={"force": True, "tolerance": NO_VALUE, "null_group": "singleton"},
        )

    with pytest.raises(OutputExists) as raised:
        command.main([], standalone_mode=False)
    assert str(raised.value) == "pass --force, raise tolerance or set null_group='singleton'"


def test_a_parameter_of_the_group_above_is_its_flag() -> None:
    @click.group("g", cls=Group)
    @click.option("--debug", is_flag=True)
    def group(debug: bool) -> None:
        pass

    @group.command("c")
    def command() -> None:
        raise EvalkitError("rerun with {debug}", refs={"debug": True})

    assert isinstance(command, Command)
    with pytest.raises(EvalkitError, match=r"^rerun with --debug$"):
        group.main(["c"], standalone_mode=False)


def test_the_first_naming_wins_and_parameter_errors_keep_their_words() -> None:
    error = ParameterError("near_dup", "needs {text} COL", refs=["text"])
    assert str(error) == "near_dup needs text COL"
    assert error.problem_text == "needs text COL"
    error.naming(lambda name, value: f"--{name.replace('_', '-')}")
    assert str(error) == "--near-dup needs --text COL"
    error.naming(lambda name, value: name.upper())
    assert str(error) == "--near-dup needs --text COL"
    assert error.problem_text == "needs text COL"


def test_a_worker_error_comes_back_with_its_refs() -> None:
    from evalkit.model.fresh import _error_record, worker_error

    sent = UsageError(
        "{cuda}: no GPU; use {cpu} or {force}",
        refs={"cuda": Ref("device", "cuda"), "cpu": Ref("device", "cpu"), "force": True},
    )
    back = worker_error(json.loads(json.dumps(_error_record(sent))), "reload")
    assert str(back) == str(sent) == "device='cuda': no GPU; use device='cpu' or force=True"
    command = _command(click.Option(["--device"]), click.Option(["--force"], is_flag=True))
    back.naming(lambda name, value: spelling(command, name, value))
    assert str(back) == "--device cuda: no GPU; use --device cpu or --force"


def test_a_checked_option_names_the_other_parameters_as_flags() -> None:
    import dataclasses

    from click.testing import CliRunner

    from evalkit.cli._params import params_options
    from evalkit.options import Params, option

    def check(value: int, parameter: str) -> int:
        raise ParameterError(parameter, "needs {runs} first", refs=["runs"])

    @dataclasses.dataclass(frozen=True, kw_only=True)
    class Campaign(Params):
        window: int | None = option(None, check=check, help="The window.")
        runs: int | None = option(None, help="The runs.")

    @click.command("c", cls=Command)
    @params_options(Campaign)
    def command(params: Campaign) -> None:
        pass

    result = CliRunner().invoke(command, ["--window", "3"])
    assert result.exit_code == 2
    assert "Invalid value for '--window': needs --runs first" in result.output


def test_a_wrapped_error_keeps_its_refs() -> None:
    error = ParameterError("on_duplicate", "must be first or last, not {force}", refs=["force"])
    wider = error.wrapped(before="re-scoring runs/a: ", after="; nothing was written")
    assert isinstance(wider, ParameterError) and wider is not error
    assert str(wider) == "re-scoring runs/a: on_duplicate must be first or last, not force; " \
        "nothing was written"  # fmt: skip
    wider.naming(lambda name, value: "--" + name.replace("_", "-"))
    assert str(wider) == "re-scoring runs/a: --on-duplicate must be first or last, not --force; " \
        "nothing was written"  # fmt: skip
    assert str(error) == "on_duplicate must be first or last, not force"
