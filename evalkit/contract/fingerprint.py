"""The normalised form of a contract and its fingerprint.

Two numbers are comparable only when they were made under the same rules.
The fingerprint is the sha256 of the normalised contract (every default made
explicit, the JSON Schema inline) together with the evaluator semantics
(parser, validator and their versions), so a changed threshold, a changed
schema file or an upgraded validator all change it.
"""

from __future__ import annotations

import hashlib
from typing import Any

from evalkit.contract.model import Contract


def normalized_contract(contract: Contract) -> dict[str, Any]:
    """The contract as plain JSON data, every default explicit, schema inline.

    ``schema_file`` is left out: the schema it named is inline, and a renamed
    file with the same schema is the same rule. ``gold_answer`` appears only
    when set, so contracts that read gold columns keep the fingerprint they
    had before the key existed; so does ``gate.require_servable``.
    """
    data = contract.model_dump(
        mode="json", by_alias=True, exclude={"output": {"schema_file", "tools_file"}}
    )
    if data.get("gold_answer") is None:
        data.pop("gold_answer", None)
    gate = data.get("gate")
    if isinstance(gate, dict) and gate.get("require_servable") is None:
        gate.pop("require_servable", None)
    # Keys added for parse: tool_calls appear only when set, so every other
    # contract keeps the fingerprint it had before they existed.
    if data.get("gold_calls") is None:
        data.pop("gold_calls", None)
    output = data["output"]
    for key in ("tools", "calls", "syntax"):
        if output.get(key) is None:
            output.pop(key, None)
    if output["parse"] == "tool_calls":
        for key in ("extract", "labels", "schema"):
            output.pop(key, None)
        for spec in data["fields"].values():
            if spec.get("gold") is None:
                spec.pop("gold", None)
    return data


def canonical_json(value: Any) -> bytes:
    """Sorted-key compact JSON: the byte form that is hashed."""
    import orjson

    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def contract_fingerprint(contract: Contract) -> str:
    """``sha256:<hex>`` of the normalised contract plus the evaluator semantics."""
    from evalkit.contract.validation import semantics_of

    return fingerprint_of(normalized_contract(contract), semantics_of(contract))


def fingerprint_of(normalized: dict[str, Any], evaluator: dict[str, Any]) -> str:
    """The fingerprint of a normalised contract and evaluator as a result records them.

    Compare recomputes it from ``summary.json`` so that a contract block edited
    after scoring (a loosened gate threshold, say) cannot pass as the original.
    """
    payload = {"contract": normalized, "evaluator": evaluator}
    return "sha256:" + hashlib.sha256(canonical_json(payload)).hexdigest()
