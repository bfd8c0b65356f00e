"""The meta-schema check that skips ``jsonschema`` agrees with ``jsonschema``.

A contract's schema that jsonschema-rs finds valid against its meta-schema is
not checked again by ``jsonschema`` (whose import costs more than loading the
contract). The reference is ``jsonschema``'s own meta-schema check: whatever
jsonschema-rs accepts, it accepts too, on random schema-like documents, so
no schema that used to be refused is now let through.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalkit.contract.validation import KNOWN_DRAFTS, meta_valid_fast

TRIAGE = Path(__file__).resolve().parents[1] / "contracts" / "ticket-triage.yaml"

KEYWORDS = [
    "type", "properties", "required", "enum", "const", "items", "prefixItems",
    "additionalProperties", "minimum", "maximum", "exclusiveMinimum", "minLength",
    "maxLength", "pattern", "anyOf", "oneOf", "allOf", "not", "$ref", "$defs", "definitions",
    "format", "multipleOf", "uniqueItems", "minItems", "maxItems", "patternProperties",
    "dependentRequired", "if", "then", "else", "contains", "propertyNames", "title",
    "unevaluatedProperties", "minProperties", "dependencies", "$schema", "$id", "a",
]  # fmt: skip
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.floats(-2, 2, allow_nan=False),
    st.sampled_from(
        [
            "string",
            "object",
            "array",
            "number",
            "integer",
            "null",
            "strin",
            "#",
            "#/$defs/a",
            "^a$",
            "(",
            *sorted(KNOWN_DRAFTS),
        ]
    ),
)
SCHEMAS = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(KEYWORDS), inner, max_size=4)
    ),
    max_leaves=12,
)


def _jsonschema_valid(schema: Any) -> bool:
    draft = jsonschema.Draft202012Validator
    if isinstance(schema, dict):
        draft = jsonschema.validators.validator_for(schema, default=draft)
    return bool(draft(draft.META_SCHEMA).is_valid(schema))


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(SCHEMAS)
def test_what_jsonschema_rs_accepts_jsonschema_accepts(schema: Any) -> None:
    if isinstance(schema, dict) and schema.get("$schema") not in (None, *KNOWN_DRAFTS):
        return  # refused before either check runs
    if meta_valid_fast(schema):
        assert _jsonschema_valid(schema)


def test_known_schemas_are_judged_alike() -> None:
    valid = [
        {"type": "object", "required": ["a"], "properties": {"a": {"enum": ["x", "y"]}}},
        {"$schema": "http://json-schema.org/draft-07/schema#", "definitions": {"c": {}}},
        {"anyOf": [{"type": "string"}, {"type": "null"}], "pattern": "^[a-z]+$"},
        True,
    ]
    invalid = [{"type": "strin"}, {"required": "a"}, {"minimum": "0"}, {"items": 3}, 5]
    for schema in valid:
        assert meta_valid_fast(schema) and _jsonschema_valid(schema), schema
    for schema in invalid:
        assert not meta_valid_fast(schema) and not _jsonschema_valid(schema), schema


def test_loading_a_valid_contract_does_not_import_jsonschema() -> None:
    code = (
        "import sys\n"
        "from evalkit.contract.load import load_contract\n"
        f"load_contract({str(TRIAGE)!r})\n"
        "print('jsonschema' in sys.modules)\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert completed.stdout.strip() == "False"
