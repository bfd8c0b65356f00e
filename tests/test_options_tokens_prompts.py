"""``evalkit tokens`` and ``evalkit prompts``: one options object each (TokensParams,
PromptsParams), taken by the library and built into the click command."""

from __future__ import annotations

import dataclasses
import inspect
import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import ROOT, assert_one_line_error

from evalkit.cli import cli
from evalkit.errors import ParameterError
from evalkit.tokens.options import TokensParams

CHAT = ROOT / "examples" / "tickets" / "tickets_chat.jsonl"
TOKENIZER = ROOT / "examples" / "tokenizer"


def _fields(cls: type) -> set[str]:
    return {field.name for field in dataclasses.fields(cls)}


def _chat(tmp_path: Path, rows: int = 24) -> Path:
    lines = CHAT.read_text().splitlines()[:rows]
    path = tmp_path / "test.jsonl"
    path.write_text("".join(line + "\n" for line in lines))
    return path


def test_every_tokens_option_is_a_field_of_its_options_object() -> None:
    """The click command declares no tokens option of its own beyond input and output."""
    from evalkit.cli.tokens_cmd import tokens_command

    names = {param.name for param in tokens_command.params}
    assert names - _fields(TokensParams) == {
        "files", "tokenizer", "json_path", "html_path", "force", "quiet"
    }  # fmt: skip
    assert _fields(TokensParams) <= names


def test_the_options_modules_load_no_library() -> None:
    code = (
        "import sys, evalkit.tokens.options, evalkit.cli.tokens_cmd; "
        "print(sorted({'polars', 'pydantic', 'numpy', 'pyarrow'} & set(sys.modules)))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert loaded.stdout.strip() == "[]", loaded.stderr


def test_the_objects_check_their_values_naming_parameters() -> None:
    assert TokensParams(text="messages").text == ("messages",)
    assert TokensParams(text=["prompt", "completion"]).text == ("prompt", "completion")  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match=r"^text must name one column, two .* got 4$"):
        TokensParams(text=("a", "b", "c", "d"))
    with pytest.raises(ParameterError, match=r"^text names column 'a' twice$"):
        TokensParams(text=("a", "a"))
    with pytest.raises(ParameterError, match=r"^max_seq_length must be a positive number of tok"):
        TokensParams(text="m", max_seq_length=0)
    with pytest.raises(ParameterError, match=r"^sample must be >= 0 examples per split, got -1"):
        TokensParams(text="m", sample=-1)
    with pytest.raises(ParameterError, match=r"^seed must be a whole number >= 0"):
        TokensParams(text="m", seed=-2)
    with pytest.raises(ParameterError, match=r"^loss must be one of assistant, completion, all"):
        TokensParams(text="m", loss="prompt")  # type: ignore[arg-type]


def test_check_tokens_takes_its_options_object_or_keywords(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    import evalkit
    from evalkit.tokens.api import check_tokens

    data = _chat(tmp_path)
    options = {"text": "messages", "id_column": "ticket_id", "max_seq_length": 200}
    by_keywords = check_tokens([data], tokenizer=TOKENIZER, sample=2, seed=3, **options)
    given = TokensParams(text=("messages",), id_column="ticket_id", max_seq_length=200)
    by_object = check_tokens([data], given, tokenizer=TOKENIZER, sample=2, seed=3)
    assert by_keywords.report.model_dump() == by_object.report.model_dump()
    assert by_keywords.samples == by_object.samples
    assert by_object.report.options.max_seq_length == 200
    assert by_object.report.options.sample == 2 and len(by_object.samples) == 2
    assert check_tokens([data], given, tokenizer=TOKENIZER).report.options.sample == 0
    with pytest.raises(TypeError, match="unexpected keyword argument 'seq_len'"):
        check_tokens([data], tokenizer=TOKENIZER, text="messages", seq_len=200)
    signature = inspect.signature(check_tokens)
    assert list(signature.parameters)[:3] == ["files", "params", "tokenizer"]
    assert signature.parameters["max_seq_length"].default is None
    assert signature.parameters["truncation_mode"].default == "keep_start"
    assert inspect.signature(evalkit.check_tokens) == signature


def test_the_deprecated_seq_len_spelling_writes_the_same_report(run_cli, tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    data = _chat(tmp_path)
    args = ["tokens", data, "--tokenizer", TOKENIZER, "--text", "messages", "--quiet"]
    old = run_cli(*args, "--max-seq-length", "512", "--json", tmp_path / "old.json")
    new = run_cli(*args, "--seq-len", "512", "--json", tmp_path / "new.json")
    assert old.exit_code == new.exit_code == 0, old.stderr
    assert (tmp_path / "old.json").read_bytes() == (tmp_path / "new.json").read_bytes()
    assert json.loads((tmp_path / "new.json").read_text())["options"]["max_seq_length"] == 512
    assert "--max-seq-length is deprecated; use --seq-len" in old.stderr
    assert_one_line_error(run_cli(*args, "--seq-len", "0"), "--seq-len", "positive", "got 0")
    assert_one_line_error(
        run_cli(*args, "--text", "a", "--text", "b", "--text", "c"), "--text must name", "got 4"
    )


def test_a_zero_default_is_shown_in_help() -> None:
    """``--seed``'s default 0 is shown (0 == False must not hide it)."""
    text = CliRunner().invoke(cli, ["tokens", "--help"], terminal_width=200).output
    assert "Seed of the sample.  [default: 0]" in text
    assert "--max-seq-length (use --seq-len)" in text
