"""Can a format-valid output hold each field the contract compares?

A field whose key the output schema forbids (``additionalProperties:
false`` without it, a ``false`` subschema), or whose matcher needs a type
the schema rules out (``match: number`` on ``type: string``), can never
match a non-null gold value: every candidate would score 0 on it, whatever
it answers. That is a mistake in the contract, so loading it fails and
names the field. Only what the schema decides for certain is judged
(``type``, ``const``, ``enum``, ``properties``, ``patternProperties``,
``additionalProperties``, ``propertyNames``, ``anyOf``/``oneOf`` of those,
and local ``$ref``); anything else is taken to allow the field.
"""

from __future__ import annotations

import re
from typing import Any

from evalkit.contract.matchers import matcher
from evalkit.contract.model import Contract

JSON_TYPES = frozenset({"null", "boolean", "integer", "number", "string", "array", "object"})
_MAX_REF_DEPTH = 32


def _resolve(schema: Any, root: Any, depth: int = 0) -> Any:
    """``schema`` with a local ``$ref`` (``#/…``) followed; anything else as it is."""
    while isinstance(schema, dict) and isinstance(schema.get("$ref"), str):
        if depth >= _MAX_REF_DEPTH:
            return None
        reference = schema["$ref"]
        if not reference.startswith("#"):
            return None  # not local: not judged
        target: Any = root
        for part in filter(None, reference[1:].split("/")):
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(target, dict) or part not in target:
                return None
            target = target[part]
        extra = {key: value for key, value in schema.items() if key != "$ref"}
        if extra:
            return None  # $ref beside other keywords: not judged
        schema, depth = target, depth + 1
    return schema


def _type_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def allowed_types(schema: Any, root: Any) -> set[str] | None:
    """The JSON types ``schema`` admits for certain (an ``integer`` is a ``number`` too).

    ``None`` when the schema is not judged (a keyword this does not follow).
    """
    schema = _resolve(schema, root)
    if schema is True or schema == {}:
        return set(JSON_TYPES)
    if schema is False:
        return set()
    if not isinstance(schema, dict):
        return None
    found = set(JSON_TYPES)
    declared = schema.get("type")
    if isinstance(declared, str):
        declared = [declared]
    if isinstance(declared, list) and all(isinstance(item, str) for item in declared):
        named = set(declared)
        if "number" in named:
            named.add("integer")
        found &= named
    values = [schema["const"]] if "const" in schema else schema.get("enum")
    if isinstance(values, list):
        kinds = {_type_of(item) for item in values}
        if "integer" in kinds:
            kinds.add("number")
        found &= kinds
    for combiner in ("anyOf", "oneOf"):
        branches = schema.get(combiner)
        if isinstance(branches, list):
            union: set[str] = set()
            for branch in branches:
                branch_kinds = allowed_types(branch, root)
                if branch_kinds is None:
                    return found
                union |= branch_kinds
            found &= union
    return found


def _key_schema(schema: dict[str, Any], key: str, root: Any) -> tuple[Any, str | None]:
    """(the subschema a key's value must meet, or why the key is refused) in an object schema."""
    names = _resolve(schema.get("propertyNames"), root)
    if isinstance(names, dict):
        if "enum" in names and isinstance(names["enum"], list) and key not in names["enum"]:
            return None, "propertyNames.enum does not list it"
        if "const" in names and names["const"] != key:
            return None, "propertyNames.const is another name"
        pattern = names.get("pattern")
        if isinstance(pattern, str) and _search(pattern, key) is False:
            return None, f"propertyNames.pattern {pattern!r} does not match it"
    elif names is False:
        return None, "propertyNames is false"
    properties = schema.get("properties")
    if isinstance(properties, dict) and key in properties:
        return properties[key], None
    patterns = schema.get("patternProperties")
    if isinstance(patterns, dict):
        for pattern, subschema in patterns.items():
            if _search(pattern, key):
                return subschema, None
    additional = _resolve(schema.get("additionalProperties", True), root)
    if additional is False:
        return None, "additionalProperties: false, and properties does not list it"
    return additional, None


def _search(pattern: str, key: str) -> bool | None:
    """Whether a JSON Schema pattern (ECMA 262, mostly Python's syntax) finds ``key``."""
    try:
        return re.search(pattern, key) is not None
    except re.error:
        return None  # a pattern Python cannot read: not judged


def unproducible_fields(contract: Contract) -> list[tuple[str, str]]:
    """(field, why) for every field a format-valid output can never hold (``parse: json``)."""
    schema = contract.output.json_schema
    if contract.output.parse != "json" or schema is None:
        return []
    root = _resolve(schema, schema)
    kinds = allowed_types(root, schema)
    if kinds is not None and "object" not in kinds:
        shown = ", ".join(sorted(kinds)) or "nothing"
        why = f"the schema admits {shown}, never an object with keys"
        return [(name, why) for name in contract.fields]
    if not isinstance(root, dict):
        return []
    problems = []
    for name, spec in contract.fields.items():
        subschema, refused = _key_schema(root, name, schema)
        if refused is not None:
            problems.append((name, f"the schema admits no key {name!r}: {refused}"))
            continue
        rule = matcher(spec.match)
        needed = rule.output_types
        allowed = allowed_types(subschema, schema)
        if allowed is None:
            continue
        if not allowed - {"null"}:
            problems.append((name, f"the schema allows key {name!r} no value but null"))
        elif needed is not None and not needed & allowed:
            shown = ", ".join(sorted(allowed))
            why = (
                f"match: {spec.match} needs {rule.needs}, but the schema allows {name!r} "
                f"only {shown}"
            )
            problems.append((name, why))
    return problems
