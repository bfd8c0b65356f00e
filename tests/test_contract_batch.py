"""The bulk parsing path gives exactly the columns of the output-by-output parser.

``parse_frame`` (evalkit.contract.batch) decides most verdicts with polars
and one orjson and one jsonschema-rs call per distinct text; these tests
compare every column it writes with ``OutputParser.parse_row`` - the
general, output-by-output path - on hostile and edge-case outputs and on
fuzzed ones.
"""

from __future__ import annotations

import json
import sys

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalkit.contract.batch import PYTHON_WHITESPACE
from evalkit.contract.parse import OutputParser, ParserSpec, parse_frame, parsed_schema

TICKET_SCHEMA = {
    "type": "object",
    "required": ["category", "priority"],
    "properties": {
        "category": {"enum": ["billing", "shipping", "Billing"]},
        "priority": {"enum": ["low", "high"]},
        "order_id": {"type": ["string", "null"], "pattern": "^[A-Za-z]{3}-\\d{6}$"},
        "amount": {"type": ["number", "null"], "minimum": 0},
    },
}
FIELDS = ("category", "priority", "order_id", "amount", "tags")
SCHEMAS = [TICKET_SCHEMA, {"type": "object"}, {}]

GOOD = '{"category": "billing", "priority": "low", "order_id": "ORD-123456", "amount": 12.5}'
SPACES = "".join(sorted(PYTHON_WHITESPACE))


def hostile_outputs() -> list[str | None]:
    """Outputs that exercise every branch of extraction, parsing and field conversion."""
    texts: list[str | None] = [
        None,
        "",
        "   ",
        SPACES,
        GOOD,
        GOOD,  # a repeat
        f"  {GOOD}\n",
        f"\x1c{GOOD}\x1f",  # whitespace to Python, not to Rust
        f"\u200b{GOOD}",  # zero-width space: not whitespace anywhere
        f"\u3000{GOOD}\x85",
        '{"category": "billing", "priority": "low"}',
        '{"category": "billing", "priority": "low", "order_id": null, "amount": null}',
        '{"category": "billing", "priority": "low", "amount": 0}',
        '{"category": "billing", "priority": "low", "amount": -0.0}',
        '{"category": "billing", "priority": "low", "amount": 1E2}',
        '{"category": "billing", "priority": "low", "amount": 1e400}',
        '{"category": "billing", "priority": "low", "amount": 18446744073709551615}',
        '{"category": "billing", "priority": "low", "amount": 123456789012345678901234567890}',
        '{"category": "billing", "priority": "low", "amount": 5e-324}',
        '{"category": "billing", "priority": "low", "amount": NaN}',
        '{"category": "billing", "priority": "low", "amount": Infinity}',
        '{"category": "billing", "priority": "low", "amount": "12.5"}',
        '{"category": "billing", "priority": "low", "amount": true}',
        '{"category": "billing", "priority": "low", "amount": [1, 2]}',
        '{"category": "billing", "priority": "low", "tags": [{"b": 1, "a": 2}]}',
        '{"category": "billing", "priority": "low", "tags": {"z": 1, "a": [true, null]}}',
        '{"category": "billing", "priority": "low", "tags": []}',
        '{"category": "billing", "priority": "low", "tags": {}}',
        '{"category": "billing", "priority": "low", "category": "shipping"}',
        '{"category": "billing", "priority": "low", "x": {"a": 1, "a": 2}}',
        '{"category": "billing", "priority": "low", "note": "at 12:30"}',
        '{"category": "billing", "priority": "low", "note": "a:b:c", "n": 1}',
        '{"category": "b\\u00e9", "priority": "low"}',
        '{"category": "billing", "priority": "low", "note": "\\ud83d\\ude00 \u00e9"}',
        '{"category": "billing", "priority": "low", "note": "\\ud800"}',
        '{"category": "billing", "priority": "low", "note": "nul \\u0000"}',
        '{"category": "Billing", "priority": "low", "order_id": "ord-123456"}',
        '{"category": "billing", "priority": "P-low"}',
        '{"category": "billing", "priority": "low", "order_id": "ORD-١٢٣٤٥٦"}',
        '{"category": "billing", "priority": "low", "order_id": "ORD-123456\\n"}',
        '{"category": "billing", "priority": "low", "amount": -1}',
        '{"category": "billing"}',
        '{"category": 3, "priority": "low"}',
        "{}",
        "{ }",
        "{}}",
        "{{}}",
        "{'category': 'billing', 'priority': 'low'}",
        '{"category": "billing", "priority": "lo',
        '{"category": "billing", "priority": "low",}',
        '[{"category": "billing", "priority": "low"}]',
        '["x", {"category": "billing", "priority": "low"}]',
        '"{\\"category\\": \\"billing\\"}"',
        "12",
        "true",
        "null",
        "nothing here",
        "I can't help with {that}.",
        "The answer is {category: billing}.",
        f"Here is the triage:\n{GOOD}\nOK",
        f"Here is the triage: {GOOD} and {GOOD}",
        f"Here is the triage: {GOOD} }}",
        f"Here is the triage: {GOOD} {{not json}}",
        f"Here: {GOOD}\u00a0tail: 1",
        f"Here: {GOOD}\x1c",
        f"Here: {GOOD}",
        f"Here: {{ {GOOD[1:]}",
        f"Here: {{'a': 1}} then {GOOD}",
        f"Here: {{}} then {GOOD}",
        f"Here: {{x: 1}} then {GOOD}",
        f"Here: {{that}} then {GOOD}",
        'Here: {"category": "billing", "priority": "low", "note": "a}b"} ok',
        'Here: {"category": "billing", "priority": "low"',
        'Here: {"a": {"b": 1}} tail',
        'Here: {"a": 1, "a": 2} tail',
        "Here: " + "{" * 40 + '"a": 1}',
        "é " + GOOD + " 😀",
        f"t {GOOD}",
        f"n: {GOOD}",
        f"-> {GOOD}",
        f"0. {GOOD}",
        f"[{GOOD}]",
        f"```json\n{GOOD}\n```",
        f"```json\n{GOOD}\n```\nthen {GOOD}",
        f"```JSON  \r\n{GOOD}\r\n```",
        f"```\n{GOOD}",  # unclosed
        f"```\n{GOOD}\n",
        f"```json{GOOD}```",
        f"````\n{GOOD}\n````",
        f"``` json x\n{GOOD}\n```",
        f"```py-3.1+x\n{GOOD}\n```",
        "```json\n```",
        "```json\n  \n```",
        "```",
        "``````",
        f"```json\n{{bad}}\n```\n{GOOD}",
        f"Sure!\n```json\n{GOOD}\n```\nAnything else?",
        f"Sure! {GOOD}\n```json\n{GOOD}\n```",
        f"```json\n\x1c{GOOD}\x1c\n```",
        f"```json\n\u3000{GOOD}\u00a0\n```",
        f"```json\n[{GOOD}]\n```",
        f'```json\n{GOOD[:-1]}, "category": "shipping"}}\n```',
        "```json\n" + '{"category": "billing", "priority": "low", "note": "x:y"}' + "\n```",
        '{"a": ' * 2000 + "1" + "}" * 2000,
        "[" * 100_000 + "]" * 100_000,
        "Here: " + '{"a": ' * 1100 + "1" + "}" * 1100,
        "x" * 200_000 + "{",
        "{" * 50 + "x" * 1000,
        "no " + '{"a"' * 30,
        "\x00",
        f"{GOOD}\x00",
    ]
    return texts


def reference_frame(parser: OutputParser, texts: list[str | None]) -> pl.DataFrame:
    """The columns, output by output, through ``OutputParser.parse_row``."""
    rows = [parser.parse_row(text) for text in texts]
    schema = parsed_schema(len(parser.spec.fields))
    columns = list(zip(*rows, strict=True)) if rows else [()] * len(schema)
    return pl.DataFrame(
        [
            pl.Series(name, list(column), dtype=dtype)
            for (name, dtype), column in zip(schema.items(), columns, strict=True)
        ]
    )


def assert_same_columns(parser: OutputParser, texts: list[str | None]) -> None:
    expected = reference_frame(parser, texts)
    got = parse_frame(parser, texts)
    assert got.schema == expected.schema
    for name in expected.columns:
        mismatched = [
            (texts[row], got[name][row], expected[name][row])
            for row in range(len(texts))
            if got[name][row] != expected[name][row]
        ]
        assert not mismatched, f"column {name}: {mismatched[:3]}"


def test_python_whitespace_is_what_str_strip_removes() -> None:
    expected = {chr(code) for code in range(sys.maxunicode + 1) if chr(code).isspace()}
    assert set(PYTHON_WHITESPACE) == expected


@pytest.mark.parametrize("extract", ["lenient", "strict"])
@pytest.mark.parametrize("schema", SCHEMAS, ids=["ticket", "object", "anything"])
def test_bulk_path_equals_the_parser_on_hostile_outputs(extract: str, schema: dict) -> None:
    parser = OutputParser(ParserSpec(extract, schema, FIELDS))
    texts = hostile_outputs()
    assert_same_columns(parser, texts)
    assert_same_columns(parser, texts[::-1])  # another order, other repeats first
    assert_same_columns(parser, [GOOD] * 3)  # all repeats
    assert_same_columns(parser, [])


def test_field_kinds_mixed_within_a_column() -> None:
    parser = OutputParser(ParserSpec("lenient", {"type": "object"}, ("a", "b")))
    values = ["x", 1, 1.5, None, True, [1], {"k": 1}, "y"]
    texts = [json.dumps({"a": value, "b": value}) for value in values]
    texts += [json.dumps({"b": value}) for value in values]  # "a" absent
    texts += ["Here: " + text for text in texts] + ["```\n" + text for text in texts]
    assert_same_columns(parser, texts)
    for kind in (["x", None], [1, 2.5, None], ["x", 1], [None]):
        assert_same_columns(parser, [json.dumps({"a": value}) for value in kind] + ["{}"])


json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=12)
    | st.sampled_from(["billing", "low", "ORD-123456", "a:b", "}", "{", "```"])
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)
noise = st.text(
    alphabet=st.sampled_from(
        list('ab {}[]":,`\n\r\t1-') + list(PYTHON_WHITESPACE[:12]) + ["é", "\u200b"]
    ),
    max_size=12,
)


@st.composite
def outputs(draw: st.DrawFn) -> str:
    value = draw(
        st.dictionaries(st.sampled_from([*FIELDS, "x"]), json_values, max_size=5) | json_values
    )
    text = json.dumps(value, indent=draw(st.sampled_from([None, 1])))
    if draw(st.booleans()):
        text = text[: draw(st.integers(0, len(text)))]  # cut anywhere
    style = draw(st.sampled_from(["plain", "fenced", "prose", "unclosed", "twice"]))
    before, after = draw(noise), draw(noise)
    return {
        "plain": f"{before}{text}{after}",
        "fenced": f"{before}```{draw(st.sampled_from(['', 'json', ' js ']))}\n{text}\n```{after}",
        "prose": f"Here {before}{text}{after}",
        "unclosed": f"{before}```\n{text}{after}",
        "twice": f"{before}{text} {text}{after}",
    }[style]


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(outputs() | st.none(), min_size=1, max_size=12),
    st.sampled_from(["lenient", "strict"]),
    st.sampled_from(SCHEMAS),
)
def test_bulk_path_equals_the_parser_on_fuzzed_outputs(texts, extract, schema) -> None:
    parser = OutputParser(ParserSpec(extract, schema, FIELDS))
    assert_same_columns(parser, texts + texts[:2])


def test_fence_pattern_has_the_shape_the_bulk_path_relies_on() -> None:
    from evalkit.contract.batch import FENCE_OPENING, FENCE_REST
    from evalkit.contract.parse import _FENCE

    assert _FENCE.pattern == FENCE_OPENING + "(.*?)" + FENCE_REST
    assert FENCE_REST == "(?:```|\\Z)"
    assert "(" not in FENCE_OPENING  # no group before the body's
