"""Prediction formats: plain tables, OpenAI Batch, lm-eval samples, Hugging Face folders."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pyarrow as pa
import pytest

from evalkit import read_predictions, score
from evalkit.errors import MalformedFile, UnknownColumn, UsageError
from evalkit.scoring.predictions import detect_format

ANSWER = '{"category": "billing"}'
CONTRACT = {"name": "fmt", "version": 1, "id": "qid", "class": "category",
            "fields": {"category": {"gold": "category"}}}  # fmt: skip


@pytest.fixture
def case(tmp_path: Path) -> Path:
    (tmp_path / "c.json").write_text(json.dumps(CONTRACT))
    gold = pl.DataFrame({"qid": ["q1", "q2", "q3"], "category": ["billing"] * 3})
    gold.write_parquet(tmp_path / "gold.parquet")
    return tmp_path


def _lines(path: Path, records: list) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _openai(custom_id: str, content: str | None = ANSWER, **extra: object) -> dict:
    body = {"id": "chatcmpl-1", "object": "chat.completion", "model": "m",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content}}]}  # fmt: skip
    response = {"status_code": 200, "request_id": "r", "body": body}
    record = {"id": f"b_{custom_id}", "custom_id": custom_id, "response": response, "error": None}
    record.update(extra)
    return record


def test_openai_batch_output_with_failed_requests(case: Path) -> None:
    path = _lines(case / "batch_output.jsonl", [
        _openai("q1"),
        _openai("q2", response=None, error={"code": "server_error", "message": "boom"}),
        _openai("q3", response={"status_code": 429, "body": {"error": {"message": "slow down"}}}),
    ])  # fmt: skip
    assert detect_format(path) == "openai-batch"
    result = score(case / "c.json", case / "gold.parquet", path)
    examples = result.examples
    assert examples["error"].to_list() == [None, "missing", "missing"]
    assert examples["error_detail"].to_list()[1:] == [
        "request failed: server_error: boom",
        "request failed: HTTP 429 slow down",
    ]
    assert result.summary.predictions.request_errors == 2
    assert result.summary.overall.missing == 2
    assert result.summary.predictions.format == "openai-batch"


def test_openai_responses_api_and_null_content(case: Path) -> None:
    responses = {"status_code": 200, "body": {"output": [{"type": "message", "content": [
        {"type": "output_text", "text": ANSWER}]}]}}  # fmt: skip
    path = _lines(case / "out.jsonl", [
        _openai("q1", response=responses), _openai("q2", content=None),
    ])  # fmt: skip
    table = read_predictions(path, default_id="qid")
    assert table.frame["output"].to_list() == [ANSWER, ""]


def test_lm_eval_samples(case: Path) -> None:
    samples = [
        {"doc_id": i, "doc": {"qid": f"q{i + 1}", "text": "..."}, "target": "billing",
         "arguments": {}, "resps": [[ANSWER]], "filtered_resps": [ANSWER], "filter": "none"}
        for i in range(3)
    ]  # fmt: skip
    path = _lines(case / "samples_triage_2024.jsonl", samples)
    assert detect_format(path) == "lm-eval"
    result = score(case / "c.json", case / "gold.parquet", path)
    assert result.summary.overall.content_correct == 3
    as_array = case / "samples.json"
    as_array.write_text(json.dumps(samples))
    assert detect_format(as_array) == "lm-eval"
    table = read_predictions(as_array, default_id="other", id_column="doc.qid")
    assert table.frame["id"].to_list() == ["q1", "q2", "q3"]
    by_doc_id = read_predictions(path, default_id="qid", id_column="doc_id")
    assert by_doc_id.frame["id"].to_list() == ["0", "1", "2"]
    with pytest.raises(UnknownColumn, match=r":1: the record has no id 'doc.ticket_id'"):
        read_predictions(path, default_id="ticket_id")


def test_lm_eval_loglikelihood_samples_are_refused(case: Path) -> None:
    path = _lines(case / "samples.jsonl", [{"doc": {"qid": "q1"}, "resps": [[[-1.5, False]]]}])
    with pytest.raises(UsageError, match="not generated text"):
        read_predictions(path, default_id="qid")


def _save_to_disk(folder: Path, table: pa.Table) -> Path:
    folder.mkdir()
    arrow_file = str(folder / "data-00000-of-00001.arrow")
    with pa.OSFile(arrow_file, "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    (folder / "state.json").write_text(json.dumps({
        "_data_files": [{"filename": "data-00000-of-00001.arrow"}],
        "_fingerprint": "abc", "_format_type": None, "_split": None,
    }))  # fmt: skip
    (folder / "dataset_info.json").write_text("{}")
    return folder


def test_hugging_face_save_to_disk_folder(case: Path) -> None:
    table = pa.table({"qid": ["q1", "q2"], "generation": [ANSWER, "nope"]})
    folder = _save_to_disk(case / "hf", table)
    assert detect_format(folder) == "hf"
    result = score(case / "c.json", case / "gold.parquet", folder, output_column="generation")
    assert result.examples["error"].to_list() == [None, "no_json", "missing"]
    assert len(result.summary.predictions.sha256) == 64
    (case / "dd").mkdir()
    (case / "dd" / "dataset_dict.json").write_text('{"splits": ["test"]}')
    _save_to_disk(case / "dd" / "test", table)
    with pytest.raises(UsageError, match="DatasetDict with splits test; choose one with"):
        detect_format(case / "dd")


def test_csv_and_parquet_tables(case: Path) -> None:
    pl.DataFrame({"qid": ["q1", "q2"], "text": [ANSWER, ANSWER]}).write_csv(case / "p.csv")
    result = score(case / "c.json", case / "gold.parquet", case / "p.csv", output_column="text")
    assert result.summary.overall.content_correct == 2
    parquet = pl.DataFrame({
        "qid": ["q1", "q2", "q3"],
        "output": [ANSWER.encode(), b'{"category": "bil\xffling"}', None],
    })  # fmt: skip
    parquet.write_parquet(case / "p.parquet")
    result = score(case / "c.json", case / "gold.parquet", case / "p.parquet")
    assert result.examples["error"].to_list() == [None, "invalid_json", "missing"]
    assert result.examples["error_detail"].to_list()[1] == "the output is not valid UTF-8"


def test_nested_id_path_in_plain_jsonl(case: Path) -> None:
    path = _lines(case / "p.jsonl", [{"meta": {"qid": "q1"}, "output": ANSWER}])
    table = read_predictions(path, default_id="qid", id_column="meta.qid")
    assert table.frame["id"].to_list() == ["q1"]


def test_invalid_utf8_and_lone_surrogates_in_jsonl_are_scored(case: Path) -> None:
    raw = (
        b'{"qid": "q1", "output": "{\\"category\\": \\"billing\\"}"}\n'
        b'{"qid": "q2", "output": "{\\"category\\": \\"bil\xff\\"}"}\n'
        b'{"qid": "q3", "output": "lone \\ud800 surrogate"}\n'
    )
    (case / "p.jsonl").write_bytes(raw)
    result = score(case / "c.json", case / "gold.parquet", case / "p.jsonl")
    assert result.examples["error"].to_list() == [None, "invalid_json", "invalid_json"]
    only_surrogate = b'{"qid": "q3", "output": "lone \\ud800 surrogate"}\n'
    (case / "s.jsonl").write_bytes(only_surrogate)
    table = read_predictions(case / "s.jsonl", default_id="qid")
    assert table.frame["invalid_utf8"].to_list() == [True]


def test_structured_outputs_are_refused(case: Path) -> None:
    path = _lines(case / "p.jsonl", [{"qid": "q1", "output": {"category": "billing"}}])
    with pytest.raises(UsageError, match="holds JSON objects or lists, not the raw model text"):
        read_predictions(path, default_id="qid")


def test_corrupt_line_is_named(case: Path) -> None:
    (case / "p.jsonl").write_text('{"qid": "q1", "output": "x"}\n{"qid": "q2", "out\n')
    with pytest.raises(MalformedFile, match=r"p\.jsonl:2: not a JSON object"):
        read_predictions(case / "p.jsonl", default_id="qid")
