"""From raw text to a value or one error category: every category, hostile outputs, fuzzing."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalkit.contract.parse import (
    ARRAY,
    NULL,
    NUMBER,
    STRING,
    OutputParser,
    ParserSpec,
    duplicate_key,
    parse_frame,
)

SCHEMA = {
    "type": "object",
    "required": ["category", "priority"],
    "properties": {
        "category": {"enum": ["billing", "shipping"]},
        "priority": {"enum": ["low", "high"]},
        "amount": {"type": ["number", "null"]},
    },
}
GOOD = {"category": "billing", "priority": "low"}
CATEGORIES = {
    "missing",
    "empty",
    "no_json",
    "invalid_json",
    "schema:enum",
    "schema:required",
    "schema:type",
}


def parser(extract: str = "lenient", schema: dict | None = None) -> OutputParser:
    return OutputParser(ParserSpec(extract, schema or SCHEMA, ("category", "priority", "amount")))


LENIENT = parser()
STRICT = parser("strict")


@pytest.mark.parametrize(
    ("text", "category"),
    [
        (None, "missing"),
        ("", "empty"),
        (" \n\t ", "empty"),
        ("The ticket is about billing.", "no_json"),
        ("I can't help with {that}.", "no_json"),
        ('{"category": "billing", "priority": "lo', "invalid_json"),
        ("{'category': 'billing', 'priority': 'low'}", "invalid_json"),
        ('{"category": "billing", "priority": "low",}', "invalid_json"),
        ('{"category": "refund", "priority": "low"}', "schema:enum"),
        ('{"category": "billing"}', "schema:required"),
        ('{"category": "billing", "priority": "low", "amount": "12"}', "schema:type"),
        ("[1, 2]", "schema:type"),
        ('"billing"', "schema:type"),
        ("42", "schema:type"),
    ],
)
def test_every_error_category(text: str | None, category: str) -> None:
    error, detail, value = LENIENT.parse(text)
    assert error == category
    assert value is None
    assert detail and "\n" not in detail and len(detail) <= 200


@pytest.mark.parametrize(
    "text",
    [
        json.dumps(GOOD),
        "  " + json.dumps(GOOD, indent=2) + "\n",
        "```json\n" + json.dumps(GOOD) + "\n```",
        "```\n" + json.dumps(GOOD) + "\n```",
        "Here you go:\n```json\n" + json.dumps(GOOD) + "\n```\nAnything else?",
        "Sure! " + json.dumps(GOOD) + " Hope that helps.",
        "Sure! " + json.dumps(GOOD) + " and also {" + '"x": 1}',
        "Answer (see {notes}): " + json.dumps(GOOD),
        "```json\n" + json.dumps(GOOD),  # unclosed fence
    ],
)
def test_lenient_finds_the_json(text: str) -> None:
    assert LENIENT.parse(text) == (None, None, GOOD)


@pytest.mark.parametrize(
    ("text", "category"),
    [
        ("```json\n" + json.dumps(GOOD) + "\n```", "no_json"),
        ("Sure! " + json.dumps(GOOD), "no_json"),
        (json.dumps(GOOD) + " thanks", "invalid_json"),
        ('{"category": "billing", "priority": "lo', "invalid_json"),
    ],
)
def test_strict_needs_the_whole_output(text: str, category: str) -> None:
    assert STRICT.parse(text)[0] == category
    assert STRICT.parse(json.dumps(GOOD)) == (None, None, GOOD)


def test_a_truncated_object_is_not_replaced_by_an_inner_one() -> None:
    schema = {"type": "object"}  # an inner {"a": 1} would pass this schema
    text = '{"category": "billing", "meta": {"a": 1}, "priority": "lo'
    error, detail, _ = parser(schema=schema).parse(text)
    assert error == "invalid_json"
    assert "truncated" in (detail or "")


def test_hostile_outputs_get_a_category() -> None:
    # Ten megabytes each: a parser that went quadratic on any of them would
    # not finish the suite. Speed itself is measured in bench/, not asserted.
    cases = {
        "ten_megabytes_of_text": ("x" * 10_000_000, "no_json"),
        "ten_megabytes_of_braces": ('{"' * 5_000_000, "invalid_json"),
        "ten_megabytes_in_a_string": (
            json.dumps({**GOOD, "note": "y" * 10_000_000}),
            None,
        ),
        "deep_objects": ('{"a":' * 100_000 + "1" + "}" * 100_000, "invalid_json"),
        "deep_arrays": ("[" * 100_000 + "]" * 100_000, "invalid_json"),
        "nan": ('{"category": "billing", "priority": "low", "amount": NaN}', "invalid_json"),
        "infinity": (
            '{"category": "billing", "priority": "low", "amount": Infinity}',
            "invalid_json",
        ),
        "duplicate_keys": (
            '{"category": "billing", "priority": "low", "category": "x"}',
            "invalid_json",
        ),
        "array": ('[{"category": "billing", "priority": "low"}]', "schema:type"),
        "scalar": ("true", "schema:type"),
        "lone_surrogate": ('{"category": "bil\\ud800", "priority": "low"}', "invalid_json"),
        "raw_surrogate": ("Sure: " + json.dumps(GOOD) + " \ud800", "invalid_json"),
        "raw_surrogate_prose": ("no json here \udc00", "invalid_json"),
    }
    for name, (text, expected) in cases.items():
        error, detail, _ = LENIENT.parse(text)
        assert error == expected, (name, error, detail)
    assert "nested deeper than 1,024 levels" in (LENIENT.parse(cases["deep_arrays"][0])[1] or "")
    assert "'category' is given twice" in (LENIENT.parse(cases["duplicate_keys"][0])[1] or "")


def test_duplicate_keys_are_found_at_any_depth() -> None:
    nested = '{"a": {"b": 1, "b": 2}}'
    assert duplicate_key(nested, json.loads(nested)) == "b"
    listed = '[{"k": 1}, {"k": 2, "k": 3}]'
    assert duplicate_key(listed, json.loads(listed)) == "k"
    spaced = '{"a" : 1, "a": 2, "b": 3}'  # whitespace before a colon
    assert duplicate_key(spaced, json.loads(spaced)) == "a"
    fine = '{"time": "12:30", "url": "http://x", "nested": {"a": 1}}'
    assert duplicate_key(fine, json.loads(fine)) is None


def test_batch_columns_carry_kind_and_value() -> None:
    texts = [
        json.dumps({**GOOD, "amount": 12.5}),
        json.dumps({**GOOD, "amount": None}),
        json.dumps(GOOD),
        "nope",
        None,
        json.dumps({**GOOD, "amount": 12.5}),  # a repeat, parsed once
    ]
    frame = parse_frame(LENIENT, texts)
    assert frame["error"].to_list() == [None, None, None, "no_json", "missing", None]
    assert frame["k0"].to_list() == [STRING, STRING, STRING, 0, 0, STRING]
    assert frame["v0"].to_list() == ["billing", "billing", "billing", None, None, "billing"]
    assert frame["k2"].to_list() == [NUMBER, NULL, 0, 0, 0, NUMBER]
    assert frame["v2"].to_list() == ["12.5", "null", None, None, None, "12.5"]


def test_composite_values_are_canonical_json() -> None:
    text = json.dumps({**GOOD, "amount": None, "extra": 1})
    spec = ParserSpec("lenient", {"type": "object"}, ("tags",))
    frame = parse_frame(OutputParser(spec), [json.dumps({"tags": [{"b": 1, "a": 2}]}), text])
    assert frame["k0"].to_list() == [ARRAY, 0]
    assert frame["v0"].to_list() == ['[{"a":2,"b":1}]', None]


scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.text(max_size=20)
    | st.floats(allow_nan=False, allow_infinity=False)
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=400) | st.binary(max_size=200).map(lambda b: b.decode("latin-1")))
def test_any_text_gets_exactly_one_verdict(text: str) -> None:
    for candidate in (LENIENT, STRICT):
        error, detail, value = candidate.parse(text)
        if error is None:
            assert detail is None and isinstance(value, dict)
            assert candidate.validator.is_valid(value)
        else:
            assert value is None and detail
            assert error in CATEGORIES or error.startswith("schema:")


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(st.sampled_from(["category", "priority", "x", "y"]), json_values, max_size=4),
    st.text(
        alphabet=st.characters(exclude_characters="{}`", exclude_categories=["Cs"]), max_size=40
    ),
    st.text(
        alphabet=st.characters(exclude_characters="{}`", exclude_categories=["Cs"]), max_size=40
    ),
    st.sampled_from(["plain", "fenced", "prose", "indented"]),
)
def test_wrapping_does_not_change_the_verdict(obj, before, after, style) -> None:
    schema_free = parser(schema={"type": "object"})
    text = json.dumps(obj)
    wrapped = {
        "plain": text,
        "indented": json.dumps(obj, indent=2),
        "fenced": f"{before}\n```json\n{text}\n```\n{after}",
        "prose": f"{before} {text} {after}",
    }[style]
    error, _, value = schema_free.parse(wrapped)
    assert error is None and value == obj
    assert schema_free.parse(text) == (None, None, obj)
