"""``evalkit prompts``: Batch requests and {id, messages} lines from every shape; bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from conftest import assert_one_line_error

SYSTEM = {"role": "system", "content": "Answer in JSON."}


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def read_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def conversation(user: str, answer: str | None = "A") -> list[dict[str, Any]]:
    turns = [SYSTEM, {"role": "user", "content": user}]
    if answer is not None:
        turns.append({"role": "assistant", "content": answer})
    return turns


def test_batch_requests_leave_out_the_reference_answer(run_cli, tmp_path: Path) -> None:
    multi_turn = [*conversation("q1", "a1"), {"role": "user", "content": "q2"},
                  {"role": "assistant", "content": "a2"}]  # fmt: skip
    rows = [
        {"id": 7, "messages": conversation("hello")},
        {"id": 8, "messages": multi_turn},
        {"id": 9, "messages": conversation("no answer yet", None)},
    ]
    data = write_jsonl(tmp_path / "test.jsonl", rows)
    out = tmp_path / "requests.jsonl"
    result = run_cli("prompts", data, "--id", "id", "--text", "messages", "--out", out,
                     "--model", "my-model", "--max-tokens", "64")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert "prompts: 3 conversations (messages)" in result.stdout
    assert "reference answers left out: 2" in result.stdout
    lines = read_lines(out)
    assert lines[0] == {
        "custom_id": "7",
        "method": "POST",
        "url": "/v1/chat/completions",
        "body": {
            "model": "my-model",
            "messages": [SYSTEM, {"role": "user", "content": "hello"}],
            "temperature": 0.0,
            "max_tokens": 64,
        },
    }
    # the last assistant turn goes; earlier ones stay (the model sees the whole history)
    assert lines[1]["body"]["messages"] == multi_turn[:-1]
    assert lines[2]["body"]["messages"] == conversation("no answer yet", None)
    again = tmp_path / "again.jsonl"
    run_cli("prompts", data, "--id", "id", "--text", "messages", "--out", again,
            "--model", "my-model", "--max-tokens", "64", "--quiet")  # fmt: skip
    assert again.read_bytes() == out.read_bytes()


def test_jsonl_lines_keep_the_id_and_normalise_sharegpt(run_cli, tmp_path: Path) -> None:
    chat = [{"from": "system", "value": "S"}, {"from": "human", "value": "q"},
            {"from": "gpt", "value": "a"}]  # fmt: skip
    data = write_jsonl(tmp_path / "test.jsonl", [{"id": 3, "conversations": chat}])
    out = tmp_path / "prompts.jsonl"
    result = run_cli("prompts", data, "--id", "id", "--text", "conversations", "--out", out,
                     "--format", "jsonl")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert read_lines(out) == [
        {
            "id": 3,
            "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "q"}],
        }
    ]


def test_prompt_completion_and_text_columns(run_cli, tmp_path: Path) -> None:
    frame = pl.DataFrame(
        {
            "id": ["a", "b"],
            "prompt": [conversation("q1", None), conversation("q2", None)],
            "completion": [[{"role": "assistant", "content": "x"}]] * 2,
            "text": ["plain one", "plain two"],
        }
    )
    frame.write_parquet(tmp_path / "test.parquet")
    out = tmp_path / "p.jsonl"
    result = run_cli("prompts", tmp_path / "test.parquet", "--id", "id", "--text", "prompt",
                     "--text", "completion", "--out", out, "--format", "jsonl")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert [line["messages"] for line in read_lines(out)] == frame["prompt"].to_list()
    result = run_cli("prompts", tmp_path / "test.parquet", "--id", "id", "--text", "text",
                     "--out", out, "--format", "jsonl", "--force")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert read_lines(out)[1] == {"id": "b", "messages": [{"role": "user", "content": "plain two"}]}


def test_parts_content_is_written_as_text(run_cli, tmp_path: Path) -> None:
    parts = [{"type": "text", "text": "look "}, {"type": "image_url", "image_url": {"url": "u"}},
             {"type": "text", "text": "here"}]  # fmt: skip
    rows = [{"id": "x", "messages": [{"role": "user", "content": parts}]}]
    data = write_jsonl(tmp_path / "test.jsonl", rows)
    out = tmp_path / "p.jsonl"
    result = run_cli("prompts", data, "--id", "id", "--text", "messages", "--out", out,
                     "--model", "m")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert read_lines(out)[0]["body"]["messages"] == [{"role": "user", "content": "look here"}]


@pytest.mark.parametrize(
    ("rows", "extra", "fragments"),
    [
        ([{"id": 1, "messages": conversation("q")}], [], ["--model"]),
        ([{"id": 1, "messages": conversation("q")}], ["--model", "m", "--format", "jsonl"],
         ["--model", "apply to --format openai-batch"]),
        ([{"id": 1, "messages": conversation("q")}], ["--model", "m", "--temperature", "3"],
         ["--temperature", "between 0 and 2"]),
        ([{"id": 1, "messages": conversation("q")}], ["--model", "m", "--max-tokens", "0"],
         ["--max-tokens", "at least 1"]),
        ([{"id": 1, "messages": conversation("q")}, {"id": 1, "messages": conversation("r")}],
         ["--model", "m"], ["id '1' occurs more than once"]),
        ([{"id": 1, "messages": conversation("q")}, {"id": None, "messages": conversation("r")}],
         ["--model", "m"], ["test.jsonl:2: no id in column 'id'"]),
        ([{"id": 1, "messages": [{"role": "assistant", "content": "only an answer"}]}],
         ["--model", "m"], ["test.jsonl:1: column", "nothing before the last assistant turn"]),
        ([{"id": 1, "messages": conversation("q")}, {"id": 2, "messages": [{"role": "user"}]}],
         ["--model", "m"], ["test.jsonl:2", "message 0", "no 'content'"]),
        ([{"id": 1, "messages": conversation("q")}, {"id": 2, "messages": "text"}],
         ["--model", "m"], ["test.jsonl:2", "holds text here but a conversation at line 1"]),
        ([{"id": 1, "other": "x"}], ["--model", "m"], ["no column 'messages'"]),
    ],
)  # fmt: skip
def test_bad_input_writes_nothing(
    run_cli, tmp_path: Path, rows: list[dict[str, Any]], extra: list[str], fragments: list[str]
) -> None:
    data = write_jsonl(tmp_path / "test.jsonl", rows)
    out = tmp_path / "p.jsonl"
    result = run_cli("prompts", data, "--id", "id", "--text", "messages", "--out", out, *extra)
    assert_one_line_error(result, *fragments)
    assert not out.exists()


def test_a_folder_or_an_existing_output_is_refused(run_cli, tmp_path: Path) -> None:
    (tmp_path / "split").mkdir()
    rows = [{"id": 1, "messages": conversation("q")}]
    data = write_jsonl(tmp_path / "split" / "test.jsonl", rows)
    result = run_cli("prompts", tmp_path / "split", "--id", "id", "--text", "messages", "--out",
                     tmp_path / "p.jsonl", "--model", "m")  # fmt: skip
    assert_one_line_error(result, "is a folder", "one split file")
    out = tmp_path / "p.jsonl"
    out.write_text("keep me")
    args = ["prompts", data, "--id", "id", "--text", "messages", "--out", out, "--model", "m"]
    assert_one_line_error(run_cli(*args), "exists already", "--force")
    assert out.read_text() == "keep me"
    assert run_cli(*args, "--force").exit_code == 0
    assert read_lines(out)[0]["custom_id"] == "1"
    assert_one_line_error(
        run_cli("prompts", data, "--id", "id", "--text", "messages", "--out", data, "--model", "m"),
        "would replace the input",
    )


def test_the_command_is_evalkit_prompts_with_out(run_cli, tmp_path: Path) -> None:
    """One run path: ``evalkit prompts`` writes what ``evalkit.prompts(..., out=)`` writes,
    and the call refuses what the command refuses, before the split is read."""
    import evalkit
    from evalkit.errors import OutputExists, UsageError

    data = write_jsonl(tmp_path / "test.jsonl", [{"id": 1, "messages": conversation("q")}])
    args = ["--id", "id", "--text", "messages", "--model", "m", "--max-tokens", "9"]
    assert run_cli("prompts", data, *args, "--out", tmp_path / "cli.jsonl").exit_code == 0
    made = evalkit.prompts(data, id_column="id", text=["messages"], model="m", max_tokens=9,
                           out=tmp_path / "library.jsonl")  # fmt: skip
    assert (tmp_path / "library.jsonl").read_bytes() == (tmp_path / "cli.jsonl").read_bytes()
    assert made.data == (tmp_path / "cli.jsonl").read_bytes()
    with pytest.raises(OutputExists, match="exists already; pass force=True"):
        evalkit.prompts(tmp_path / "missing.jsonl", id_column="id", text=["messages"],
                        model="m", out=tmp_path / "cli.jsonl")  # fmt: skip
    with pytest.raises(UsageError, match="would replace the input"):
        evalkit.prompts(data, id_column="id", text=["messages"], model="m", out=data, force=True)


def test_errors_name_the_jsonl_line_not_the_row(run_cli, tmp_path: Path) -> None:
    # A blank line holds no row: row 2 is line 3, and the line is what an editor shows.
    data = tmp_path / "test.jsonl"
    answer_only = [{"role": "assistant", "content": "only an answer"}]
    data.write_text(
        json.dumps({"id": 1, "messages": conversation("q")})
        + "\n\n"
        + json.dumps({"id": 2, "messages": answer_only})
        + "\n"
    )
    result = run_cli("prompts", data, "--id", "id", "--text", "messages", "--out",
                     tmp_path / "p.jsonl", "--model", "m")  # fmt: skip
    assert_one_line_error(result, "test.jsonl:3: column 'messages'", "nothing before")
