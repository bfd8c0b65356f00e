"""The bulk (polars) paths of tool-call scoring decide exactly as the per-call path does.

Outputs (:mod:`evalkit.contract.tool_fast_outputs`), content
(:mod:`evalkit.contract.tool_content_keys`) and gold calls
(:mod:`evalkit.scoring.tool_gold_fast`) are decided in bulk where a rule
proves it exact, and handed to the per-call path otherwise. Over a hostile
corpus (``tests/tool_hostile.py``) each bulk path is run against the exact one
and every per-row column must be equal; and each test checks that the bulk
path decided a good share of the rows, so that it cannot pass by deciding none.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import polars as pl
import pytest
from polars.testing import assert_frame_equal
from tool_hostile import GOLD, TOOLS, corpus, gold_texts, outputs_for, structured_for

from evalkit import load_contract, score
from evalkit.contract import tool_content_keys, tool_fast_outputs
from evalkit.contract.tool_content import CallRules, compare_calls, normalized_strings
from evalkit.contract.tool_content_keys import compare_by_keys
from evalkit.contract.tool_fast import call_objects
from evalkit.contract.tool_names import SYNTAX_CHOICES
from evalkit.contract.tool_parse import _parse_keyed, _parse_rows, tool_parsed_schema
from evalkit.errors import EvalkitError
from evalkit.scoring import tool_gold_fast

BASE = """\
name: hostile-calls
version: 1
id: id
class: function
gold_calls: expected
output:
  parse: tool_calls
  tools: tools
  calls: {calls}
  syntax: {syntax}
"""
FIELDS = {
    "plain": "fields:\n  name: {match: exact}\n",
    "bench": "fields:\n  name: {match: exact}\n  arguments.order_id: {match: normalized}\n",
    "names": "fields:\n  name: {match: normalized}\n  arguments.note: {match: normalized}\n",
    "subset": "fields:\n  name: {match: exact}\n  arguments.order_id: {match: exact}\n"
    "correct: [arguments.order_id]\n",
    "number": "fields:\n  arguments.amount: {match: number, tolerance: 0.5}\n"
    "  arguments.b: {match: number}\n  arguments.xs: {match: set}\n",
}


def _contract(tmp_path: Path, fields: str, calls: str = "set", syntax: str = "auto") -> Path:
    path = tmp_path / f"{fields}-{calls}-{syntax}.yaml"
    path.write_text(BASE.format(calls=calls, syntax=syntax) + FIELDS[fields], encoding="utf-8")
    return path


def exact_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every bulk path off: each output, pair and gold row takes the per-call path."""
    nothing = pl.DataFrame(schema={"at": pl.UInt32, **tool_parsed_schema()})
    monkeypatch.setattr(tool_fast_outputs, "decided_outputs", lambda *_: nothing)
    monkeypatch.setattr(tool_content_keys, "keys_apply", lambda _: False)
    monkeypatch.setattr(tool_gold_fast, "bulk_gold", lambda *_: None)


def _outputs() -> list[str | None]:
    import random

    rng = random.Random(1)
    texts = [text for calls in GOLD for text in outputs_for(calls, rng)]
    return list(dict.fromkeys(texts))


@pytest.mark.parametrize("mode", ["set", "ordered"])
@pytest.mark.parametrize("syntax", SYNTAX_CHOICES)
def test_outputs_decided_in_bulk_parse_as_the_exact_parser_does(syntax: str, mode: str) -> None:
    texts = _outputs()
    structured: list[str | None] = [None] * len(texts)
    keyed = pl.DataFrame(
        {"output": texts, "structured": structured},
        schema={"output": pl.String, "structured": pl.String},
    ).with_row_index("row")
    bulk = _parse_keyed(keyed, syntax, mode)
    exact = _parse_rows(texts, structured, syntax, mode)
    assert_frame_equal(bulk, exact)
    decided = tool_fast_outputs.decided_outputs(
        keyed["output"], syntax, mode != "set", tool_parsed_schema()
    )
    share = decided.height / len(texts)
    assert share > (0.3 if syntax in ("auto", "qwen", "hermes", "structured") else 0.0), share


def test_outputs_beside_structured_calls_parse_as_the_exact_parser_does() -> None:
    rows = [
        (output, given)
        for calls in GOLD
        for output in (None, "", "<tool_call>\n" + json.dumps(calls[:1]) + "\n</tool_call>")
        for given in structured_for(calls)
    ]
    texts = [row[0] for row in rows] + _outputs()
    given = [row[1] for row in rows] + [None] * (len(texts) - len(rows))
    keyed = (
        pl.DataFrame({"output": texts, "structured": given})
        .unique(maintain_order=True)
        .with_row_index("row")
    )
    for syntax in ("auto", "structured", "qwen"):
        bulk = _parse_keyed(keyed, syntax, "set")
        exact = _parse_rows(keyed["output"].to_list(), keyed["structured"].to_list(), syntax, "set")
        assert_frame_equal(bulk, exact)


def test_strict_call_objects_are_canonicalised_as_orjson_does() -> None:
    bodies = [
        json.dumps(call, ensure_ascii=ascii, separators=separators)
        for calls in GOLD
        for call in calls
        for ascii in (True, False)
        for separators in ((",", ":"), (", ", ": "))
    ]
    bodies += ['{"arguments": {"b": 1, "a": 2, "aa": 3, "é": 4, "B": 5}, "name": "x"}']
    found = call_objects(pl.Series(bodies, dtype=pl.String))
    decided = 0
    for body, (name, arguments) in zip(bodies, found.iter_rows(), strict=True):
        if name is None:
            continue
        decided += 1
        value = orjson.loads(body)
        assert name == value["name"]
        assert arguments == orjson.dumps(value["arguments"], option=orjson.OPT_SORT_KEYS).decode()
    assert decided >= len(bodies) // 2


RULES = {
    "bench": ("set", "bench"),
    "ordered": ("ordered", "plain"),
    "names": ("set", "names"),
    "subset": ("set", "subset"),
    "one": ("one", "bench"),
}


@pytest.mark.parametrize("case", RULES)
def test_content_decided_by_keys_equals_the_call_by_call_verdict(tmp_path: Path, case: str) -> None:
    calls, fields = RULES[case]
    contract = load_contract(_contract(tmp_path, fields, "ordered" if calls == "one" else calls))
    rules = CallRules.of(contract)
    texts = _outputs()
    parsed = _parse_rows(texts, [None] * len(texts), "auto", "ordered" if rules.ordered else "set")
    predicted = parsed.filter(pl.col("n_calls") > 0)["calls"].unique(maintain_order=True)
    blocks = ["".join(f"<tool_call>{json.dumps(c)}</tool_call>" for c in calls) for calls in GOLD]
    gold = _parse_rows(blocks, [None] * len(blocks), "qwen", "ordered" if rules.ordered else "set")
    gold_keys = parsed.filter(pl.col("n_calls") > 0)["calls"].unique(maintain_order=True)[:40]
    gold_keys = [*gold_keys, *gold.filter(pl.col("n_calls") > 0)["calls"]]
    pairs = pl.DataFrame(
        {"calls": [p for p in predicted for _ in gold_keys], "gold": gold_keys * len(predicted)}
    ).unique(maintain_order=True)
    keyed = compare_by_keys(pairs, rules)
    assert keyed.height > pairs.height // 3
    chosen = pairs[keyed["at"]]
    loaded = [(orjson.loads(p), orjson.loads(g)) for p, g in chosen.iter_rows()]
    normal = normalized_strings(rules, [side for pair in loaded for side in pair])
    names = list(rules.fields)
    expected = []
    for p, g in loaded:
        verdict = compare_calls(rules, p, g, normal)
        expected.append((verdict.correct, *(verdict.fields[name] for name in names)))
    got = keyed.select("c", *(f"m{i}" for i in range(len(names)))).rows()
    mismatched = [
        (pair, e, g)
        for pair, e, g in zip(chosen.iter_rows(), expected, got, strict=True)
        if tuple(e) != tuple(g)
    ]
    assert not mismatched, mismatched[:3]
    assert any(row[0] for row in got) and not all(row[0] for row in got)


def _frames(rows: list[dict[str, Any]], structured: bool) -> tuple[pl.DataFrame, pl.DataFrame]:
    gold = pl.DataFrame([{k: row[k] for k in ("id", "tools", "expected")} for row in rows])
    columns = ["id", "output", "tool_calls"] if structured else ["id", "output"]
    kept = [row for index, row in enumerate(rows) if index % 13 != 5]  # some ids: no prediction
    predictions = pl.DataFrame(
        [{k: row[k] for k in columns} for row in kept],
        schema={k: pl.String for k in columns},
    )
    return gold, predictions


def _scored(contract: Path, gold: pl.DataFrame, predictions: pl.DataFrame) -> pl.DataFrame:
    return score(contract, gold, predictions, ledger=False, workers=1).examples.sort("id")


CASES = [
    ("bench", "set", "auto", False),
    ("plain", "ordered", "auto", True),
    ("names", "set", "qwen", False),
    ("subset", "set", "hermes", True),
    ("bench", "one", "auto", False),
    ("number", "set", "auto", False),
    ("plain", "set", "structured", True),
]


@pytest.mark.parametrize(("fields", "calls", "syntax", "structured"), CASES)
def test_every_verdict_equals_the_exact_paths(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    fields: str,
    calls: str,
    syntax: str,
    structured: bool,
) -> None:
    rows = corpus()
    if calls == "one":
        rows = [row for row in rows if row["expected"].count('"name"') <= 1]
    gold, predictions = _frames(rows, structured)
    contract = _contract(tmp_path, fields, calls, syntax)
    bulk = _scored(contract, gold, predictions)
    exact_only(monkeypatch)
    exact = _scored(contract, gold, predictions)
    assert_frame_equal(bulk, exact)
    counts = bulk["error"].value_counts()
    assert bulk["format_valid"].sum() > 50 and counts.height >= 4, counts
    assert bulk["content_correct"].sum() > 20


def _one_bad(bad: str, later: bool, at: int = 17) -> list[dict[str, Any]]:
    single = [calls for calls in GOLD if len(calls) == 1]
    rows = [
        {
            "id": f"r{i}",
            "tools": json.dumps(TOOLS),
            "expected": gold_texts(single[i % len(single)])[i % 8],
        }
        for i in range(40)
    ]
    rows[at]["expected"] = bad
    if later:  # a second bad row: the error names the first
        rows[at + 9]["expected"] = '[{"name": "nope", "arguments": {}}]'
    return rows


BAD_GOLD = [
    '[{"name": "get_order", "arguments": {"order_id": "A"}}]',
    '[{"name": "lookup", "arguments": {"order_id": 5}}]',
    '[{"name": "legal", "arguments": {"priority": "low"}}]',
    '[{"name": "track", "arguments": {"order_id": "A", "extra": 1}}]',
    '[{"name": "lookup", "arguments": {"order_id": "A", "order_id": "B"}}]',
    '[{"name": "convert", "arguments": {"amount": "10", "currency": "EUR"}}]',
    '[{"name": "convert", "arguments": {"amount": true, "currency": "EUR"}}]',
    '[{"name": "résumé", "arguments": {"b": true}}]',
    '[{"name": "résumé", "arguments": {"b": "1"}}]',
    '[{"name": "résumé", "arguments": {"xs": 1}}]',
    '[{"name": "lookup", "arguments": {"order_id": "A"}}, {"name": "ping", "arguments": {}}]',
    '[{"name": "lookup", "arguments": {"order_id": "A"}',
    '{"name": "lookup", "arguments": {"order_id": "A"}}',
    "",
]


def _outcome(contract: Path, gold: pl.DataFrame, predictions: pl.DataFrame) -> Any:
    """The examples scored, or the error's type and message."""
    try:
        return score(contract, gold, predictions, ledger=False, workers=1).examples
    except EvalkitError as error:
        return type(error).__name__, str(error)


@pytest.mark.parametrize("later", [False, True])
@pytest.mark.parametrize("bad", BAD_GOLD)
@pytest.mark.parametrize(("fields", "calls"), [("number", "set"), ("bench", "one")])
def test_bad_gold_raises_the_exact_paths_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bad: str, fields: str, calls: str, later: bool
) -> None:
    gold = pl.DataFrame(_one_bad(bad, later))
    predictions = pl.DataFrame({"id": gold["id"], "output": ["text"] * gold.height})
    contract = _contract(tmp_path, fields, calls)
    bulk = _outcome(contract, gold, predictions)
    exact_only(monkeypatch)
    exact = _outcome(contract, gold, predictions)
    if isinstance(exact, pl.DataFrame):  # valid under this contract
        assert ("résumé" in bad and calls == "one") or ("ping" in bad and calls == "set")
        assert_frame_equal(bulk, exact)
        return
    assert bulk == exact
    assert "id 'r17'" in exact[1] or (later and "id 'r26'" in exact[1])


def test_gold_of_every_spelling_reads_as_the_exact_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = [
        {"id": f"g{g}-{s}", "tools": json.dumps(TOOLS), "expected": text}
        for g, calls in enumerate(GOLD)
        for s, text in enumerate(gold_texts(calls))
    ]
    gold = pl.DataFrame(rows)
    predictions = pl.DataFrame({"id": gold["id"], "output": ["text"] * gold.height})
    decided = tool_gold_fast.bulk_gold(gold["expected"], False)
    assert 0.3 * gold.height < len(decided.rows) < gold.height
    for calls in ("set", "ordered"):
        contract = _contract(tmp_path, "bench", calls)
        bulk = score(contract, gold, predictions, ledger=False, workers=1).examples
        with monkeypatch.context() as patched:
            patched.setattr(tool_gold_fast, "bulk_gold", lambda *_: None)
            exact = score(contract, gold, predictions, ledger=False, workers=1).examples
        assert_frame_equal(bulk, exact)


def test_gold_that_expects_no_call_anywhere_reads_in_bulk(tmp_path: Path) -> None:
    gold = pl.DataFrame(
        {"id": ["a", "b"], "tools": [json.dumps(TOOLS)] * 2, "expected": ["[]"] * 2}
    )
    predictions = pl.DataFrame({"id": ["a", "b"], "output": ["text", "<tool_call>"]})
    examples = score(_contract(tmp_path, "bench", "one"), gold, predictions, ledger=False).examples
    assert examples["error"].to_list() == [None, "unexpected_call"]
