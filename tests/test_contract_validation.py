"""Validator edge cases, pinned: the verdict is the same on every path that can decide it.

The paths: jsonschema-rs (decides format validity in the scorer), the
jsonschema explainer (describes invalid outputs), and the whole scorer run in
one process or in a worker pool. The pinned semantics (docs/contracts.md):
ECMA-262 regular expressions, ``format`` never asserted, ``multipleOf`` exact
in decimal.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalkit.contract.validation import build_explainer, compile_fast, explain

# (schema, instance, evalkit's verdict, why)
EDGE_CASES = [
    ({"type": "string", "format": "email"}, "not-an-email", True, "format is an annotation"),
    ({"type": "string", "format": "date"}, "2020-13-45", True, "format is an annotation"),
    ({"type": "string", "format": "ipv4"}, "999.1.1.1", True, "format is an annotation"),
    ({"pattern": "^\\d+$"}, "١٢٣", False, "\\d is [0-9] (Arabic-Indic digits do not match)"),
    ({"pattern": "^[\\d]+$"}, "١٢", False, "\\d inside a class is [0-9] too"),
    ({"pattern": "^\\D$"}, "١", True, "\\D matches a non-ASCII digit"),
    ({"pattern": "^\\d+$"}, "123", True, "ASCII digits match"),
    ({"pattern": "^\\d+$"}, "123\n", False, "$ matches only at the very end"),
    ({"pattern": "abc$"}, "abc\n", False, "$ does not match before a trailing newline"),
    ({"pattern": "^\\w+$"}, "é", False, "\\w is [A-Za-z0-9_]"),
    ({"pattern": "^\\s$"}, "\ufeff", True, "\\s includes U+FEFF (ECMA whitespace)"),
    ({"pattern": "^\\s$"}, "\u00a0", True, "\\s includes no-break space"),
    ({"pattern": "^a.b$"}, "a\rb", False, ". stops at \\r (an ECMA line terminator)"),
    ({"pattern": "^a.b$"}, "a\u2028b", False, ". stops at U+2028"),
    ({"multipleOf": 0.01}, 19.99, True, "multipleOf is exact in decimal"),
    ({"multipleOf": 0.1}, 0.3, True, "multipleOf is exact in decimal"),
    ({"multipleOf": 0.01}, 19.991, False, "not a multiple"),
    ({"type": "integer"}, 1.0, True, "1.0 is an integer"),
    ({"enum": [1]}, True, False, "true is not 1"),
    (
        {"patternProperties": {"^\\d+$": {"type": "string"}}, "additionalProperties": False},
        {"١": "x"},
        False,
        "patternProperties and additionalProperties use the same regex dialect",
    ),
    (
        {"type": "object", "propertyNames": {"pattern": "^[a-z]+$"}},
        {"abc\n": 1},
        False,
        "propertyNames patterns too",
    ),
]


@pytest.mark.parametrize(("schema", "instance", "verdict", "why"), EDGE_CASES)
def test_edge_cases_are_pinned_on_both_validators(schema, instance, verdict, why) -> None:
    fast = compile_fast(schema)
    explainer = build_explainer(schema)
    assert fast.is_valid(instance) is verdict, why
    assert explainer.is_valid(instance) is verdict, why
    if not verdict:
        keyword, message = explain(lambda: explainer, fast, instance)
        assert keyword in {"pattern", "multipleOf", "enum", "additionalProperties",
                           "propertyNames", "type"}  # fmt: skip
        assert message.startswith("$")


def test_plain_python_re_would_disagree() -> None:
    """Why the delegation exists: Python's re and jsonschema's defaults differ here."""
    import re

    import jsonschema

    assert re.search("^\\d+$", "١٢٣") is not None
    assert re.search("abc$", "abc\n") is not None
    assert not jsonschema.Draft202012Validator({"multipleOf": 0.01}).is_valid(19.99)


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(["^\\d{2,4}$", "^[A-Za-z]{3}-\\d{6}$", "\\w+@\\w+", "^a.b$", "^\\s*x$", "z$"]),
    st.text(alphabet=st.sampled_from("0159١٣aZé_-@ \n\r\u2028\ufeffxzb."), max_size=10),
)
def test_validators_agree_on_patterns(pattern: str, text: str) -> None:
    schema = {"type": "string", "pattern": pattern}
    assert compile_fast(schema).is_valid(text) == build_explainer(schema).is_valid(text)


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from([0.01, 0.1, 0.25, 3, 0.05]),
    st.integers(0, 100_000).map(lambda cents: cents / 100),
)
def test_validators_agree_on_multiple_of(divisor: float, value: float) -> None:
    schema = {"multipleOf": divisor}
    assert compile_fast(schema).is_valid(value) == build_explainer(schema).is_valid(value)


def test_scorer_verdicts_do_not_depend_on_the_worker_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import evalkit.scoring.workers as workers
    from evalkit import score

    schema = {
        "type": "object",
        "required": ["code"],
        "properties": {
            "code": {"type": "string", "pattern": "^\\d{3}$"},
            "price": {"type": "number", "multipleOf": 0.01},
            "mail": {"type": "string", "format": "email"},
        },
    }
    contract = tmp_path / "c.json"
    contract.write_text(json.dumps({
        "name": "edges", "version": 1, "id": "id",
        "output": {"parse": "json", "extract": "strict", "schema": schema},
        "fields": {"code": {"gold": "code"}},
    }))  # fmt: skip
    outputs = [
        {"code": "123"}, {"code": "١٢٣"}, {"code": "123\n"}, {"code": "12"},
        {"code": "123", "price": 19.99}, {"code": "123", "price": 19.991},
        {"code": "123", "mail": "nope"},
    ] * 30  # fmt: skip
    ids = [f"e{i:04d}" for i in range(len(outputs))]
    pl.DataFrame({"id": ids, "code": ["123"] * len(ids)}).write_parquet(tmp_path / "gold.parquet")
    pl.DataFrame({"id": ids, "output": [json.dumps(o) for o in outputs]}).write_ndjson(
        tmp_path / "pred.jsonl"
    )
    monkeypatch.setattr(workers, "CHUNK_ROWS", 16)
    results = [
        score(contract, tmp_path / "gold.parquet", tmp_path / "pred.jsonl", workers=n)
        for n in (1, 2)
    ]
    assert results[0].examples.equals(results[1].examples)
    for index, result in enumerate(results):
        result.write(tmp_path / f"out{index}")
    assert (tmp_path / "out0" / "examples.parquet").read_bytes() == (
        tmp_path / "out1" / "examples.parquet"
    ).read_bytes()
    verdicts = results[0].examples.sort("id")["error"].to_list()[:7]
    assert verdicts == [None, "schema:pattern", "schema:pattern", "schema:pattern", None,
                        "schema:multipleOf", None]  # fmt: skip
