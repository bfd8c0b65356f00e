"""How outputs are read and cut into chunks does not change what is scored."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from evalkit.scoring import predictions, workers
from evalkit.scoring.predictions import read_predictions


def test_jsonl_read_in_pieces_equals_the_whole_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "pred.jsonl"
    rows = [{"id": f"r{i}", "output": "x" * (i % 50) + "é\n{}", "extra": i} for i in range(500)]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    whole = read_predictions(path, default_id="id").frame
    monkeypatch.setattr(predictions.jsonl, "REFERENCE_BYTES", 0)
    monkeypatch.setattr(predictions, "PIECE_BYTES", 1000)
    pieces = read_predictions(path, default_id="id").frame
    assert pieces["output"].n_chunks() > 1
    assert pieces.equals(whole)
    assert whole["output"].to_list() == [row["output"] for row in rows]


@pytest.mark.parametrize("sizes", [[], [1], [7], [3, 3, 3], [2, 9, 1, 1, 20], [5, 5], [16, 4]])
def test_chunks_are_whole_and_consecutive(
    sizes: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(workers, "CHUNK_ROWS", 5)
    values = [f"t{i}" for i in range(sum(sizes))]
    pieces, start = [], 0
    for size in sizes:
        pieces.append(pl.Series(values[start : start + size], dtype=pl.String))
        start += size
    chunks = list(workers._chunks(pieces))
    assert pieces == []  # taken off the list as they are sent
    assert [value for chunk in chunks for value in chunk.to_list()] == values
    assert all(len(chunk) == 5 for chunk in chunks[:-1])
    assert all(0 < len(chunk) <= 5 for chunk in chunks)


def test_joined_chunks_gather_the_rows_of_their_outputs() -> None:
    from evalkit.scoring.workers import ParsedChunk, join_chunks

    def frame(values: list[str]) -> pl.DataFrame:
        return pl.DataFrame({"v": values})

    distinct = ParsedChunk(frame(["a", "b"]), pl.Series([1, 0, 1, 1], dtype=pl.UInt32))
    one_per_output = ParsedChunk(frame(["c", "d"]))
    joined = join_chunks([distinct, one_per_output, distinct])
    assert len(joined) == 10
    expected = ["b", "a", "b", "b", "c", "d", "b", "a", "b", "b"]
    everything = pl.Series(range(10), dtype=pl.Int64)
    assert joined.gather(everything)["v"].to_list() == expected
    picked = joined.gather(pl.Series([9, None, 4, 0], dtype=pl.Int64))
    assert picked["v"].to_list() == ["b", None, "c", "b"]
    assert join_chunks([one_per_output]).gather(pl.Series([1]))["v"].to_list() == ["d"]


@pytest.mark.parametrize("shuffle", [False, True])
def test_results_do_not_depend_on_how_many_processes_parse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shuffle: bool
) -> None:
    """One process, or this process and one or two workers sharing tiny chunks."""
    import random

    from evalkit import score

    contract = Path(__file__).resolve().parents[1] / "contracts" / "ticket-triage.yaml"
    rng = random.Random(7)
    body = '{{"category": "{}", "priority": "low", "order_id": null, "amount": {}}}'
    outputs = [
        rng.choice(
            [
                body.format("billing", rng.randrange(100)),
                "```json\n" + body.format("shipping", 1) + "\n```",
                "Here: " + body.format("account", rng.randrange(5)) + " ok",
                body.format("billing", 2)[:20],
                body.format("nope", 1),
                "",
                None,
            ]
        )
        for _ in range(300)
    ]
    ids = [f"T{i:04d}" for i in range(300)]
    gold = pl.DataFrame(
        {"ticket_id": ids, "category": ["billing"] * 300, "priority": ["low"] * 300},
    ).with_columns(pl.lit(None, pl.String).alias("order_id"), pl.lit(1.0).alias("amount"))
    gold.write_parquet(tmp_path / "gold.parquet")
    predictions = pl.DataFrame({"ticket_id": ids, "output": outputs})
    if shuffle:
        predictions = predictions.sample(fraction=1.0, shuffle=True, seed=3)
    predictions.write_ndjson(tmp_path / "pred.jsonl")
    monkeypatch.setattr(workers, "CHUNK_ROWS", 16)
    results = [
        score(contract, tmp_path / "gold.parquet", tmp_path / "pred.jsonl", workers=n, ledger=False)
        for n in (1, 2, 3)
    ]
    for result in results[1:]:
        assert result.examples.equals(results[0].examples)
        assert result.summary == results[0].summary
    assert results[0].summary.overall.format_valid > 0
    assert len(results[0].summary.errors) >= 4
