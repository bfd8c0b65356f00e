"""Gold from reference answers (``gold_answer``) and the round trip prompts -> Batch -> score."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import polars as pl
import pytest
from conftest import assert_one_line_error

from evalkit import load_contract, score
from evalkit.contract.fingerprint import normalized_contract

ROOT = Path(__file__).resolve().parents[1]
TRIAGE = ROOT / "contracts" / "ticket-triage.yaml"
TRIAGE_CHAT = ROOT / "contracts" / "ticket-triage-chat.yaml"
LABELS = ROOT / "contracts" / "ticket-category-label.yaml"
sys.path.insert(0, str(ROOT / "examples" / "tickets"))

from generate import as_conversation, generate  # noqa: E402

FIGURES = ("overall", "fields", "classes", "slices", "errors")


def _simulator() -> ModuleType:
    path = ROOT / "examples" / "tickets" / "simulate_predictions.py"
    spec = importlib.util.spec_from_file_location("simulate_predictions", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def tickets(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The example tickets as flat gold columns, as messages and as ShareGPT, + predictions."""
    folder = tmp_path_factory.mktemp("tickets")
    records = generate(600, 13)
    flat = pl.DataFrame(records)
    flat.write_parquet(folder / "gold.parquet")
    write_jsonl(folder / "chat.jsonl", [as_conversation(r) for r in records])
    write_jsonl(folder / "sharegpt.jsonl", [as_conversation(r, "sharegpt") for r in records])
    simulated = _simulator().simulate(flat, seed=5)
    for model, rows in simulated.items():
        write_jsonl(folder / f"{model}.jsonl", rows)
    return {"folder": folder}


def test_prompts_batch_output_and_gold_answer_give_the_flat_figures(
    run_cli, tickets: dict[str, Path]
) -> None:
    folder = tickets["folder"]
    simulator = _simulator()
    batch = folder / "requests.jsonl"
    result = run_cli("prompts", folder / "chat.jsonl", "--id", "ticket_id", "--text",
                     "messages", "--out", batch, "--model", "ticket-triage-ft",
                     "--max-tokens", "200")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    requests = [json.loads(line) for line in batch.read_text().splitlines()]
    assert len(requests) == 600
    for model in ("baseline", "candidate-a", "candidate-b"):
        rows = [json.loads(line) for line in (folder / f"{model}.jsonl").read_text().splitlines()]
        output = write_jsonl(
            folder / f"{model}.batch.jsonl", simulator.batch_output(requests, rows)
        )
        flat_out, chat_out = folder / f"flat-{model}", folder / f"chat-{model}"
        flat = run_cli("score", "--contract", TRIAGE, "--gold", folder / "gold.parquet", "--pred",
                       folder / f"{model}.jsonl", "--out", flat_out, "--quiet")  # fmt: skip
        chat = run_cli("score", "--contract", TRIAGE_CHAT, "--gold", folder / "chat.jsonl",
                       "--pred", output, "--pred-format", "openai-batch", "--out", chat_out,
                       "--quiet")  # fmt: skip
        assert flat.exit_code == chat.exit_code == 0, flat.stderr + chat.stderr
        flat_summary = json.loads((flat_out / "summary.json").read_text())
        chat_summary = json.loads((chat_out / "summary.json").read_text())
        assert flat_summary["overall"]["n"] == 600
        for figure in FIGURES:
            assert chat_summary[figure] == flat_summary[figure], (model, figure)
        assert chat_summary["predictions"]["format"] == "openai-batch"
        examples = pl.read_parquet(flat_out / "examples.parquet")
        assert pl.read_parquet(chat_out / "examples.parquet").equals(examples)


def test_sharegpt_and_parquet_reference_answers_give_the_same_gold(
    tickets: dict[str, Path],
) -> None:
    folder = tickets["folder"]
    contract = load_contract(TRIAGE_CHAT)
    gold_answer = contract.gold_answer.model_copy(update={"column": "conversations"})  # type: ignore[union-attr]
    sharegpt = contract.model_copy(update={"gold_answer": gold_answer})
    pl.read_ndjson(folder / "chat.jsonl").write_parquet(folder / "chat.parquet")
    prediction = folder / "candidate-a.jsonl"
    left = score(contract, folder / "chat.jsonl", prediction).summary
    for gold_contract, gold in ((sharegpt, "sharegpt.jsonl"), (contract, "chat.parquet")):
        right = score(gold_contract, folder / gold, prediction).summary
        for figure in FIGURES:
            assert getattr(left, figure) == getattr(right, figure), (gold, figure)


def test_contracts_without_gold_answer_keep_their_fingerprint() -> None:
    assert "gold_answer" not in normalized_contract(load_contract(TRIAGE))
    chat = normalized_contract(load_contract(TRIAGE_CHAT))
    assert chat["gold_answer"] == {"column": "messages", "turn": "last_assistant"}


# --- bad gold ---------------------------------------------------------------------------

ANSWER = {"category": "billing", "priority": "low", "order_id": None, "amount": None}


def chat_row(identifier: str, answer: str | None) -> dict[str, Any]:
    messages = [{"role": "user", "content": "I was charged twice."}]
    if answer is not None:
        messages.append({"role": "assistant", "content": answer})
    return {"ticket_id": identifier, "messages": messages}


def score_args(gold: Path, out: Path, contract: Path = TRIAGE_CHAT) -> list[Any]:
    pred = gold.with_name("pred.jsonl")
    write_jsonl(pred, [{"ticket_id": "T1", "output": json.dumps(ANSWER)}])
    return ["score", "--contract", contract, "--gold", gold, "--pred", pred, "--out", out]


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        ("The ticket is about billing.", ["no_json"]),
        (f"```json\n{json.dumps(ANSWER)}\n```", ["no_json", "strict extraction"]),
        ('{"category": "billing", "priority": "low"', ["invalid_json", "truncated"]),
        (json.dumps({**ANSWER, "priority": "P1"}), ["schema:enum"]),
        (json.dumps({"category": "billing"}), ["schema:required"]),
        (None, ["has no assistant turn"]),
    ],
)
def test_a_reference_answer_that_does_not_parse_is_bad_gold(
    run_cli, tmp_path: Path, answer: str | None, fragments: list[str]
) -> None:
    gold = write_jsonl(tmp_path / "gold.jsonl", [chat_row("T1", json.dumps(ANSWER)),
                                                 chat_row("T2", answer)])  # fmt: skip
    out = tmp_path / "out"
    result = run_cli(*score_args(gold, out))
    assert_one_line_error(result, str(gold), "id 'T2'", *fragments)
    assert not out.exists()


def test_gold_answer_needs_a_conversation_column(run_cli, tmp_path: Path) -> None:
    gold = write_jsonl(tmp_path / "gold.jsonl", [{"ticket_id": "T1", "messages": "text"}])
    result = run_cli(*score_args(gold, tmp_path / "out"))
    assert_one_line_error(result, "column 'messages' holds text, not conversations")
    gold = write_jsonl(tmp_path / "gold.jsonl", [{"ticket_id": "T1", "messages": None}])
    result = run_cli(*score_args(gold, tmp_path / "out"))
    assert_one_line_error(result, "column 'messages' is null in every row, not conversations")
    gold = write_jsonl(tmp_path / "gold.jsonl", [{"ticket_id": "T1", "chat": []}])
    result = run_cli(*score_args(gold, tmp_path / "out"))
    assert_one_line_error(result, "no column 'messages'", "gold_answer.column")
    assert not (tmp_path / "out").exists()


def test_a_malformed_gold_conversation_names_line_and_message(run_cli, tmp_path: Path) -> None:
    bad = {"ticket_id": "T2", "messages": [{"role": "user", "content": "x"}, {"role": "gpt"}]}
    gold = write_jsonl(tmp_path / "gold.jsonl", [chat_row("T1", json.dumps(ANSWER)), bad])
    result = run_cli(*score_args(gold, tmp_path / "out"))
    assert_one_line_error(result, f"{gold}:2", "message 1", "unknown role 'gpt'")


def test_a_gold_name_that_no_answer_has_is_an_error(run_cli, tmp_path: Path) -> None:
    text = TRIAGE_CHAT.read_text().replace("{name: no-order-id, where: {order_id: null}}",
                                           "{name: by-source, where: {source: web}}")  # fmt: skip
    contract = tmp_path / "contract.yaml"
    contract.write_text(text)
    row = chat_row("T1", json.dumps(ANSWER))
    gold = write_jsonl(tmp_path / "gold.jsonl", [row])
    result = run_cli(*score_args(gold, tmp_path / "out", contract))
    assert_one_line_error(result, "no reference answer has key 'source'", "slices[0].where.source")
    # a metadata column of the gold file serves a slice
    gold = write_jsonl(tmp_path / "gold.jsonl", [row | {"source": "web"}])
    result = run_cli(*score_args(gold, tmp_path / "out", contract), "--quiet")
    assert result.exit_code == 0, result.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["slices"]["by-source"]["n"] == 1


def test_label_reference_answers(run_cli, tmp_path: Path) -> None:
    text = LABELS.read_text().replace("fields:\n  category: {gold: category, match: exact}",
                                      "gold_answer: {column: messages}\nfields:\n"
                                      "  category: {gold: label, match: exact}")  # fmt: skip
    text = text.replace("class: category", "class: label")
    contract = tmp_path / "labels.yaml"
    contract.write_text(text)
    gold = write_jsonl(tmp_path / "gold.jsonl", [chat_row("T1", "billing"),
                                                 chat_row("T2", "legal_threat")])  # fmt: skip
    predictions = [{"ticket_id": "T1", "output": "Billing."},
                   {"ticket_id": "T2", "output": "account"}]  # fmt: skip
    pred = write_jsonl(tmp_path / "pred.jsonl", predictions)
    result = run_cli("score", "--contract", contract, "--gold", gold, "--pred", pred, "--out",
                     tmp_path / "out", "--quiet")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["overall"]["content_correct"] == 1
    assert summary["classes"]["legal_threat"]["recall"] == 0.0
    # strict: a reference label must be written exactly
    write_jsonl(gold, [chat_row("T1", "Billing."), chat_row("T2", "legal_threat")])
    result = run_cli("score", "--contract", contract, "--gold", gold, "--pred", pred, "--out",
                     tmp_path / "out2")  # fmt: skip
    assert_one_line_error(result, "id 'T1'", "not one of the labels")
    # and with parse: label the fields read the key 'label'
    contract.write_text(
        text.replace("gold: label", "gold: category").replace("class: label", "class: category")
    )
    result = run_cli("contract", "check", contract)
    assert_one_line_error(result, "fields.category.gold", "write gold: label")
