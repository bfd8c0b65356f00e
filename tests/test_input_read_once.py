"""Read once (issue 29): a command computes from and writes from the same bytes.

A split is written from the rows it read: an input rewritten (or moved) between
the read and the write changes nothing in the split files, and the manifest
records the hash of what was split. One malformed value in a conversation column
held as JSON text is exit 2 naming its row in every command that reads it, never a
silent switch to plain text.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import polars as pl
import pytest
from conftest import assert_one_line_error

import evalkit


def _rows(n: int) -> list[dict]:
    return [
        {"id": f"r{i:02d}", "g": f"g{i % 5}",
         "messages": [{"role": "user", "content": f"question {i % 8}"},
                      {"role": "assistant", "content": f"answer {i % 8}"}]}
        for i in range(n)
    ]  # fmt: skip


def _write(path: Path, rows: list[dict]) -> bytes:
    data = "".join(json.dumps(row) + "\n" for row in rows).encode()
    path.write_bytes(data)
    return data


def test_the_library_writes_the_rows_it_read(tmp_path: Path) -> None:
    path = tmp_path / "data.jsonl"
    original = _write(path, _rows(40))
    result = evalkit.split(path, group="g", id_column="id", sizes=[24, 16], names=["a", "b"])
    _write(path, list(reversed(_rows(40)))[:30])  # rewritten before the write
    result.write(tmp_path / "out", fmt="jsonl")
    written = {
        json.loads(line)["id"]: line
        for name in ("a", "b")
        for line in (tmp_path / "out" / f"{name}.jsonl").read_text().splitlines()
    }
    lines = original.decode().splitlines()
    assert sorted(written) == sorted(json.loads(line)["id"] for line in lines)
    assert set(written.values()) == set(lines)  # byte for byte, as first read
    assignments = pl.read_parquet(tmp_path / "out" / "assignments.parquet")
    for name in ("a", "b"):
        ids = set(assignments.filter(pl.col("split") == name)["id"].to_list())
        on_disk = (tmp_path / "out" / f"{name}.jsonl").read_text().splitlines()
        assert {json.loads(line)["id"] for line in on_disk} == ids
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["input"]["sha256"] == hashlib.sha256(original).hexdigest()


def test_the_command_writes_the_rows_it_read(run_cli, tmp_path: Path, monkeypatch) -> None:
    import evalkit.splitting.writeback as writeback

    path = tmp_path / "data.jsonl"
    original = _write(path, _rows(40))
    real = writeback.write_split

    def rewrite_first(*args):  # the file changes between read and write
        path.write_bytes(b"")
        return real(*args)

    monkeypatch.setattr(writeback, "write_split", rewrite_first)
    result = run_cli("split", path, "--out", tmp_path / "out", "--group", "g", "--id", "id",
                     "--sizes", "24,16", "--names", "a,b", "--format", "jsonl")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert path.read_bytes() == b""  # the rewrite did happen
    written = [
        line
        for name in ("a", "b")
        for line in (tmp_path / "out" / f"{name}.jsonl").read_text().splitlines()
    ]
    assert sorted(written) == sorted(original.decode().splitlines())
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["input"]["sha256"] == hashlib.sha256(original).hexdigest()


@pytest.fixture
def truncated_csv(tmp_path: Path) -> Path:
    """Messages as JSON text in a CSV column; six duplicates; one row's JSON cut short."""
    rows = _rows(12)
    texts = [json.dumps(row["messages"]) for row in rows]
    texts[7] = texts[7][:25]
    frame = pl.DataFrame({"id": [r["id"] for r in rows], "g": [r["g"] for r in rows],
                          "messages": texts})  # fmt: skip
    path = tmp_path / "chat.csv"
    frame.write_csv(path)
    return path


@pytest.mark.parametrize("command", ["split", "audit", "tokens", "prompts"])
def test_a_malformed_json_text_row_is_named_in_every_command(
    run_cli, truncated_csv: Path, tmp_path: Path, command: str
) -> None:
    common = ["--text", "messages", "--id", "id"]
    args = {
        "split": ["split", truncated_csv, "--out", tmp_path / "o", "--group", "g",
                  "--sizes", "6,6", "--names", "a,b", *common],
        "audit": ["audit", truncated_csv, truncated_csv.with_name("other.csv"), *common],
        "tokens": ["tokens", truncated_csv, "--tokenizer", "examples/tokenizer", *common],
        "prompts": ["prompts", truncated_csv, "--out", tmp_path / "p.jsonl", "--format",
                    "jsonl", *common],
    }[command]  # fmt: skip
    if command == "audit":
        truncated_csv.with_name("other.csv").write_bytes(truncated_csv.read_bytes())
    result = run_cli(*args)
    assert_one_line_error(result, "chat.csv, row 8", "column 'messages'", "is not JSON")
    assert not (tmp_path / "o").exists() and not (tmp_path / "p.jsonl").exists()


def test_the_same_column_without_the_bad_row_reads_as_conversations(truncated_csv: Path) -> None:
    """The check can pass: with the row fixed, audit finds the duplicates."""
    frame = pl.read_csv(truncated_csv)
    fixed = frame.with_columns(
        pl.when(pl.col("id") == "r07")
        .then(pl.lit(json.dumps(_rows(12)[7]["messages"])))
        .otherwise(pl.col("messages"))
        .alias("messages")
    )
    report = evalkit.audit({"train": fixed.head(6), "test": fixed.tail(6)},
                           id_column="id", text="messages")  # fmt: skip
    assert report.counts.exact_duplicates > 0
    assert all(split.shape == "messages" and split.json_text for split in report.splits.values())
