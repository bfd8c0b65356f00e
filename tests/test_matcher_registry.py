"""The matcher registry: one registration adds a ``match:`` rule everywhere it is read.

A throwaway matcher registered here is accepted by the contract model, takes
its option's default, is checked against the gold column types and the
output schema, scores through :func:`evalkit.score` (JSON fields and
tool-call arguments) and is listed by the contract's JSON Schema; the
matchers the docs name are exactly the registered ones.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from evalkit import score
from evalkit.contract import MATCHERS, FieldColumns, Matcher, register_matcher
from evalkit.contract.load import load_contract
from evalkit.contract.matchers import MatcherOptions
from evalkit.contract.model import FieldSpec
from evalkit.contract.parsed import STRING
from evalkit.contract.schema import contract_json_schema
from evalkit.errors import InvalidContract

ROOT = Path(__file__).resolve().parent.parent
BUILT_IN = ("exact", "normalized", "number", "set")


class Prefix(Matcher):
    """A string that starts with the gold string (text gold only)."""

    name = "prefix"
    description = "a string that starts with the gold string"
    gold_kinds = ("string", "null")
    compares = "text"
    gold_value = "a string"
    output_types = frozenset({"string"})
    needs = "a string"
    compares_names = True

    def rule(self, field: FieldColumns) -> pl.Expr:
        return (field.kind == STRING) & field.value.str.starts_with(field.gold)

    def gold_value_fits(self, value: Any) -> bool:
        return type(value) is str

    def value_match(
        self, spec: MatcherOptions, predicted: Any, gold: Any, normal: Mapping[str, str]
    ) -> bool:
        return type(predicted) is str and predicted.startswith(gold)


@pytest.fixture
def prefix() -> Iterator[None]:
    register_matcher(Prefix)
    try:
        yield
    finally:
        del MATCHERS["prefix"]


def _write(tmp_path: Path, contract: dict[str, Any], gold: list[dict[str, Any]],
           outputs: list[Any]) -> tuple[Path, Path, Path]:  # fmt: skip
    (tmp_path / "contract.json").write_text(json.dumps(contract))
    (tmp_path / "gold.jsonl").write_text("".join(json.dumps(row) + "\n" for row in gold))
    texts = [output if isinstance(output, str) else json.dumps(output) for output in outputs]
    lines = [json.dumps({"id": row["id"], "output": text})
             for row, text in zip(gold, texts, strict=True)]  # fmt: skip
    (tmp_path / "pred.jsonl").write_text("\n".join(lines) + "\n")
    return tmp_path / "contract.json", tmp_path / "gold.jsonl", tmp_path / "pred.jsonl"


def _contract(field: dict[str, Any]) -> dict[str, Any]:
    return {"name": "prefix", "version": 1, "id": "id", "fields": {"code": field}}


def test_a_registered_matcher_scores_through_the_public_api(tmp_path, prefix):
    gold = [{"id": f"r{i}", "code": code} for i, code in enumerate(["ORD", "ORD", "INV", None])]
    outputs = [{"code": "ORD-12"}, {"code": "INV-3"}, {"code": 7}, {}]
    paths = _write(tmp_path, _contract({"gold": "code", "match": "prefix"}), gold, outputs)
    result = score(*paths)
    examples = result.examples.sort("id")
    assert examples["match.code"].to_list() == [True, False, False, True]
    assert result.summary.fields["code"].matched == 2
    assert result.summary.fields["code"].mean_f1 is None  # Prefix reports no F1


def test_a_registered_matcher_compares_tool_call_arguments(tmp_path, prefix):
    tools = [{"type": "function", "function": {"name": "find", "parameters": {
        "type": "object", "properties": {"q": {"type": "string"}}}}}]  # fmt: skip
    contract = {
        "name": "calls",
        "version": 1,
        "id": "id",
        "gold_calls": "calls",
        "output": {"parse": "tool_calls", "tools": tools},
        "fields": {"name": {"match": "exact"}, "arguments.q": {"match": "prefix"}},
    }
    gold = [
        {"id": f"r{i}", "calls": [{"name": "find", "arguments": {"q": q}}]}
        for i, q in enumerate(["ord", "ord"])
    ]
    outputs = [
        '<tool_call>\n{"name": "find", "arguments": {"q": "order 12"}}\n</tool_call>',
        '<tool_call>\n{"name": "find", "arguments": {"q": "invoice"}}\n</tool_call>',
    ]
    result = score(*_write(tmp_path, contract, gold, outputs))
    assert result.examples.sort("id")["match.arguments.q"].to_list() == [True, False]


def test_a_registered_matcher_is_checked_at_gold_load(tmp_path, prefix):
    gold = [{"id": "r0", "code": 12}]
    paths = _write(tmp_path, _contract({"gold": "code", "match": "prefix"}), gold, [{"code": 1}])
    with pytest.raises(InvalidContract) as caught:
        score(*paths)
    assert "fields.code: match: prefix compares text, but gold column 'code' holds integer" in str(
        caught.value
    )


def test_a_registered_matcher_is_checked_against_the_output_schema(tmp_path, prefix):
    schema = {"type": "object", "properties": {"code": {"type": "integer"}}}
    contract = _contract({"gold": "code", "match": "prefix"})
    contract["output"] = {"parse": "json", "schema": schema}
    (tmp_path / "contract.json").write_text(json.dumps(contract))
    with pytest.raises(InvalidContract, match="match: prefix needs a string"):
        load_contract(tmp_path / "contract.json")


def test_the_schema_and_the_unknown_matcher_error_list_the_registry(prefix):
    spec = contract_json_schema()["$defs"]["FieldSpec"]["properties"]["match"]
    assert spec["enum"] == [*BUILT_IN, "prefix"]
    with pytest.raises(
        ValueError, match="Input should be 'exact', 'normalized', 'number', 'set' or 'prefix'"
    ):
        FieldSpec(gold="code", match="suffix")


def test_an_option_belongs_to_its_matcher_and_takes_its_default():
    assert FieldSpec(gold="g", match="number").tolerance == 0.0
    assert FieldSpec(gold="g", match="set").min_f1 == 1.0
    with pytest.raises(ValueError, match="'tolerance' is for match: number"):
        FieldSpec(gold="g", match="set", tolerance=0.1)
    with pytest.raises(ValueError, match="'min_f1' is for match: set"):
        FieldSpec(gold="g", match="exact", min_f1=0.5)


def test_an_unknown_matcher_is_one_line_naming_every_registered_one(tmp_path):
    path = tmp_path / "contract.json"
    path.write_text(json.dumps(_contract({"gold": "code", "match": "fuzzy"})))
    with pytest.raises(InvalidContract) as caught:
        load_contract(path)
    assert "\n" not in str(caught.value)
    assert "input should be 'exact', 'normalized', 'number' or 'set' (got 'fuzzy')" in str(
        caught.value
    )


def test_a_name_is_registered_once():
    with pytest.raises(ValueError, match="already registered"):

        @register_matcher
        class Again(Matcher):
            name = "exact"


def test_every_documented_matcher_is_registered_and_every_registered_one_documented():
    assert tuple(MATCHERS) == BUILT_IN
    docs = (ROOT / "docs" / "contracts.md").read_text()
    table = docs.split("## Content: field matchers", 1)[1].split("###", 1)[0]
    rows = re.findall(r"^\| `([a-z_]+)` \|", table, flags=re.MULTILINE)
    assert rows[0] == "match"  # the table's heading
    assert rows[1:] == list(MATCHERS)
    listed = re.search(r"\bmatch: ([a-z_|\\]+),", docs)
    assert listed is not None
    assert listed.group(1).split("\\|") == list(MATCHERS)
    description = FieldSpec.model_fields["match"].description or ""
    for name, rule in MATCHERS.items():
        assert f"``{name}``" in description, name
        assert rule.description, name
        assert rule.name == name
    committed = json.loads((ROOT / "contracts" / "contract.schema.json").read_text())
    assert committed["$defs"]["FieldSpec"]["properties"]["match"]["enum"] == list(MATCHERS)
