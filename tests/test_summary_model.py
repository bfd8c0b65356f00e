"""summary.json has one model: what ``score`` writes is what compare, gate and rescore read.

The model that writes the file reads it back (its version checked, every key
typed, the adapter card inside as the card's own model): a result written
and read gives the same summary and, dumped again, the same bytes; a newer
file, a newer card inside, or a card that is not one is one line, exit 2.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from conftest import assert_one_line_error
from ticket_gold import gold_rows

import evalkit
from evalkit.comparison.results import load_result
from evalkit.errors import MalformedFile
from evalkit.records._card import AdapterCard
from evalkit.records._summary import ScoreSummary, summary_json

ROOT = Path(__file__).resolve().parents[1]
CONTRACT = ROOT / "contracts" / "ticket-triage.yaml"
MODEL = ROOT / "examples" / "model"


@pytest.fixture(scope="module")
def card() -> AdapterCard:
    return evalkit.adapter_card(MODEL / "adapter", base=MODEL / "base")


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    gold = pl.DataFrame(gold_rows(), schema_overrides={"amount": pl.Float64})
    outputs = [
        json.dumps({"category": "billing" if i % 7 else "shipping", "priority": row["priority"]})
        for i, row in enumerate(gold.iter_rows(named=True))
    ]
    gold_path, pred_path = tmp_path / "test.jsonl", tmp_path / "pred.jsonl"
    gold.write_ndjson(gold_path)
    pl.DataFrame({"ticket_id": gold["ticket_id"], "output": outputs}).write_ndjson(pred_path)
    return gold_path, pred_path


def _written(tmp_path: Path, files: tuple[Path, Path], **options: object) -> Path:
    result = evalkit.score(CONTRACT, *files, name="run", ledger=False, **options)
    return result.write(tmp_path / "run")


def _edit(folder: Path, change) -> None:
    path = folder / "summary.json"
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data, indent=2))


@pytest.mark.parametrize("carded", [False, True])
def test_what_score_writes_reads_back_to_the_same_model_and_bytes(
    tmp_path: Path, files: tuple[Path, Path], card: AdapterCard, carded: bool
) -> None:
    folder = _written(tmp_path, files, card=card if carded else None)
    written = (folder / "summary.json").read_bytes()
    summary = load_result(folder).summary
    assert type(summary) is ScoreSummary
    assert summary_json(summary) == written  # every key, in order, every value
    assert ScoreSummary.model_validate_json(written) == summary
    if carded:
        assert summary.card == card and isinstance(summary.card, AdapterCard)
        assert summary.base is not None and summary.base.source == "card"


def test_a_card_given_as_json_data_is_the_card(
    tmp_path: Path, files: tuple[Path, Path], card: AdapterCard
) -> None:
    as_data = evalkit.score(CONTRACT, *files, ledger=False, card=json.loads(card.model_dump_json()))
    assert as_data.summary.card == card
    with pytest.raises(MalformedFile, match=r"^card: key 'weights_sha256': field required"):
        evalkit.score(
            CONTRACT, *files, ledger=False, card=card.model_dump(exclude={"weights_sha256"})
        )


def test_compare_refuses_a_newer_summary_in_one_line(
    run_cli, tmp_path: Path, files: tuple[Path, Path]
) -> None:
    folder = _written(tmp_path, files)
    _edit(folder, lambda data: data.update(format_version=2))
    assert_one_line_error(
        run_cli("compare", folder, folder),
        f"{folder / 'summary.json'}: format_version 2 is newer than this evalkit reads "
        "(score summary 1); upgrade evalkit",
    )


def test_a_newer_card_inside_a_summary_is_refused_in_one_line(
    run_cli, tmp_path: Path, files: tuple[Path, Path], card: AdapterCard
) -> None:
    folder = _written(tmp_path, files, card=card)
    _edit(folder, lambda data: data["card"].update(card_version=3))
    assert_one_line_error(
        run_cli("gate", folder, folder),
        f"{folder / 'summary.json'}: card: card_version 3 is newer than this evalkit reads "
        "(adapter card 2); upgrade evalkit",
    )


def test_a_card_that_is_not_a_card_is_named_by_its_key(
    run_cli, tmp_path: Path, files: tuple[Path, Path], card: AdapterCard
) -> None:
    folder = _written(tmp_path, files, card=card)
    _edit(folder, lambda data: data["card"]["base"].pop("revision"))
    assert_one_line_error(
        run_cli("compare", folder, folder), "missing key 'card.base.revision'", "re-run evalkit"
    )


def test_a_result_in_memory_carries_the_model_score_returned(files: tuple[Path, Path]) -> None:
    from evalkit.comparison.results import scored_in_memory

    result = evalkit.score(CONTRACT, *files, name="run", ledger=False)
    assert scored_in_memory(result).summary is result.summary
