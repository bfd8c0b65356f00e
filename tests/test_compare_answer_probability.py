"""The agreed answer's probability, from a generate run's recorded top logits.

The run is written here as ``evalkit generate`` writes it (predictions.jsonl,
tokens.parquet with the top ids and logits, run.json with the hashes), with
the example tokenizer and chosen logits, so the expected probability can be
computed independently: the tokens that spell the answer are found from the
tokenizer's own character offsets (the code under test decodes prefixes),
and each step's probability is scipy's softmax over the recorded logits.
"""

from __future__ import annotations

import hashlib
import json
import random
import shutil
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from scipy.special import softmax

from evalkit import compare, score
from evalkit.comparison.answer_probability import answer_span
from evalkit.records._run import (
    BasePins,
    DataInfo,
    DeviceInfo,
    GenerationSettings,
    OutputsInfo,
    RunRecord,
    TokenizerPins,
)

ROOT = Path(__file__).resolve().parents[1]
TOKENIZER = ROOT / "examples" / "tokenizer"
CONTRACT = ROOT / "contracts" / "ticket-triage.yaml"
TOP_K = 8
# (id, gold category, what the model writes)
ITEMS = [
    ("T01", "billing", '{"category": "shipping", "priority": "low"}'),
    ("T02", "account", 'Sure: {"priority": "high", "category": "technical"}'),
    ("T03", "returns", '{"category": "returns", "priority": "normal"}'),
    ("T04", "fraud_report", '```json\n{"category": "legal_threat", "priority": "urgent"}\n```'),
]


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_run(folder: Path) -> tuple[Path, dict[str, tuple[list[int], list[list[float]]]]]:
    """A generate run for ITEMS; returns the predictions file and each id's (ids, logits)."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(TOKENIZER / "tokenizer.json"))
    eos = tokenizer.token_to_id("<|im_end|>")
    rng = random.Random(7)
    folder.mkdir(parents=True)
    rows, recorded = [], {}
    for item, _, text in ITEMS:
        ids = [*tokenizer.encode(text, add_special_tokens=False).ids, eos]
        top_ids, top_logits = [], []
        for token in ids:
            chosen = rng.uniform(4.0, 12.0)
            others = sorted(
                (rng.uniform(-2.0, chosen - 0.5) for _ in range(TOP_K - 1)), reverse=True
            )
            top_logits.append([chosen, *others])
            top_ids.append([token, *rng.sample(range(1000, 2000), TOP_K - 1)])
        rows.append(
            {
                "ticket_id": item,
                "batch": 0,
                "batch_row": len(rows),
                "prompt_ids": [1, 2, 3],
                "output_ids": ids,
                "stop": "eos",
                "top_ids": top_ids,
                "top_logits": top_logits,
            }
        )
        recorded[item] = (ids, top_logits)
    predictions = folder / "predictions.jsonl"
    predictions.write_text(
        "".join(json.dumps({"ticket_id": item, "output": text}) + "\n" for item, _, text in ITEMS)
    )
    pl.DataFrame(
        rows,
        schema={
            "ticket_id": pl.String,
            "batch": pl.Int32,
            "batch_row": pl.Int32,
            "prompt_ids": pl.List(pl.Int32),
            "output_ids": pl.List(pl.Int32),
            "stop": pl.String,
            "top_ids": pl.List(pl.List(pl.Int32)),
            "top_logits": pl.List(pl.List(pl.Float32)),
        },
    ).write_parquet(folder / "tokens.parquet")
    tokenizer_sha256 = sha256(TOKENIZER / "tokenizer.json")
    run = RunRecord(
        format_version=2,
        evalkit_version="0.1.0",
        kind="base",
        backend="hf",
        vllm=None,
        base=BasePins(path="base", files={}, config_sha256="c" * 64, weights_sha256="w" * 64),
        adapter=None,
        tokenizer=TokenizerPins(
            path=str(TOKENIZER),
            files={"tokenizer.json": tokenizer_sha256},
            sha256=tokenizer_sha256,
            chat_template_sha256=None,
            vocab_size=tokenizer.get_vocab_size(),
        ),
        generation=GenerationSettings(
            strategy="greedy",
            max_new_tokens=64,
            batch_size=len(ITEMS),
            padding_side="left",
            batch_order="longest_first",
            eos_token_ids=[eos],
            pad_token_id=eos,
            top_k_logits=TOP_K,
            model_generation_config={},
            not_applied={},
        ),
        device=DeviceInfo(type="cpu", name="x86_64", cuda=None),
        dtype="float32",
        versions={},
        data=DataInfo(
            path="test.jsonl",
            sha256="d" * 64,
            n=len(ITEMS),
            id_column="ticket_id",
            text_columns=["messages"],
        ),
        outputs=OutputsInfo(
            predictions_sha256=sha256(predictions),
            tokens_sha256=sha256(folder / "tokens.parquet"),
            stopped_at_eos=len(ITEMS),
            stopped_at_length=0,
        ),
    )  # as evalkit generate writes it: the one model of run.json
    (folder / "run.json").write_text(run.model_dump_json(indent=2))
    return predictions, recorded


def expected_probability(
    text: str, agreed: str, ids: list[int], logits: list[list[float]]
) -> float:
    """From the tokenizer's offsets: the steps whose characters overlap the answer's value."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(TOKENIZER / "tokenizer.json"))
    offsets = tokenizer.encode(text, add_special_tokens=False).offsets
    start = text.index(f'"{agreed}"') + 1
    end = start + len(agreed)
    product = 1.0
    for step, (a, b) in enumerate(offsets):
        if b > start and a < end:
            product *= float(softmax(np.array(logits[step], dtype=np.float64))[0])
    return product


@pytest.fixture
def results(tmp_path: Path) -> tuple[list[Path], dict]:
    pytest.importorskip("tokenizers")
    gold = tmp_path / "gold.jsonl"
    gold.write_text(
        "".join(
            json.dumps(
                {
                    "ticket_id": i,
                    "category": g,
                    "priority": "low",
                    "order_id": None,
                    "amount": None,
                    "text": f"ticket {i}",
                }
            )
            + "\n"
            for i, g, _ in ITEMS
        )
    )
    predictions, recorded = write_run(tmp_path / "run")
    copy = tmp_path / "copy.jsonl"
    shutil.copy(predictions, copy)  # the same outputs, not from a generate run
    folders = []
    for name, path in (("baseline", predictions), ("candidate", predictions), ("other", copy)):
        score(CONTRACT, gold, path, name=name, ledger=None).write(tmp_path / name)
        folders.append(tmp_path / name)
    return folders, recorded


def test_the_probability_of_the_agreed_answer(results: tuple[list[Path], dict]) -> None:
    folders, recorded = results
    report = compare(*folders)
    suspects = {s.id: s for s in report.suspect_labels}
    assert sorted(suspects) == ["T01", "T02", "T04"]  # T03's gold is what every model says
    for item, _, text in ITEMS:
        if item not in suspects:
            continue
        suspect = suspects[item]
        ids, logits = recorded[item]
        want = expected_probability(text, suspect.agreed, ids, logits)
        assert set(suspect.probabilities) == {"baseline", "candidate"}
        assert suspect.probabilities["baseline"] == pytest.approx(want, rel=1e-6)
        assert suspect.probability == pytest.approx(want, rel=1e-6)
        assert 0.0 < want < 1.0
    check = report.suspect_label_check
    assert check is not None
    assert check.probability_note.startswith("answer probabilities from evalkit generate's top-8")
    assert "for baseline, candidate" in check.probability_note


def test_a_changed_run_is_skipped_and_said(
    results: tuple[list[Path], dict], tmp_path: Path
) -> None:
    folders, _ = results
    tokens = tmp_path / "run" / "tokens.parquet"
    frame = pl.read_parquet(tokens)
    frame.with_columns(pl.lit("length").alias("stop")).write_parquet(tokens)
    report = compare(*folders)
    assert all(s.probability is None for s in report.suspect_labels)
    check = report.suspect_label_check
    assert check is not None
    assert "no result's predictions were written by evalkit generate" in check.probability_note
    assert "tokens.parquet changed since the run" in check.probability_note


def test_a_run_json_that_is_not_a_run_record_is_skipped_and_said(
    results: tuple[list[Path], dict], tmp_path: Path
) -> None:
    """run.json is read with its model (version checked): a partial or newer one is not used."""
    folders, _ = results
    run_json = tmp_path / "run" / "run.json"
    run = json.loads(run_json.read_text())
    for change in ({"format_version": 3}, {"generation": {"top_k_logits": TOP_K}}):
        run_json.write_text(json.dumps(run | change))
        check = compare(*folders).suspect_label_check
        assert check is not None
        assert f"{run_json} cannot be read" in check.probability_note


def test_answer_span_finds_the_class_value() -> None:
    text = '{"priority": "billing", "category": "billing"}'
    start, end = answer_span(text, "billing", "category") or (0, 0)
    assert text[start:end] == "billing" and start > text.index("category")
    assert answer_span("Billing.", "billing", None) == (0, 7)
    assert answer_span("nothing here", "billing", "category") is None
