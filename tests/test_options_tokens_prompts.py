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

from evalkit.chat.prompt_options import PromptsParams
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


def test_every_prompts_option_is_a_field_of_its_options_object() -> None:
    from evalkit.cli.prompts_cmd import prompts_command

    names = {param.name for param in prompts_command.params}
    assert names - _fields(PromptsParams) == {"split", "out", "force", "quiet"}
    assert _fields(PromptsParams) <= names


def test_the_options_modules_load_no_library() -> None:
    code = (
        "import sys, evalkit.tokens.options, evalkit.chat.prompt_options, evalkit.cli.tokens_cmd, "
        "evalkit.cli.prompts_cmd; "
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
    with pytest.raises(ParameterError, match=r"^seq_len must be a positive number of tokens"):
        TokensParams(text="m", seq_len=0)
    with pytest.raises(ParameterError, match=r"^sample must be >= 0 examples per split, got -1"):
        TokensParams(text="m", sample=-1)
    with pytest.raises(ParameterError, match=r"^seed must be a whole number >= 0"):
        TokensParams(text="m", seed=-2)
    with pytest.raises(ParameterError, match=r"^loss must be one of assistant, completion, all"):
        TokensParams(text="m", loss="prompt")  # type: ignore[arg-type]
    base = {"id_column": "id", "text": "messages"}
    with pytest.raises(ParameterError, match=r"^max_tokens must be at least 1, got 0$"):
        PromptsParams(**base, max_tokens=0)  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match=r"^temperature must be between 0 and 2, got 3$"):
        PromptsParams(**base, temperature=3)  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match=r"^format must be one of openai-batch, jsonl"):
        PromptsParams(**base, format="csv")  # type: ignore[arg-type]
    assert PromptsParams(**base, temperature=1).temperature == 1  # type: ignore[arg-type]


def test_check_tokens_takes_its_options_object_or_keywords(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    import evalkit
    from evalkit.tokens.api import check_tokens

    data = _chat(tmp_path)
    options = {"text": "messages", "id_column": "ticket_id", "seq_len": 200}
    by_keywords = check_tokens([data], tokenizer=TOKENIZER, sample=2, seed=3, **options)
    given = TokensParams(text=("messages",), id_column="ticket_id", seq_len=200)
    by_object = check_tokens([data], given, tokenizer=TOKENIZER, sample=2, seed=3)
    assert by_keywords.report.model_dump() == by_object.report.model_dump()
    assert by_keywords.samples == by_object.samples
    assert by_object.report.options.max_seq_length == 200
    assert by_object.report.options.sample == 2 and len(by_object.samples) == 2
    assert check_tokens([data], given, tokenizer=TOKENIZER).report.options.sample == 0
    with pytest.raises(TypeError, match="unexpected keyword argument 'max_length'"):
        check_tokens([data], tokenizer=TOKENIZER, text="messages", max_length=200)
    signature = inspect.signature(check_tokens)
    assert list(signature.parameters)[:3] == ["files", "params", "tokenizer"]
    assert signature.parameters["seq_len"].default is None
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


def test_prompts_takes_its_options_object_or_keywords(tmp_path: Path) -> None:
    import evalkit
    from evalkit.chat.prompts import prompts

    data = _chat(tmp_path)
    options = {"id_column": "ticket_id", "text": "messages", "model": "m", "max_tokens": 64}
    by_keywords = prompts(data, **options)
    by_object = prompts(data, PromptsParams(**options))  # type: ignore[arg-type]
    assert by_keywords == by_object
    assert by_keywords.n == 24
    changed = prompts(data, PromptsParams(**options), format="jsonl", model=None, max_tokens=None)  # type: ignore[arg-type]
    assert changed.format == "jsonl" and changed.n == 24
    with pytest.raises(TypeError, match="unexpected keyword argument 'fmt'"):
        prompts(data, **options, fmt="jsonl")
    with pytest.raises(ParameterError, match=r"^model must be given"):
        prompts(data, id_column="ticket_id", text="messages")
    signature = inspect.signature(prompts)
    assert list(signature.parameters)[:2] == ["split", "params"]
    assert signature.parameters["format"].default == "openai-batch"
    assert inspect.signature(evalkit.prompts) == signature


def test_prompts_reads_a_dataset_dict_split_from_python_too(tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    from evalkit.chat.prompts import prompts

    data = _chat(tmp_path)
    records = [json.loads(line) for line in data.read_text().splitlines()]
    folder = tmp_path / "dd"
    datasets.DatasetDict({"test": datasets.Dataset.from_list(records)}).save_to_disk(str(folder))
    options = {"id_column": "ticket_id", "text": "messages", "model": "m"}
    assert prompts(folder, **options, hf_split="test").data == prompts(data, **options).data
    with pytest.raises(ParameterError, match=r"^hf_split no: .* is not a Hugging Face Data"):
        prompts(data, **options, hf_split="no")
    import polars as pl

    with pytest.raises(ParameterError, match=r"^hf_split test: the split is a frame"):
        prompts(pl.DataFrame(records), **options, hf_split="test")


def test_a_zero_default_is_shown_in_help() -> None:
    """``--seed``'s default 0 is shown (0 == False must not hide it)."""
    text = CliRunner().invoke(cli, ["tokens", "--help"], terminal_width=200).output
    assert "Seed of the sample.  [default: 0]" in text
    assert "--max-seq-length (use --seq-len)" in text
