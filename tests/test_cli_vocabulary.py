"""One CLI vocabulary: every concept spelled one way on every command.

The commands are found by walking click's own command tree (so a new
command is covered without editing this file); each one's options and its
rendered ``--help`` are checked against the table of concepts below.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from conftest import assert_one_line_error

from evalkit import params
from evalkit.cli import cli
from evalkit.cli._params import _Library
from evalkit.cli._vocabulary import QUIET_HELP, Command, flag_of
from evalkit.errors import ParameterError

ROOT = Path(__file__).resolve().parents[1]
LLAMA7 = ROOT / "examples" / "plan" / "llama-2-7b"


@dataclass(frozen=True)
class Concept:
    spelling: str
    deprecated: tuple[str, ...] = ()


# concept -> its one spelling, and the spellings kept only as deprecated aliases.
CONCEPTS = {
    "id column": Concept("--id", ("--id-col", "--id-column")),
    "sequence length": Concept("--seq-len", ("--max-seq-length", "--max-seq-len", "--seq-length")),
    "batch size": Concept("--batch-size", ("--batch", "--bs")),
    "evaluation batch size": Concept("--eval-batch-size", ("--eval-batch",)),
    "JSON report": Concept("--json", ("--json-out", "--report")),
    "quiet": Concept("--quiet", ("--silent",)),
    "seed": Concept("--seed", ("--random-seed", "--random-state")),
    "near-duplicate threshold": Concept("--near-dup", ("--near-duplicates", "--jaccard")),
}
DEPRECATED = {old: concept for concept in CONCEPTS.values() for old in concept.deprecated}
SCORE_REQUIRED = ["--contract", "c.yaml", "--gold", "g.jsonl", "--pred", "p.jsonl", "--out", "o"]
# The aliases the commands keep, each with a command line that uses it and
# what it sets: a new alias needs a line here.
ALIAS_LINES = {
    ("card", "--out"): (["adapter", "--out", "c.json"], "json_path", Path("c.json")),
    ("plan", "--batch"): (["--config", "c.json", "--batch", "2"], "batch_size", 2),
    ("plan", "--eval-batch"): (["--config", "c.json", "--eval-batch", "4"], "eval_batch_size", 4),
    ("smoke", "--batch"): (
        ["--base", "b", "--data", "d.jsonl", "--text", "t", "--batch", "2"],
        "batch_size",
        2,
    ),
    ("tokens", "--max-seq-length"): (
        ["d.jsonl", "--tokenizer", "t", "--text", "t", "--max-seq-length", "60"],
        "seq_len",
        60,
    ),
    ("score", "--id-col"): (
        [*SCORE_REQUIRED, "--id-col", "doc.qid"],
        "id_column",
        "doc.qid",
    ),
}


def _commands() -> list[tuple[str, click.Command]]:
    ctx = click.Context(cli)
    found: list[tuple[str, click.Command]] = []

    def walk(command: click.Command, path: str) -> None:
        if isinstance(command, click.Group):
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                assert sub is not None
                walk(sub, f"{path} {name}".strip())
        else:
            found.append((path, command))

    walk(cli, "")
    return found


COMMANDS = _commands()
IDS = [path for path, _ in COMMANDS]


def _options(command: click.Command) -> list[click.Option]:
    return [p for p in command.params if isinstance(p, click.Option) and not p.hidden]


def _normal(spelling: str) -> str:
    """A spelling reduced to its concept: case, ``max-``, ``-col``, ``-size``, ``len`` dropped."""
    word = spelling.lstrip("-").lower().replace("_", "-")
    word = re.sub(r"^max-", "", word)
    word = re.sub(r"-(col|column|size|file|path)$", "", word)
    return re.sub(r"\blength\b|\blen\b", "len", word)


def test_the_walk_finds_every_command() -> None:
    assert {"split", "audit", "tokens", "plan", "smoke", "contract check", "score"} <= set(IDS)
    assert len(IDS) >= 16


@pytest.mark.parametrize(("path", "command"), COMMANDS, ids=IDS)
def test_no_option_uses_a_deprecated_spelling(path: str, command: click.Command) -> None:
    for option in _options(command):
        for spelling in option.opts + option.secondary_opts:
            assert spelling not in DEPRECATED, (
                f"{path}: {spelling} is the deprecated spelling of {DEPRECATED[spelling].spelling}"
            )


def test_no_concept_is_spelled_two_ways_across_commands() -> None:
    spellings: dict[str, set[str]] = {}
    for _, command in COMMANDS:
        for option in _options(command):
            for spelling in option.opts:
                if spelling.startswith("--"):
                    spellings.setdefault(_normal(spelling), set()).add(spelling)
    twice = {concept: found for concept, found in spellings.items() if len(found) > 1}
    assert not twice, twice


@pytest.mark.parametrize(("path", "command"), COMMANDS, ids=IDS)
def test_quiet_has_one_spelling_and_one_meaning(path: str, command: click.Command) -> None:
    quiet = [option for option in _options(command) if "--quiet" in option.opts]
    assert len(quiet) == 1, f"{path} has no -q/--quiet"
    assert quiet[0].opts == ["-q", "--quiet"] and quiet[0].is_flag
    assert quiet[0].help == QUIET_HELP


def _check_of(option: click.Option) -> object:
    """The library check an option's type runs: a shared option's, or an options field's."""
    if isinstance(option.type, _Library):
        return option.type.spec.check
    return None


@pytest.mark.parametrize(("path", "command"), COMMANDS, ids=IDS)
def test_seed_json_and_near_dup_are_the_shared_options(path: str, command: click.Command) -> None:
    for option in _options(command):
        if option.name == "seed" or "--seed" in option.opts:
            assert option.opts == ["--seed"]
            assert _check_of(option) is params.seed
            assert option.default is None or option.default >= 0
        if "--json" in option.opts:
            assert option.opts == ["--json"] and option.name == "json_path"
            assert isinstance(option.type, click.Path) and option.type.allow_dash
            assert option.metavar == "FILE" and "(- for stdout)" in (option.help or "")
        if "--near-dup" in option.opts:
            assert _check_of(option) is params.near_dup


@pytest.mark.parametrize(("path", "command"), COMMANDS, ids=IDS)
def test_aliases_point_at_the_concepts_spelling(path: str, command: click.Command) -> None:
    aliases = getattr(command, "aliases", {})
    help_text = CliRunner().invoke(cli, [*path.split(), "--help"], terminal_width=200).output
    for old, new in aliases.items():
        assert (path, old) in ALIAS_LINES, f"{path} {old}: add a command line to ALIAS_LINES"
        assert old in DEPRECATED or old == "--out", old
        if old in DEPRECATED:
            assert DEPRECATED[old].spelling == new
        assert any(new in option.opts for option in _options(command)), (path, new)
        assert f"{old} (use {new})" in help_text
    if aliases:
        assert "Deprecated spellings" in help_text


@pytest.mark.parametrize(("command_path", "alias"), sorted(ALIAS_LINES))
def test_each_alias_sets_what_its_option_sets(command_path: str, alias: str) -> None:
    args, name, value = ALIAS_LINES[(command_path, alias)]
    command = dict(COMMANDS)[command_path]
    assert isinstance(command, Command) and alias in command.aliases
    ctx = command.make_context(command_path, list(args))
    assert ctx.params[name] == value
    new = command.aliases[alias]
    ctx = command.make_context(command_path, [new if a == alias else a for a in args])
    assert ctx.params[name] == value


def test_an_alias_works_end_to_end_with_a_note(run_cli, tmp_path: Path) -> None:
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    first = run_cli("plan", "--config", LLAMA7, "--batch", "2", "--json", old)
    second = run_cli("plan", "--config", LLAMA7, "--batch-size", "2", "--json", new)
    assert first.exit_code == second.exit_code == 0, first.stderr
    assert old.read_bytes() == new.read_bytes()
    assert first.stderr == "evalkit: warning: --batch is deprecated; use --batch-size\n"
    assert second.stderr == ""
    both = run_cli("plan", "--config", LLAMA7, "--batch", "2", "--batch-size", "2")
    assert_one_line_error(both, "give --batch-size only", "--batch is its deprecated spelling")
    # --batch=2 and a value that looks like the alias are handled as words are
    equals = run_cli("plan", "--config", LLAMA7, "--batch=3", "--json", tmp_path / "eq.json")
    assert equals.exit_code == 0 and json.loads((tmp_path / "eq.json").read_text())
    assert json.loads((tmp_path / "eq.json").read_text())["inputs"]["options"]["batch"] == 3


def test_json_dash_writes_the_report_alone_on_stdout(run_cli, tmp_path: Path) -> None:
    result = run_cli("plan", "--config", LLAMA7, "--json", "-")
    assert result.exit_code == 0
    plan = json.loads(result.stdout)
    assert plan["inputs"]["options"]["seq_len"] == 2048
    assert result.stderr.strip()  # the summary went to stderr


def test_quiet_prints_only_the_written_path(run_cli, tmp_path: Path) -> None:
    target = tmp_path / "plan.json"
    result = run_cli("plan", "--config", LLAMA7, "--json", target, "-q")
    assert result.exit_code == 0 and result.stdout == f"{target}\n" and result.stderr == ""
    nothing = run_cli("plan", "--config", LLAMA7, "-q")
    assert nothing.exit_code == 0 and nothing.stdout == nothing.stderr == ""


@pytest.mark.parametrize("command", ["split", "audit"])
def test_near_dup_is_checked_once_with_one_message(run_cli, tmp_path: Path, command: str) -> None:
    data = tmp_path / "t.jsonl"
    data.write_text('{"id": "a", "text": "x"}\n')
    extra = ["--out", tmp_path / "out", "--text", "text"] if command == "split" else []
    result = run_cli(command, data, *extra, "--near-dup", "1.5")
    assert_one_line_error(result, "--near-dup", "must be a Jaccard threshold in (0, 1], got 1.5")
    assert not (tmp_path / "out").exists()


def test_library_errors_name_parameters_and_the_cli_names_flags(run_cli) -> None:
    from evalkit.plan.api import plan

    with pytest.raises(ParameterError) as raised:
        plan(LLAMA7, batch_size=0)
    assert str(raised.value) == "batch_size must be a positive number of sequences, got 0"
    assert raised.value.parameter == "batch_size"
    result = run_cli("plan", "--config", LLAMA7, "--optimizer", "adamw", "--method", "full",
                     "--r", "8")  # fmt: skip
    assert_one_line_error(result, "evalkit: error: --r applies to lora and qlora")
    with pytest.raises(ParameterError, match=r"^r applies to lora and qlora"):
        plan(LLAMA7, method="full", r=8)


def test_a_parameter_no_option_sets_keeps_its_name() -> None:
    command = dict(COMMANDS)["plan"]
    assert flag_of(command, "batch_size") == "--batch-size"
    assert flag_of(command, "max_seq_length") is None
    assert flag_of(dict(COMMANDS)["tokens"], "seq_len") == "--seq-len"


def test_the_shared_checks_refuse_and_accept() -> None:
    assert params.seed(0) == 0 and params.near_dup(1) == 1.0
    for bad in (-1, True, 1.5, "3"):
        with pytest.raises(ParameterError, match=r"^seed must be a whole number >= 0"):
            params.seed(bad)
    for bad in (0, 0.0, -0.1, 1.0001, float("nan"), True):
        with pytest.raises(ParameterError, match=r"^near_dup must be a Jaccard threshold"):
            params.near_dup(bad)
    with pytest.raises(ParameterError, match=r"^steps must be a positive integer, got 0$"):
        params.positive(0, "steps")


def test_a_message_naming_two_parameters_names_two_flags(run_cli, tmp_path: Path) -> None:
    from evalkit.splitting.api import split

    data = tmp_path / "t.jsonl"
    data.write_text('{"id": "a", "g": "x"}\n{"id": "b", "g": "y"}\n')
    with pytest.raises(ParameterError, match=r"^near_dup needs text COL: the column whose"):
        split(data, group=["g"], sizes=[1, 1], names=["a", "b"], near_dup=0.5)
    result = run_cli("split", data, "--out", tmp_path / "o", "--group", "g", "--sizes", "1,1",
                     "--names", "a,b", "--near-dup", "0.5")  # fmt: skip
    assert_one_line_error(result, "evalkit: error: --near-dup needs --text COL: the column whose")
