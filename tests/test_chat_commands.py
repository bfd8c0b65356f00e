"""split and audit on conversation columns: every shape, the --roles default, every bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from conftest import assert_one_line_error

# A long system prompt every example shares: 150 distinct words.
SYSTEM = "You triage tickets. " + " ".join(f"rule{i}" for i in range(150))
WORDS = [f"word{i}" for i in range(400)]


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def ticket(index: int) -> str:
    """A text of 12 words no other index shares (no accidental duplicates)."""
    rng = np.random.default_rng(index)
    return " ".join(rng.choice(WORDS, size=12, replace=False))


def turns(index: int) -> list[tuple[str, str]]:
    return [("system", SYSTEM), ("user", ticket(index)), ("assistant", f'{{"n": {index}}}')]


def messages_rows(n: int, parts: bool = False) -> list[dict[str, Any]]:
    rows = []
    for i in range(n):
        messages: list[dict[str, Any]] = []
        for role, text in turns(i):
            content: Any = text
            if parts:  # the same text split over two text parts, an image between them
                half = len(text) // 2
                content = [
                    {"type": "text", "text": text[:half]},
                    {"type": "image_url", "image_url": {"url": "file:///x.png"}},
                    {"type": "text", "text": text[half:]},
                ]
            messages.append({"role": role, "content": content})
        rows.append({"id": f"i{i:03d}", "g": f"g{i // 2}", "messages": messages})
    return rows


def sharegpt_rows(n: int) -> list[dict[str, Any]]:
    names = {"system": "system", "user": "human", "assistant": "gpt"}
    return [
        {
            "id": f"i{i:03d}",
            "g": f"g{i // 2}",
            "conversations": [{"from": names[r], "value": t} for r, t in turns(i)],
        }
        for i in range(n)
    ]


def prompt_completion_rows(n: int) -> list[dict[str, Any]]:
    rows = []
    for i in range(n):
        (_, system), (_, user), (_, answer) = turns(i)
        rows.append(
            {
                "id": f"i{i:03d}",
                "g": f"g{i // 2}",
                "prompt": [
                    {"role": "system", "content": system},
                    {"role": "user", "content": user},
                ],
                "completion": [{"role": "assistant", "content": answer}],
            }
        )
    return rows


def expected_lengths(n: int) -> dict[str, int]:
    """Characters of every turn, system prompt included, per id (computed independently)."""
    return {f"i{i:03d}": sum(len(text) for _, text in turns(i)) for i in range(n)}


def length_stats(values: list[int]) -> dict[str, float]:
    p50, p95 = np.percentile(values, [50, 95])
    return {"min": min(values), "p50": round(float(p50), 4), "p95": round(float(p95), 4),
            "max": max(values), "unit": "chars"}  # fmt: skip


SHAPES = {
    "messages": (messages_rows, ["messages"], "messages"),
    "parts": (lambda n: messages_rows(n, parts=True), ["messages"], "messages"),
    "sharegpt": (sharegpt_rows, ["conversations"], "sharegpt"),
    "prompt-completion": (prompt_completion_rows, ["prompt", "completion"], "messages"),
}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_split_reads_every_shape_and_counts_every_turn(run_cli, tmp_path: Path, shape: str) -> None:
    make, columns, written = SHAPES[shape]
    data = write_jsonl(tmp_path / "chat.jsonl", make(40))
    text_args = [arg for column in columns for arg in ("--text", column)]
    out = tmp_path / "split"
    result = run_cli("split", data, "--out", out, "--group", "g", "--id", "id", *text_args,
                     "--sizes", "30,10", "--names", "train,test", "--near-dup", "0.8")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["text"] == {
        "columns": columns,
        "kind": "conversation",
        "shape": written,
        "compared_roles": ["user", "assistant", "tool"],
        "skipped_parts": 3 * 40 if shape == "parts" else 0,
        "json_text": False,
        "system_column": None,
        "system_added": 0,
        "system_kept": 0,
        "tools_column": None,
        "tool_calls": 0,
        "untrained_turns": 0,
    }
    assert manifest["options"]["text"] == columns[0]
    assert manifest["options"]["completion"] == (columns[1] if len(columns) > 1 else None)
    assert manifest["merging"]["merged_groups"] == 0  # the shared system prompt is no duplicate
    assignments = pl.read_parquet(out / "assignments.parquet")
    lengths = expected_lengths(40)
    for name in ("train", "test"):
        ids = assignments.filter(pl.col("split") == name)["id"].to_list()
        assert manifest["splits"][name]["length"] == length_stats([lengths[i] for i in ids])
    assert "text: conversations" in result.stdout


def test_split_output_keeps_the_conversations_as_written(run_cli, tmp_path: Path) -> None:
    rows = sharegpt_rows(10)
    data = write_jsonl(tmp_path / "chat.jsonl", rows)
    out = tmp_path / "split"
    result = run_cli("split", data, "--out", out, "--group", "g", "--id", "id", "--text",
                     "conversations", "--sizes", "6,4", "--names", "a,b", "--format", "jsonl",
                     "--quiet")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    written = [json.loads(line) for name in "ab" for line in (out / f"{name}.jsonl").open()]
    assert sorted(written, key=lambda row: row["id"]) == rows


def test_roles_choose_the_compared_turns(run_cli, tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "chat.jsonl", messages_rows(40))
    common = ["--group", "g", "--id", "id", "--text", "messages", "--sizes", "30,10",
              "--names", "train,test", "--near-dup", "0.8", "--quiet"]  # fmt: skip
    with_system = run_cli("split", data, "--out", tmp_path / "s", *common, "--roles", "system,user")
    assert with_system.exit_code == 0, with_system.stderr
    manifest = json.loads((tmp_path / "s" / "manifest.json").read_text())
    # 80% of each compared text is the shared prompt: every group merges into one
    assert manifest["merging"]["merged_groups"] == 19
    assert manifest["options"]["roles"] == ["system", "user"]
    assert manifest["text"]["compared_roles"] == ["system", "user"]


def test_audit_leaves_out_the_system_prompt_by_default(run_cli, tmp_path: Path) -> None:
    rows = messages_rows(20)
    write_jsonl(tmp_path / "train.jsonl", rows[:10])
    write_jsonl(tmp_path / "test.jsonl", rows[10:])
    files = [tmp_path / "train.jsonl", tmp_path / "test.jsonl"]
    clean = run_cli("audit", *files, "--id", "id", "--text", "messages", "--json",
                    tmp_path / "a.json")  # fmt: skip
    assert clean.exit_code == 0, clean.stdout + clean.stderr
    report = json.loads((tmp_path / "a.json").read_text())
    assert report["options"]["roles"] == ["user", "assistant", "tool"]
    assert report["splits"]["train"]["shape"] == "messages"
    assert "compared: the user, assistant, tool turns" in clean.stdout
    leaky = run_cli("audit", *files, "--id", "id", "--text", "messages", "--roles", "system",
                    "--quiet")  # fmt: skip
    assert leaky.exit_code == 1  # the same system prompt in every item: all exact duplicates


def test_audit_compares_prompt_completion_columns(run_cli, tmp_path: Path) -> None:
    rows = prompt_completion_rows(12)
    copy = {**rows[0], "id": "copy", "g": "other"}
    write_jsonl(tmp_path / "train.jsonl", rows[:6])
    write_jsonl(tmp_path / "test.jsonl", [*rows[6:], copy])
    result = run_cli("audit", tmp_path / "train.jsonl", tmp_path / "test.jsonl", "--id", "id",
                     "--text", "prompt", "--text", "completion", "--json", tmp_path / "a.json",
                     "--quiet")  # fmt: skip
    assert result.exit_code == 1
    report = json.loads((tmp_path / "a.json").read_text())
    assert report["options"]["completion"] == "completion"
    assert [(p["a"], p["b"]) for p in report["exact_duplicates"]] == [("i000", "copy")]


def test_a_plain_text_split_can_be_audited_against_conversations(run_cli, tmp_path: Path) -> None:
    rows = messages_rows(6)
    write_jsonl(tmp_path / "train.jsonl", rows)
    plain = [{"id": "p1", "messages": ticket(3)}, {"id": "p2", "messages": "unrelated words"}]
    write_jsonl(tmp_path / "test.jsonl", plain)
    result = run_cli("audit", tmp_path / "train.jsonl", tmp_path / "test.jsonl", "--id", "id",
                     "--text", "messages", "--roles", "user", "--json", tmp_path / "a.json",
                     "--quiet")  # fmt: skip
    assert result.exit_code == 1
    report = json.loads((tmp_path / "a.json").read_text())
    assert [(p["a"], p["b"]) for p in report["exact_duplicates"]] == [("i003", "p1")]
    assert report["splits"]["test"]["shape"] == "text"


def test_tokenizer_lengths_of_a_conversation_are_not_guessed(run_cli, tmp_path: Path) -> None:
    from tokenizers import Tokenizer, models, pre_tokenizers

    tokenizer = Tokenizer(models.WordLevel({"[UNK]": 0, "fine": 1}, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.save(str(tmp_path / "tokenizer.json"))
    data = write_jsonl(tmp_path / "chat.jsonl", messages_rows(6))
    out = tmp_path / "split"
    result = run_cli("split", data, "--out", out, "--group", "g", "--text", "messages",
                     "--tokenizer", tmp_path / "tokenizer.json", "--sizes", "4,2",
                     "--names", "a,b")  # fmt: skip
    assert_one_line_error(result, "--tokenizer", "holds conversations", "chat template")
    assert not out.exists()
    # two text columns (prompt, completion) are counted in tokens, added up
    plain = [{"id": i, "g": i, "p": "fine fine", "c": "fine" if i % 2 else None} for i in range(6)]
    data = write_jsonl(tmp_path / "plain.jsonl", plain)
    result = run_cli("split", data, "--out", out, "--group", "g", "--id", "id", "--text", "p",
                     "--text", "c", "--tokenizer", tmp_path / "tokenizer.json", "--sizes", "3,3",
                     "--names", "a,b", "--quiet")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assignments = pl.read_parquet(out / "assignments.parquet")
    for name in "ab":
        ids = assignments.filter(pl.col("split") == name)["id"].to_list()
        tokens = [2 + (1 if i % 2 else 0) for i in ids]
        assert manifest["splits"][name]["length"] == {**length_stats(tokens), "unit": "tokens"}


def test_roles_need_a_text_column(run_cli, tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "chat.jsonl", messages_rows(6))
    result = run_cli("split", data, "--out", tmp_path / "o", "--group", "g", "--roles", "user",
                     "--sizes", "4,2", "--names", "a,b")  # fmt: skip
    assert_one_line_error(result, "--roles needs --text")
    result = run_cli("split", data, "--out", tmp_path / "o", "--group", "g", "--text", "messages",
                     "--roles", "user,narrator", "--sizes", "4,2", "--names", "a,b")  # fmt: skip
    assert_one_line_error(result, "--roles", "unknown role 'narrator'")
    assert not (tmp_path / "o").exists()


# --- bad input: exit 2, one line naming file, line and message; nothing written --------

GOOD_ROW = {"id": "ok", "g": "g0", "messages": [{"role": "user", "content": "fine"}]}
BAD_INPUTS = {
    "not a list": ({"role": "user", "content": "x"}, ["is an object, not a list"]),
    "no role": ([{"content": "x"}], ["message 0", "no 'role'"]),
    "no content": ([{"role": "user", "content": "a"}, {"role": "user"}], ["message 1", "content"]),
    "unknown role": ([{"role": "bot", "content": "x"}], ["message 0", "unknown role 'bot'"]),
    "empty": ([], ["empty list"]),
    "mixed": ("some text", ["holds text here but a conversation at line 1"]),
}


def bad_file(path: Path, value: Any) -> Path:
    rows = [
        GOOD_ROW,
        GOOD_ROW | {"id": "ok2", "g": "g1"},
        {"id": "bad", "g": "g2", "messages": value},
    ]
    return write_jsonl(path, rows)


@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_split_refuses_a_malformed_conversation(run_cli, tmp_path: Path, case: str) -> None:
    value, fragments = BAD_INPUTS[case]
    data = bad_file(tmp_path / "chat.jsonl", value)
    out = tmp_path / "split"
    result = run_cli("split", data, "--out", out, "--group", "g", "--id", "id", "--text",
                     "messages", "--sizes", "2,1", "--names", "a,b")  # fmt: skip
    assert_one_line_error(result, f"{data}:3", "column 'messages'", *fragments)
    assert not out.exists()


@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_audit_refuses_a_malformed_conversation(run_cli, tmp_path: Path, case: str) -> None:
    value, fragments = BAD_INPUTS[case]
    train = write_jsonl(tmp_path / "train.jsonl", [GOOD_ROW])
    test = bad_file(tmp_path / "test.jsonl", value)
    report = tmp_path / "audit.json"
    result = run_cli("audit", train, test, "--id", "id", "--text", "messages", "--json", report)
    assert_one_line_error(result, f"{test}:3", "column 'messages'", *fragments)
    assert not report.exists()


def test_parquet_conversations_name_the_row(run_cli, tmp_path: Path) -> None:
    frame = pl.DataFrame(
        {
            "id": ["a", "b"],
            "g": ["1", "2"],
            "messages": [[{"role": "user", "content": "x"}], [{"role": "bot", "content": "y"}]],
        }
    )
    frame.write_parquet(tmp_path / "chat.parquet")
    out = tmp_path / "split"
    result = run_cli("split", tmp_path / "chat.parquet", "--out", out, "--group", "g", "--text",
                     "messages", "--sizes", "1,1", "--names", "a,b")  # fmt: skip
    assert_one_line_error(result, "chat.parquet, row 2", "message 0", "unknown role 'bot'")
    assert not out.exists()


def test_audit_reads_jsonl_the_same_way_on_either_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pyarrow reads a JSONL split (exact types) unless it refuses; the report is the same."""
    import evalkit.io._json_rules
    from evalkit import audit
    from evalkit.io import read_table

    monkeypatch.setattr(evalkit.io._json_rules, "REFERENCE_BYTES", 0)

    def rows(offset: int, day: bool) -> list[dict[str, Any]]:
        return [
            {
                "id": offset + i,  # numbers, read as text
                "g": f"2024-01-0{1 + i % 3}" if day else 1.5 * (i % 3),  # dates, floats
                "flag": i % 2 == 0,
                "messages": [{"role": "user", "content": ticket(i % 4)}],
            }
            for i in range(8)
        ]

    train = write_jsonl(tmp_path / "train.jsonl", rows(0, day=False))
    test = write_jsonl(tmp_path / "test.jsonl", rows(100, day=True))
    assert read_table(train).arrow_typed  # pyarrow path
    assert not read_table(test).arrow_typed  # ISO dates: pyarrow would make timestamps of them
    options = {"id_column": "id", "text": "messages", "group": ["g", "flag"]}
    from_files = audit([train, test], **options)
    from_frames = audit({"train": read_table(train), "test": read_table(test)}, **options)
    assert from_files.counts.exact_duplicates == 16
    assert from_files.model_dump(exclude={"splits"}) == from_frames.model_dump(exclude={"splits"})
    assert from_files.group_leaks == from_frames.group_leaks


@pytest.mark.parametrize("paired", [False, True])
def test_split_reads_a_text_column_null_in_every_row(run_cli, tmp_path: Path, paired: bool) -> None:
    # polars types it Null; split's lengths once failed on it with a polars error.
    rows = [{"id": f"i{i}", "g": f"g{i}", "p": f"a b {i}", "t": None} for i in range(4)]
    path = write_jsonl(tmp_path / "t.jsonl", rows)
    out = tmp_path / "split"
    text = ["--text", "p", "--text", "t"] if paired else ["--text", "t"]
    result = run_cli("split", path, "--out", out, "--group", "g", "--id", "id", *text,
                     "--sizes", "2,2", "--names", "a,b")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    length = json.loads((out / "manifest.json").read_text())["splits"]["a"]["length"]
    expected = {"min": 5, "p50": 5, "p95": 5, "max": 5, "unit": "chars"}
    assert length == (expected if paired else None)


def test_roles_that_no_turn_has_are_refused(run_cli, tmp_path: Path) -> None:
    # Every item would compare as empty text: the audit would find nothing and exit 0.
    train = write_jsonl(tmp_path / "train.jsonl", messages_rows(4))
    test = write_jsonl(tmp_path / "test.jsonl", messages_rows(4))
    result = run_cli("audit", train, test, "--id", "id", "--text", "messages", "--roles", "tool")
    assert_one_line_error(result, "--roles tool", "no conversation has such a turn",
                          "system, user, assistant")  # fmt: skip
    result = run_cli("audit", train, test, "--id", "id", "--text", "messages", "--roles",
                     "tool,user")  # fmt: skip
    assert result.exit_code == 1, result.stderr  # the user turns are the same: leaks
    out = tmp_path / "split"
    result = run_cli("split", train, "--out", out, "--group", "g", "--text", "messages",
                     "--roles", "tool", "--near-dup", "0.8", "--sizes", "2,2",
                     "--names", "a,b")  # fmt: skip
    assert_one_line_error(result, "--roles tool", "no conversation has such a turn")
    assert not out.exists()


@pytest.mark.parametrize(
    ("messages", "reason"),
    [
        ([None, {"role": "user", "content": "x"}], "is null, not an object"),
        ([{"role": "user", "content": [None, {"type": "text", "text": "a"}]}], "part 0 is null"),
    ],
)
def test_audit_names_a_null_message_that_polars_cannot_take_from_arrow(
    run_cli, tmp_path: Path, messages: list[Any], reason: str
) -> None:
    # pyarrow reads these lists, but polars.from_arrow fails on them when they come
    # first ("offsets must not exceed the values length"): the audit must fall back to
    # polars' own reader and name the message.
    import evalkit.io._json_rules
    from evalkit.io import read_table

    rows = [{"id": name, "g": "g", "messages": messages} for name in ("b", "d")]
    test = write_jsonl(tmp_path / "test.jsonl", rows)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(evalkit.io._json_rules, "REFERENCE_BYTES", 0)
        assert not read_table(test).arrow_typed
    train = write_jsonl(tmp_path / "train.jsonl", [GOOD_ROW | {"id": "c"}])
    result = run_cli("audit", train, test, "--id", "id", "--text", "messages")
    assert_one_line_error(result, f"{test}:1", "message 0", reason)
