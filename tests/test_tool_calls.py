"""Tool calls scored (``output.parse: tool_calls``), held to an independent reference.

The reference (``tests/tool_reference.py``) reads the planted outputs with
``re`` and ``json`` and checks them BFCL-style by hand; it shares no code with
evalkit. Every example's format and content verdict, and its error category,
must agree, over planted examples in four syntaxes with every defect a
function-calling model makes (``tests/tool_planted.py``).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tool_planted import CONTRACT, DEFECTS, PARALLEL, RULES, SCHEMAS, SYNTAXES, TOOLS, planted
from tool_reference import verdict

from evalkit import load_contract, score

N_PLANTED = 340


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def contract_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("contract") / "calls.yaml"
    path.write_text(CONTRACT, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def scored(contract_path: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The planted examples scored by evalkit: structured Batch output, and raw text."""
    folder = tmp_path_factory.mktemp("planted")
    examples = planted(N_PLANTED)
    batch = [e for e in examples if e.syntax == "batch"]
    text = [e for e in examples if e.syntax != "batch"]
    results = {}
    for name, group, predictions in (
        ("batch", batch, [e.batch_line() for e in batch]),
        ("text", text, [{"id": e.id, "output": e.text()} for e in text]),
    ):
        gold = _write(folder / f"{name}-gold.jsonl", [e.gold_row() for e in group])
        pred = _write(folder / f"{name}-pred.jsonl", predictions)
        results[name] = score(contract_path, gold, pred, ledger=False)
    return {"examples": examples, "results": results}


def test_planted_examples_cover_every_syntax_and_defect(scored) -> None:
    examples = scored["examples"]
    assert len(examples) >= 300
    pairs = Counter((e.syntax, e.defect) for e in examples)
    for syntax in SYNTAXES:
        for defect in DEFECTS:
            if syntax == "llama3" and defect in PARALLEL:
                continue  # Llama 3's template makes one call per turn
            assert pairs[(syntax, defect)] >= 4, (syntax, defect)
    assert scored["results"]["batch"].summary.predictions.format == "openai-batch"


def test_every_verdict_agrees_with_the_reference(scored) -> None:
    frames = [result.examples for result in scored["results"].values()]
    ours = {row["id"]: row for frame in frames for row in frame.iter_rows(named=True)}
    tools = SCHEMAS
    disagreements = []
    for example in scored["examples"]:
        expected = verdict(
            example.syntax, example.text(), example.structured(), tools, example.gold, RULES
        )
        row = ours[example.id]
        got = (row["format_valid"], row["content_correct"], row["error"])
        if got != expected:
            disagreements.append((example.id, example.syntax, example.defect, got, expected))
    assert not disagreements, disagreements[:10]


def test_the_planted_defects_give_their_categories(scored) -> None:
    """Each defect lands where it should (a check on the planting, not only on agreement)."""
    frames = [result.examples for result in scored["results"].values()]
    ours = {row["id"]: row for frame in frames for row in frame.iter_rows(named=True)}
    wanted = {
        "correct": (True, True, None),
        "normalized": (True, True, None),
        "within_tolerance": (True, True, None),
        "int_as_float": (True, True, None),
        "parallel_reordered": (True, True, None),
        "text_where_none": (True, True, None),
        "wrong_function": (True, False, None),
        "off_tolerance": (True, False, None),
        "wrong_value": (True, False, None),
        "parallel_missing": (True, False, None),
        "unknown_tool": (False, False, "unknown_tool"),
        "missing_required": (False, False, "invalid_arguments"),
        "wrong_type": (False, False, "invalid_arguments"),
        "extra_argument": (False, False, "invalid_arguments"),
        "text_where_call_expected": (False, False, "no_call"),
        "call_where_none": (False, False, "unexpected_call"),
        "unparsable": (False, False, "unparsable_call"),
    }
    for example in scored["examples"]:
        row = ours[example.id]
        assert (row["format_valid"], row["content_correct"], row["error"]) == wanted[
            example.defect
        ], (example.id, example.defect, row)
    syntaxes = {row["id"]: row["syntax"] for row in ours.values()}
    for example in scored["examples"]:
        if example.calls is not None:
            expected = "structured" if example.syntax == "batch" else example.syntax
            assert syntaxes[example.id] == expected, example


def test_the_summary_names_one_example_of_each_error(scored) -> None:
    errors = scored["results"]["text"].summary.errors
    for category in (
        "no_call",
        "unexpected_call",
        "unparsable_call",
        "unknown_tool",
        "invalid_arguments",
    ):
        assert errors[category].count > 0
        assert errors[category].example_detail
    detail = errors["invalid_arguments"].example_detail
    assert detail.startswith("call 1 (") and "$" in detail  # the failing path


def test_classes_are_the_called_functions(scored) -> None:
    result = scored["results"]["text"]
    classes = set(result.summary.classes)
    assert "none" in classes and "get_weather" in classes
    assert any("+" in name for name in classes)  # parallel calls of two functions
    frame = result.examples
    valid_none = frame.filter(pl.col("format_valid") & (pl.col("class") == "none"))
    assert set(valid_none["predicted_class"].to_list()) == {"none"}
    assert (
        frame.filter(~pl.col("format_valid"))["predicted_class"].null_count()
        == frame.filter(~pl.col("format_valid")).height
    )


@st.composite
def _parallel_case(draw: st.DrawFn) -> tuple[list[Any], list[Any]]:
    """Gold calls (2-4, parallel) and a prediction: the same calls, some perturbed."""
    import random

    seed = draw(st.integers(0, 10**6))
    rng = random.Random(seed)
    count = draw(st.integers(2, 4))
    gold = [_random_call_of(rng) for _ in range(count)]
    predicted = [(name, dict(arguments)) for name, arguments in gold]
    for index in draw(st.lists(st.integers(0, count - 1), max_size=2)):
        name, arguments = predicted[index]
        change = draw(st.sampled_from(["city", "amount", "drop", "unknown", "extra", "same"]))
        if change == "city" and "city" in arguments:
            arguments["city"] = arguments["city"].lower()
        elif change == "amount" and "amount" in arguments:
            arguments["amount"] = arguments["amount"] + draw(st.sampled_from([0.005, 0.5]))
        elif change == "drop" and arguments:
            arguments.pop(sorted(arguments)[0])
        elif change == "unknown":
            predicted[index] = (name + "_x", arguments)
        elif change == "extra":
            arguments["zzz"] = 1
    if draw(st.booleans()):
        predicted = predicted[:-1]
    return gold, predicted


def _random_call_of(rng: Any) -> tuple[str, dict[str, Any]]:
    from tool_planted import random_call

    return random_call(rng)


@pytest.mark.slow
@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    case=_parallel_case(),
    orders=st.lists(st.randoms(use_true_random=False), min_size=3, max_size=5),
)
def test_permuting_parallel_calls_never_changes_a_verdict(
    contract_path: Path, case, orders
) -> None:
    """Under ``calls: set`` the order of parallel calls changes no verdict, in any syntax."""
    gold, predicted = case
    contract = load_contract(contract_path)
    expected = json.dumps([{"name": n, "arguments": a} for n, a in gold])
    rows, outputs, structured = [], [], []
    for number, order in enumerate(orders):
        shuffled = list(predicted)
        order.shuffle(shuffled)
        for syntax in ("qwen", "mistral", "batch"):
            identifier = f"{number}-{syntax}"
            rows.append({"id": identifier, "tools": json.dumps(TOOLS), "expected": expected})
            calls = [{"name": n, "arguments": a} for n, a in shuffled]
            if syntax == "qwen":
                text = "\n".join(f"<tool_call>{json.dumps(c)}</tool_call>" for c in calls)
            elif syntax == "mistral":
                text = "[TOOL_CALLS]" + json.dumps(calls)
            else:
                text = ""
            batch = [
                {
                    "type": "function",
                    "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])},
                }
                for c in calls
            ]
            outputs.append(text)
            structured.append(json.dumps(batch) if syntax == "batch" else None)
    gold_frame = pl.DataFrame(rows)
    pred_frame = pl.DataFrame(
        {"id": [row["id"] for row in rows], "output": outputs, "tool_calls": structured},
        schema={"id": pl.String, "output": pl.String, "tool_calls": pl.String},
    )
    examples = score(contract, gold_frame, pred_frame, ledger=False).examples
    verdicts = set(examples.select("format_valid", "content_correct", "error").iter_rows())
    assert len(verdicts) == 1, examples.select(
        "id", "format_valid", "content_correct", "error_detail"
    )
    valid, correct, error = verdicts.pop()
    reference = verdict("qwen", outputs[0], None, SCHEMAS, gold, RULES)
    assert (valid, correct, error) == reference


@pytest.mark.slow
def test_worker_processes_give_the_same_examples(contract_path: Path, tmp_path: Path) -> None:
    """Parsing in a subprocess (in chunks) gives byte-identical examples to one process."""
    from evalkit.scoring import workers

    examples = planted(120, seed=5)
    text = [e for e in examples if e.syntax != "batch"]
    gold = _write(tmp_path / "gold.jsonl", [e.gold_row() for e in text])
    pred = _write(tmp_path / "pred.jsonl", [{"id": e.id, "output": e.text()} for e in text])
    one = score(contract_path, gold, pred, ledger=False, workers=1).examples
    original = workers.CHUNK_ROWS
    workers.CHUNK_ROWS = 16  # several chunks, shared between this process and a worker
    try:
        two = score(contract_path, gold, pred, ledger=False, workers=2).examples
    finally:
        workers.CHUNK_ROWS = original
    assert one.equals(two)
