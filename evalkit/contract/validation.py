"""JSON Schema checking with one semantics, whichever validator runs.

Validators disagree at the edges (measured with jsonschema 4.26 and
jsonschema-rs 0.61): Python's ``re`` lets ``\\d`` match Arabic-Indic digits and
``$`` match before a trailing newline, ECMA-262 does neither; jsonschema calls
19.99 not a multiple of 0.01 (binary floating point), jsonschema-rs calls it
one; fastjsonschema asserts ``format``, the others do not by default.

evalkit's semantics (docs/contracts.md): **jsonschema-rs decides** whether an
output is format-valid, on every code path (single process or worker pool).
Its behaviour is ECMA-262 regular expressions (``\\d`` is ``[0-9]``, ``$`` only
at the very end, ``.`` stops at any line terminator), ``multipleOf`` exact in
decimal, and ``format`` an annotation that is never asserted; its first error
names the category (``schema:<keyword>``). The Python ``jsonschema``
validator is used for what it does best: checking the schema against its
meta-schema when the contract loads, and finding the most relevant error
inside ``anyOf``/``oneOf`` for the message (the meta-schema check runs
only for a schema jsonschema-rs' own meta-schema check rejects, to word why). Its ``pattern``,
``patternProperties``, ``additionalProperties`` and ``multipleOf`` are
delegated to jsonschema-rs so that it agrees with the verdict (tests pin the
edge cases on both). Remote ``$ref`` is never fetched.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import Any

SEMANTICS_VERSION = 1

KNOWN_DRAFTS = {
    "http://json-schema.org/draft-04/schema#",
    "http://json-schema.org/draft-06/schema#",
    "http://json-schema.org/draft-07/schema#",
    "https://json-schema.org/draft/2019-09/schema",
    "https://json-schema.org/draft/2020-12/schema",
}


class SchemaProblem(Exception):
    """Raised here with a one-line reason; the loader turns it into InvalidSchema."""


TOOL_CALLS_SEMANTICS_VERSION = 1


def evaluator_semantics() -> dict[str, Any]:
    """What decides a verdict, recorded in every result and covered by the fingerprint.

    A change of validator or parser version may change a verdict at the edges,
    so two results made under different ones are not silently comparable.
    """
    import importlib.metadata  # here, not at the top: parsing workers never need it

    return {
        "semantics_version": SEMANTICS_VERSION,
        "json_parser": f"orjson {importlib.metadata.version('orjson')}",
        "validator": f"jsonschema-rs {importlib.metadata.version('jsonschema_rs')}",
        "regex": "ECMA-262",
        "format": "annotation",
        "duplicate_keys": "invalid_json",
        "max_depth": 1024,
    }


def semantics_of(contract: Any) -> dict[str, Any]:
    """The evaluator semantics of one contract: :func:`evaluator_semantics` and
    :func:`tool_semantics`."""
    return {**evaluator_semantics(), **tool_semantics(contract)}


def tool_semantics(contract: Any) -> dict[str, Any]:
    """``{"tool_calls": …}`` for a ``parse: tool_calls`` contract, else nothing.

    The version of the rules that find, check and compare calls, and the
    order ``auto`` tries the text syntaxes in. Other contracts keep the
    semantics, and so the fingerprints, they had.
    """
    if contract.output.parse != "tool_calls":
        return {}
    from evalkit.contract.tool_names import AUTO_ORDER

    return {
        "tool_calls": {
            "semantics_version": TOOL_CALLS_SEMANTICS_VERSION,
            "auto_order": ["structured", *AUTO_ORDER],
        }
    }


def compile_fast(schema: dict[str, Any]) -> Any:
    """The jsonschema-rs validator that decides format validity (offline, formats off)."""
    import jsonschema_rs

    try:
        return jsonschema_rs.validator_for(
            schema,
            validate_formats=False,
            offline=True,  # a remote $ref is an error, never a network request
        )
    except (jsonschema_rs.ValidationError, jsonschema_rs.ReferencingError, ValueError) as error:
        first = str(error).strip().splitlines()[0]
        if "not present in a registry" in first or "Retrieval" in first:
            raise SchemaProblem(
                f"{first}; evalkit never fetches remote $ref: inline the referenced schema "
                "under $defs and refer to it as #/$defs/..."
            ) from error
        raise SchemaProblem(first) from error


def check_schema(schema: dict[str, Any]) -> None:
    """Check a contract's schema against its meta-schema and compile it; raise SchemaProblem.

    ``jsonschema`` checks the structure (with the most relevant error); the
    regular expressions are then checked by compiling with jsonschema-rs,
    because it is the engine that will run them (ECMA-262, not Python's re).
    A schema that jsonschema-rs finds valid against its meta-schema skips the
    ``jsonschema`` check: the two agree on meta-validity (tests compare them on
    random schemas), and importing ``jsonschema`` costs more than loading the
    whole contract otherwise; only a schema it rejects gets ``jsonschema``'s
    most relevant error, worded as always.
    """
    declared = schema.get("$schema")
    if declared is not None and declared not in KNOWN_DRAFTS:
        raise SchemaProblem(
            f"$schema {declared!r} is not a known JSON Schema draft; use "
            "https://json-schema.org/draft/2020-12/schema or leave $schema out"
        )
    if not meta_valid_fast(schema):
        _check_meta_schema(schema)
    compile_fast(schema)


def meta_valid_fast(schema: Any) -> bool:
    """Whether jsonschema-rs finds ``schema`` valid against its draft's meta-schema.

    Anything it cannot take (a YAML date, an unknown draft) counts as not
    valid here, which only sends the schema to ``jsonschema``'s check.
    """
    import jsonschema_rs

    try:
        return bool(jsonschema_rs.meta.is_valid(schema))
    except Exception:  # the full check decides instead
        return False


def _check_meta_schema(schema: dict[str, Any]) -> None:
    """``jsonschema``'s meta-schema check; raise SchemaProblem naming its most relevant error."""
    import jsonschema
    from jsonschema.exceptions import best_match

    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    error = best_match(cls(cls.META_SCHEMA).iter_errors(schema))
    if error is not None:
        where = "".join(
            f"[{part!r}]" if isinstance(part, int) else f".{part}" for part in error.absolute_path
        )
        raise SchemaProblem(f"at schema{where}: {_one_line(error.message)}")


def _one_line(text: str, limit: int = 200) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


@functools.lru_cache(maxsize=1024)
def _ecma_checker(keyword: str, value: str | float) -> Callable[[Any], bool]:
    import jsonschema_rs

    validator = jsonschema_rs.validator_for({keyword: value}, validate_formats=False)
    return validator.is_valid


def _ecma_search(pattern: str, text: str) -> bool:
    return _ecma_checker("pattern", pattern)(text)


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema.exceptions import ValidationError

    if validator.is_type(instance, "string") and not _ecma_search(pattern, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _multiple_of(validator: Any, divisor: float, instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema.exceptions import ValidationError

    if validator.is_type(instance, "number") and not _ecma_checker("multipleOf", divisor)(instance):
        yield ValidationError(f"{instance!r} is not a multiple of {divisor}")


def _pattern_properties(
    validator: Any, patterns: dict[str, Any], instance: Any, schema: Any
) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if _ecma_search(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(
    validator: Any, additional: Any, instance: Any, schema: Any
) -> Iterator[Any]:
    from jsonschema.exceptions import ValidationError

    if not validator.is_type(instance, "object"):
        return
    properties = schema.get("properties", {})
    patterns = list(schema.get("patternProperties", {}))
    extras = [
        key
        for key in instance
        if key not in properties and not any(_ecma_search(p, key) for p in patterns)
    ]
    if validator.is_type(additional, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], additional, path=extra)
    elif not additional and extras:
        listed = ", ".join(repr(key) for key in sorted(extras))
        verb = "was" if len(extras) == 1 else "were"
        yield ValidationError(f"Additional properties are not allowed ({listed} {verb} unexpected)")


@functools.lru_cache(maxsize=8)
def _explainer_class(draft_class: type) -> Any:
    import jsonschema

    return jsonschema.validators.extend(
        draft_class,
        validators={
            "pattern": _pattern,
            "patternProperties": _pattern_properties,
            "additionalProperties": _additional_properties,
            "multipleOf": _multiple_of,
        },
    )


def build_explainer(schema: dict[str, Any]) -> Any:
    """A Python ``jsonschema`` validator with evalkit's semantics, for error explanations.

    No format checker (``format`` is an annotation) and an empty registry (a
    remote ``$ref`` is unresolvable rather than fetched).
    """
    import jsonschema
    import referencing

    draft = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return _explainer_class(draft)(schema, registry=referencing.Registry())


def _json_path(parts: Any) -> str:
    path = "$"
    for part in parts:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


COMBINATORS = frozenset({"anyOf", "oneOf", "allOf", "not"})


def explain(explainer: Callable[[], Any], fast: Any, instance: Any) -> tuple[str, str]:
    """(keyword, one-line message) of why ``instance`` breaks the schema.

    Called only for instances jsonschema-rs found invalid; its first error
    names the keyword (so the category comes from the validator that gave
    the verdict, and costs microseconds). When that keyword is a combinator
    (``anyOf``, ``oneOf``, ``allOf``, ``not``), whose own message says little,
    the message comes from jsonschema's most relevant error instead, which
    descends into the branch that came closest (``explainer`` is built on
    first use).
    """
    first = next(iter(fast.iter_errors(instance)))
    if type(first.kind).__name__ == "FalseSchema":
        keyword = "false"
    else:
        keyword = next(
            (str(part) for part in reversed(list(first.schema_path)) if isinstance(part, str)),
            "schema",
        )
    message = f"{_json_path(first.instance_path)}: {first.message}"
    if keyword in COMBINATORS:
        # Imported only here: jsonschema costs a parsing worker ~30 ms to import.
        from jsonschema.exceptions import best_match

        relevant = best_match(explainer().iter_errors(instance))
        if relevant is not None:
            message = f"{_json_path(relevant.absolute_path)}: {relevant.message}"
    return keyword, _one_line(message)
