"""Bad input to a tool-calling contract is exit 2 in one line; a model's bad call is not.

Gold must be valid (a tool schema that is not a JSON Schema, gold calls that
do not parse or break their tool, a missing column: exit 2 naming the row or
the key); a malformed call in a *prediction* is the model's error, scored
``unparsable_call``. Also: the contract's own checks, the readers of
structured calls (Batch, a ``tool_calls`` field, a frame), and that every
other contract keeps its fingerprint.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from conftest import assert_one_line_error
from tool_planted import CONTRACT, TOOLS

from evalkit import load_contract, score
from evalkit.contract.fingerprint import normalized_contract
from evalkit.contract.validation import evaluator_semantics, semantics_of
from evalkit.errors import InvalidContract

ROOT = Path(__file__).resolve().parents[1]
WEATHER = [{"name": "get_weather", "arguments": {"city": "Paris"}}]


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def _files(tmp_path: Path, gold: list[dict[str, Any]], contract: str = CONTRACT) -> dict[str, Path]:
    preds = [{"id": row["id"], "output": "no call"} for row in gold]
    return {
        "contract": _write(tmp_path / "c.yaml", contract),
        "gold": _jsonl(tmp_path / "gold.jsonl", gold),
        "pred": _jsonl(tmp_path / "pred.jsonl", preds),
    }


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def _score(run_cli, files: dict[str, Path], tmp_path: Path, *extra: str):
    return run_cli(
        "score", "--contract", files["contract"], "--gold", files["gold"], "--pred",
        files["pred"], "--out", tmp_path / "out", "--no-ledger", *extra,
    )  # fmt: skip


def _row(identifier: str, expected: Any = WEATHER, tools: Any = TOOLS) -> dict[str, Any]:
    return {"id": identifier, "tools": tools, "expected": expected}


def test_a_tool_schema_that_is_no_json_schema_names_the_row_and_tool(run_cli, tmp_path) -> None:
    broken = json.loads(json.dumps(TOOLS))
    broken[2]["function"]["parameters"]["properties"]["passengers"]["type"] = "int"
    files = _files(tmp_path, [_row("a"), _row("b"), _row("c", tools=broken)])
    result = _score(run_cli, files, tmp_path)
    assert_one_line_error(
        result, "gold.jsonl: row 3 (id 'c')", "tools[2] (book_flight)", "not a valid JSON Schema"
    )


def test_a_tools_file_with_a_bad_schema_names_the_tool(run_cli, tmp_path) -> None:
    broken = json.loads(json.dumps(TOOLS))
    broken[0]["function"]["parameters"]["required"] = "city"
    (tmp_path / "tools.json").write_text(json.dumps(broken))
    contract = CONTRACT.replace("  tools: tools\n", "  tools_file: tools.json\n")
    files = _files(tmp_path, [_row("a")], contract)
    result = run_cli("contract", "check", files["contract"])
    assert_one_line_error(result, "output.tools_file", "tools[0] (get_weather)", "JSON Schema")
    assert _score(run_cli, files, tmp_path).exit_code == 2


def test_a_tools_file_is_inlined_and_fingerprinted_by_content(tmp_path) -> None:
    (tmp_path / "tools.json").write_text(json.dumps(TOOLS))
    from_file = _write(
        tmp_path / "f.yaml", CONTRACT.replace("  tools: tools\n", "  tools_file: tools.json\n")
    )
    loaded = load_contract(from_file)
    assert loaded.output.tools == TOOLS and loaded.output.tools_file is None
    normalized = normalized_contract(loaded)
    assert normalized["output"]["tools"] == TOOLS and "tools_file" not in normalized["output"]


@pytest.mark.parametrize(
    ("expected", "fragments"),
    [
        (
            '[{"name": "get_weather", ',
            ("row 1 (id 'a')", "gold_calls column 'expected'", "does not parse"),
        ),
        ([{"arguments": {"city": "x"}}], ("call 0", "no 'name'")),
        ([{"name": "get_weather", "arguments": "[1]"}], ("call 0", "not a JSON object")),
        ([{"name": "get_weather"}], ("call 0", "has no 'arguments'")),
        (None, ("no value", "write []")),
        ([{"name": "get_wether", "arguments": {}}], ("names 'get_wether'", "row's tools")),
        (
            [{"name": "get_weather", "arguments": {"town": "x"}}],
            ("breaks the tool's parameters", "$"),
        ),
    ],
)
def test_malformed_gold_calls_are_exit_2_naming_the_row(
    run_cli, tmp_path, expected, fragments
) -> None:
    files = _files(tmp_path, [_row("a", expected), _row("b")])
    assert_one_line_error(_score(run_cli, files, tmp_path), *fragments)


def test_gold_of_several_calls_under_calls_one_is_exit_2(run_cli, tmp_path) -> None:
    two = [*WEATHER, {"name": "ping", "arguments": {}}]
    files = _files(tmp_path, [_row("a", two)], CONTRACT.replace("calls: set", "calls: one"))
    assert_one_line_error(_score(run_cli, files, tmp_path), "id 'a'", "2 calls", "calls: one")


def test_a_matcher_its_gold_values_cannot_take_is_exit_2(run_cli, tmp_path) -> None:
    calls = [{"name": "convert", "arguments": {"amount": 12, "currency": "EUR"}}]
    contract = CONTRACT + "  arguments.currency: {match: number}\n"
    files = _files(tmp_path, [_row("a", calls)], contract)
    assert_one_line_error(
        _score(run_cli, files, tmp_path),
        "row 1 (id 'a')",
        "fields.arguments.currency: match: number compares a number",
        "'EUR'",
    )


def test_a_missing_gold_calls_column_is_exit_2(run_cli, tmp_path) -> None:
    files = _files(tmp_path, [{"id": "a", "tools": TOOLS}])
    assert_one_line_error(
        _score(run_cli, files, tmp_path), "no column 'expected'", "named by gold_calls"
    )


def test_a_missing_tools_column_is_exit_2(run_cli, tmp_path) -> None:
    files = _files(tmp_path, [{"id": "a", "expected": WEATHER}])
    assert_one_line_error(_score(run_cli, files, tmp_path), "no column 'tools'", "output.tools")


@pytest.mark.parametrize(
    ("output", "category"),
    [
        (
            '<tool_call>{"name": "get_weather", "arguments": {"city": </tool_call>',
            "unparsable_call",
        ),
        (
            '<tool_call>{"name": "get_weather", "arguments": "{\\"city\\": 1"}</tool_call>',
            "unparsable_call",
        ),
        (
            '<tool_call>{"name": "get_weather", "name": "x", "arguments": {}}</tool_call>',
            "unparsable_call",
        ),
        ('[TOOL_CALLS][{"name": "get_weather"}]', "unparsable_call"),
        ('{"name": "get_weather", "parameters": {"city": "Par', "unparsable_call"),
        ("   ", "empty"),
    ],
)
def test_a_malformed_call_in_a_prediction_is_the_models_error(
    run_cli, tmp_path, output, category
) -> None:
    files = _files(tmp_path, [_row("a")])
    _jsonl(files["pred"], [{"id": "a", "output": output}])
    result = _score(run_cli, files, tmp_path, "--quiet")
    assert result.exit_code == 0, result.stderr
    examples = pl.read_parquet(tmp_path / "out" / "examples.parquet")
    assert examples["error"].to_list() == [category]


def test_a_broken_tool_calls_field_in_predictions_is_the_models_error(tmp_path) -> None:
    contract = _write(tmp_path / "c.yaml", CONTRACT)
    gold = _jsonl(tmp_path / "gold.jsonl", [_row("a"), _row("b"), _row("c")])
    pred = _jsonl(
        tmp_path / "pred.jsonl",
        [
            {"id": "a", "output": None, "tool_calls": "[{not json"},
            {"id": "b", "tool_calls": {"name": "get_weather"}},
            {
                "id": "c",
                "output": "",
                "tool_calls": [
                    {"function": {"name": "get_weather", "arguments": '{"city": "paris"}'}}
                ],
            },
        ],
    )
    examples = score(contract, gold, pred, ledger=False).examples
    assert examples["error"].to_list() == ["unparsable_call", "unparsable_call", None]
    assert examples["content_correct"].to_list() == [False, False, True]
    assert examples["syntax"].to_list() == ["structured"] * 3


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        (
            ("output:\n  parse: tool_calls\n", "output:\n  parse: json\n"),
            "is for parse: tool_calls",
        ),
        (("gold_calls: expected\n", ""), "give exactly one"),
        (
            ("gold_calls: expected\n", "gold_calls: expected\ngold_answer: {column: m}\n"),
            "give exactly one",
        ),
        (("class: function", "class: category"), "write class: function"),
        (("name: {match: exact}", "name: {gold: fn, match: exact}"), "leave 'gold' out"),
        (("name: {match: exact}", "name: {match: number}"), "a function name is text"),
        (("arguments.city:", "city:"), "'name' or 'arguments.<key>'"),
        (
            ("calls: set", "calls: set\n  syntax: xml"),
            "syntax 'xml' is not one of: auto, structured",
        ),
        (("calls: set", "calls: set\n  extract: strict"), "'extract' is for parse: json and label"),
        (("  tools: tools\n", ""), "needs the row's tools"),
        (("calls: set", "calls: set\n  schema: {type: object}"), "takes no 'schema'"),
    ],
)
def test_contract_mistakes_name_the_key(tmp_path, change, fragment) -> None:
    text = CONTRACT.replace(*change)
    assert text != CONTRACT
    with pytest.raises(InvalidContract) as caught:
        load_contract(_write(tmp_path / "c.yaml", text))
    assert fragment in caught.value.message


def test_gold_calls_is_refused_without_tool_calls(tmp_path) -> None:
    text = "name: x\nversion: 1\nid: id\ngold_calls: expected\nfields:\n  a: {gold: a}\n"
    with pytest.raises(InvalidContract, match=r"'gold_calls' is for output\.parse: tool_calls"):
        load_contract(_write(tmp_path / "c.yaml", text))


def test_other_contracts_keep_their_normalised_form_and_semantics() -> None:
    """The keys added for tool calls appear only in tool-calling contracts."""
    for path in (ROOT / "contracts").glob("ticket-triage*.yaml"):
        contract = load_contract(path)
        normalized = normalized_contract(contract)
        assert "gold_calls" not in normalized
        assert not {"tools", "calls", "syntax"} & set(normalized["output"])
        assert semantics_of(contract) == evaluator_semantics()
    tool_contract = load_contract(ROOT / "contracts" / "ticket-tool-calls.yaml")
    semantics = semantics_of(tool_contract)["tool_calls"]
    assert semantics["auto_order"] == ["structured", "mistral", "qwen", "llama3", "json"]


def test_a_json_contract_warns_when_predictions_are_tool_calls(tmp_path) -> None:
    """The Batch output whose answers are calls, scored under parse: json, says why it is empty."""
    contract = ROOT / "contracts" / "ticket-triage-chat.yaml"
    gold = _jsonl(
        tmp_path / "gold.jsonl",
        [
            {
                "ticket_id": "T1",
                "messages": [
                    {"role": "user", "content": "hi"},
                    {"role": "assistant", "content": '{"category": "billing", "priority": "low"}'},
                ],
            }
        ],
    )
    call = {"id": "c", "type": "function", "function": {"name": "lookup_order", "arguments": "{}"}}
    body = {"choices": [{"message": {"role": "assistant", "content": None, "tool_calls": [call]}}]}
    pred = _jsonl(
        tmp_path / "out.jsonl",
        [{"custom_id": "T1", "response": {"status_code": 200, "body": body}, "error": None}],
    )
    result = score(contract, gold, pred, ledger=False)
    assert result.examples["error"].to_list() == ["empty"]
    assert any("output.parse: tool_calls" in w for w in result.summary.warnings)


def test_predictions_as_a_frame_carry_structured_calls(tmp_path) -> None:
    contract = _write(tmp_path / "c.yaml", CONTRACT)
    gold = pl.DataFrame(
        {
            "id": ["a", "b"],
            "tools": [json.dumps(TOOLS)] * 2,
            "expected": [json.dumps(WEATHER), "[]"],
        }
    )
    pred = pl.DataFrame(
        {
            "id": ["a", "b"],
            "tool_calls": [[{"name": "get_weather", "arguments": '{"city": "PARIS"}'}], None],
        }
    )
    examples = score(contract, gold, pred, ledger=False).examples
    # no output column beside tool_calls: b has no output and no call
    assert examples.select("id", "error", "content_correct").rows() == [
        ("a", None, True),
        ("b", "missing", False),
    ]


def test_the_responses_api_and_a_failed_request(tmp_path) -> None:
    contract = _write(tmp_path / "c.yaml", CONTRACT)
    gold = _jsonl(tmp_path / "gold.jsonl", [_row("a"), _row("b")])
    item = {
        "type": "function_call",
        "name": "get_weather",
        "arguments": '{"city": "Paris"}',
        "call_id": "x",
    }
    pred = _jsonl(
        tmp_path / "out.jsonl",
        [
            {
                "custom_id": "a",
                "response": {"status_code": 200, "body": {"output": [item]}},
                "error": None,
            },
            {
                "custom_id": "b",
                "response": None,
                "error": {"code": "rate_limit", "message": "slow down"},
            },
        ],
    )
    examples = score(contract, gold, pred, ledger=False).examples
    assert examples.select("error", "content_correct").rows() == [(None, True), ("missing", False)]


def test_a_json_contract_on_a_reference_turn_that_calls_says_to_use_tool_calls(
    run_cli, tmp_path
) -> None:
    """The issue's second report: gold_answer on a tool-call reference turn named no way out."""
    call = {"id": "c", "type": "function", "function": {"name": "lookup_order", "arguments": "{}"}}
    gold = _jsonl(
        tmp_path / "gold.jsonl",
        [{"ticket_id": "T1", "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
        ]}],
    )  # fmt: skip
    pred = _jsonl(tmp_path / "pred.jsonl", [{"ticket_id": "T1", "output": "{}"}])
    result = run_cli(
        "score", "--contract", ROOT / "contracts" / "ticket-triage-chat.yaml", "--gold", gold,
        "--pred", pred, "--out", tmp_path / "out", "--no-ledger",
    )  # fmt: skip
    assert_one_line_error(result, "id 'T1'", "empty", "output.parse: tool_calls")


def test_structured_calls_are_part_of_what_a_look_judged(tmp_path) -> None:
    """Two prediction files with the same (empty) texts but other tool calls are two looks.

    A Batch answer that only calls tools has no text: keyed on texts alone, every
    such candidate would be the same look (issue 32, C1, for tool calls).
    """
    from evalkit.provenance.ledger_state import read_ledger

    contract = _write(tmp_path / "c.yaml", CONTRACT)
    gold = _jsonl(tmp_path / "gold.jsonl", [_row("a"), _row("b")])
    calls = {"a": '{"city": "Paris"}', "b": '{"city": "Rome"}'}

    def predictions(name: str, city_a: str) -> Path:
        rows = [
            {"id": "a", "output": None,
             "tool_calls": [{"name": "get_weather", "arguments": city_a}]},
            {"id": "b", "output": None,
             "tool_calls": [{"name": "get_weather", "arguments": calls["b"]}]},
        ]  # fmt: skip
        return _jsonl(tmp_path / name, rows)

    first = score(contract, gold, predictions("one.jsonl", calls["a"]), name="one")
    again = score(contract, gold, predictions("copy.jsonl", calls["a"]), name="copy")
    other = score(contract, gold, predictions("two.jsonl", '{"city": "Oslo"}'), name="two")
    assert first.summary.predictions.answers_sha256 == again.summary.predictions.answers_sha256
    assert first.summary.predictions.answers_sha256 != other.summary.predictions.answers_sha256
    (state,) = read_ledger(tmp_path / "evalkit-ledger.jsonl").gold.values()
    assert state.looks == 2  # one and copy judged the same answers; two did not
