"""Frames in: every library entry that takes a table takes a polars, pandas or pyarrow frame.

Each entry is run on a file and on the same rows as frames; the rows and
figures must be the same, and only the input's provenance differs (``path``
null, ``source: "frame"``, ``sha256`` the content hash of
:func:`evalkit.io.frame_sha256`).
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import evalkit
from evalkit.errors import InvalidTable, UsageError
from evalkit.io import frame_sha256, read_table

ROOT = Path(__file__).resolve().parents[1]
TICKETS = ROOT / "examples" / "tickets" / "tickets.jsonl"
CHATS = ROOT / "examples" / "tickets" / "tickets_chat.jsonl"
TOKENIZER = ROOT / "examples" / "tokenizer"
SPLIT = {
    "group": ["conversation_id"],
    "stratify": "category",
    "id_column": "ticket_id",
    "text": "text",
    "ratios": [0.8, 0.1, 0.1],
    "seed": 3,
}


@pytest.fixture(scope="module")
def tickets() -> pl.DataFrame:
    return pl.read_ndjson(TICKETS)


def _kinds(frame: pl.DataFrame) -> dict[str, object]:
    return {"polars": frame, "pandas": frame.to_pandas(), "pyarrow": frame.to_arrow()}


@pytest.mark.parametrize("kind", ["polars", "pandas", "pyarrow"])
def test_split_of_a_frame_gives_the_rows_of_the_file(tickets: pl.DataFrame, kind: str) -> None:
    from_file = evalkit.split(TICKETS, **SPLIT)
    from_frame = evalkit.split(_kinds(tickets)[kind], **SPLIT)
    for name in ("train", "val", "test"):
        assert from_frame.frames[name].equals(from_file.frames[name]), name
    given = from_frame.record.input
    assert (given.path, given.source) == (None, "frame")
    assert given.sha256 == frame_sha256(tickets)
    assert from_file.record.input.source is None
    assert from_frame.record.splits == from_file.record.splits
    # A file's manifest has no source key; a frame's says so.
    assert "source" not in from_file.record.to_json()["input"]  # type: ignore[operator]
    assert from_frame.record.to_json()["input"]["source"] == "frame"  # type: ignore[index]


def test_the_frame_hash_is_the_same_whatever_the_library(tickets: pl.DataFrame) -> None:
    kinds = _kinds(tickets).items()
    hashes = {kind: read_table(value, name="data").sha256 for kind, value in kinds}
    chunked = pl.concat([tickets.slice(0, 500), tickets.slice(500)], rechunk=False)
    hashes["chunked"] = read_table(chunked, name="data").sha256
    assert len(set(hashes.values())) == 1, hashes
    # Content decides it: one value changed, or the columns reordered, changes it.
    changed = tickets.with_columns(pl.col("text").str.replace("^.", "x"))
    assert frame_sha256(changed) != frame_sha256(tickets)
    assert frame_sha256(tickets.select(reversed(tickets.columns))) != frame_sha256(tickets)


def test_the_frame_hash_is_a_hand_checkable_serialisation() -> None:
    import hashlib

    frame = pl.DataFrame({"id": ["a", None], "n": [1, 2]})
    digest = hashlib.sha256(b"evalkit frame 1\x00")
    digest.update((2).to_bytes(8, "little") + (2).to_bytes(8, "little"))
    digest.update(b"id\x00large_string\x00" + bytes([0b10000000]))
    digest.update((1).to_bytes(4, "little") + (0).to_bytes(4, "little") + b"a")
    digest.update(b"n\x00int64\x00" + bytes([0b11000000]))
    digest.update((1).to_bytes(8, "little") + (2).to_bytes(8, "little"))
    assert frame_sha256(frame) == digest.hexdigest()


def test_pandas_specifics_become_what_a_file_would_give() -> None:
    frame = pd.DataFrame({"id": ["a", "b"], "x": [1.5, float("nan")], "c": ["u", "v"]})
    frame["c"] = frame["c"].astype("category")
    read = read_table(frame, name="data", ids=["id"]).frame
    assert read.schema == pl.Schema({"id": pl.String, "x": pl.Float64, "c": pl.String})
    assert read["x"].to_list() == [1.5, None]  # pandas' missing value is a null
    named = frame.set_index("id")
    assert read_table(named, name="data").frame.columns == ["id", "x", "c"]


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [
        (pd.DataFrame({0: ["a"]}), InvalidTable, "data frame: column name 0 is not text"),
        (pd.DataFrame([[1, 2]], columns=["a", "a"]), InvalidTable, "column 'a' appears twice"),
        (pd.DataFrame({"a": [object()]}), InvalidTable, "data frame:"),
        ([{"a": 1}], UsageError, "data: expected a path, or a polars, pandas or pyarrow table"),
        (pl.DataFrame({"id": [1.5]}), InvalidTable, "data frame"),
    ],
)
def test_a_bad_frame_is_one_line_naming_it(value: object, error: type, message: str) -> None:
    with pytest.raises(error) as raised:
        read_table(value, name="data", ids=["id"])  # type: ignore[arg-type]
    assert message in str(raised.value)
    assert "\n" not in str(raised.value)


def test_audit_of_frames_gives_the_figures_of_the_files(
    tickets: pl.DataFrame, tmp_path: Path
) -> None:
    parts = evalkit.split(tickets, **SPLIT).frames
    files = {}
    for name, part in parts.items():
        files[name] = tmp_path / f"{name}.jsonl"
        part.write_ndjson(files[name])
    options = {"id_column": "ticket_id", "text": "text", "group": ["conversation_id"]}
    from_files = evalkit.audit([files[n] for n in parts], **options)
    from_frames = evalkit.audit({n: p.to_pandas() for n, p in parts.items()}, **options)
    left, right = from_files.model_dump(mode="json"), from_frames.model_dump(mode="json")
    for name in parts:
        split_file, split_frame = left["splits"].pop(name), right["splits"].pop(name)
        assert (split_frame["path"], split_frame["source"]) == (None, "frame")
        assert split_frame["sha256"] == frame_sha256(parts[name])
        for key in ("path", "sha256", "source"):
            split_file.pop(key, None)
            split_frame.pop(key)
        assert split_frame == split_file
    left.pop("inputs", None), right.pop("inputs", None)
    assert right == left


def test_check_tokens_and_prompts_take_frames(tmp_path: Path) -> None:
    chats = pl.read_ndjson(CHATS).head(40)
    path = tmp_path / "test.jsonl"
    chats.write_ndjson(path)
    options = {"tokenizer": TOKENIZER, "text": "messages", "id_column": "ticket_id"}
    from_file = evalkit.check_tokens([path], **options).report.model_dump(mode="json")
    from_frame = evalkit.check_tokens({"test": chats.to_pandas()}, **options).report
    frame_split = from_frame.model_dump(mode="json")["splits"]["test"]
    file_split = from_file["splits"]["test"]
    assert (frame_split.pop("path"), frame_split.pop("source")) == (None, "frame")
    assert frame_split.pop("sha256") == frame_sha256(chats)
    file_split.pop("path"), file_split.pop("sha256")
    assert frame_split == file_split

    prompt_options = {"id_column": "ticket_id", "text": "messages", "model": "m"}
    written = evalkit.prompts(path, **prompt_options)
    given = evalkit.prompts(chats.to_arrow(), **prompt_options)
    assert given.n == written.n == 40
    assert given.source == "split frame"
    out_file, out_frame = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    written.write(out_file)
    given.write(out_frame)
    assert out_file.read_bytes() == out_frame.read_bytes()
    assert json.loads(out_file.read_text().splitlines()[0])["custom_id"] == "T00001"


def test_a_lazy_frame_and_an_arrow_batch_are_frames(tickets: pl.DataFrame) -> None:
    lazy = read_table(tickets.lazy(), name="data").frame
    batch = read_table(pa.RecordBatch.from_pandas(tickets.to_pandas()), name="data").frame
    assert lazy.equals(tickets) and batch.equals(tickets)


def test_generate_reads_the_prompts_of_a_frame_as_of_the_file(tmp_path: Path) -> None:
    from evalkit.model.prompts import read_prompts
    from evalkit.tokens.load import load_tokenizer

    chats = pl.read_ndjson(CHATS).head(12)
    path = tmp_path / "data.jsonl"
    chats.write_ndjson(path)
    tokenizer = load_tokenizer(TOKENIZER)
    options = {"tokenizer_folder": TOKENIZER}
    from_file = read_prompts(path, "ticket_id", ["messages"], tokenizer, **options)
    from_frame = read_prompts(chats.to_pandas(), "ticket_id", ["messages"], tokenizer, **options)
    assert from_frame.ids == from_file.ids
    assert from_frame.renders == from_file.renders
    assert from_frame.prompt_ids == from_file.prompt_ids
    with pytest.raises(InvalidTable, match=r"^data frame: has no rows"):
        read_prompts(chats.clear(), "ticket_id", ["messages"], tokenizer, **options)


def test_smoke_trains_on_the_sequences_of_a_frame_as_of_the_file(tmp_path: Path) -> None:
    from evalkit.tokens.api import measure_settings
    from evalkit.tokens.load import load_tokenizer, stop_token_ids
    from evalkit.tokens.sequences import choose_sequences, read_training_split

    chats = pl.read_ndjson(CHATS).head(16)
    path = tmp_path / "train.jsonl"
    chats.write_ndjson(path)
    tokenizer = load_tokenizer(TOKENIZER)
    settings = measure_settings(tokenizer, stop_token_ids(tokenizer, TOKENIZER), 512, "keep_start")
    chosen = []
    for data in (path, chats.to_arrow()):
        training = read_training_split(
            data, ["messages"], tokenizer, settings=settings, markers=False
        )
        picked = choose_sequences(training, tokenizer, steps=2, batch=2, seq_len=512, seed=0)
        chosen.append([(s.row, s.ids, s.supervised) for s in picked.sequences])
    assert chosen[0] == chosen[1]
    assert training.split.path is None and training.split.sha256 == frame_sha256(chats)
