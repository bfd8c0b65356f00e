"""The JSON Schema of the contract format, generated from the pydantic model.

Committed as ``contracts/contract.schema.json`` (a test keeps it in sync), so
editors can complete and check contract files, and other tools can validate
them without evalkit.
"""

from __future__ import annotations

import os
from typing import Any


def contract_json_schema() -> dict[str, Any]:
    """The JSON Schema (2020-12) of a contract file, as the model accepts it."""
    from evalkit.contract.model import Contract

    schema = Contract.model_json_schema(by_alias=True, mode="validation")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        **schema,
    }


def contract_json_schema_text(
    *, out: str | os.PathLike[str] | None = None, force: bool = False
) -> str:
    """The schema as stable, indented JSON text with a final newline.

    With ``out`` it is written there too, as ``evalkit contract schema --out``
    writes it (which is this call): atomically, over an existing file only
    with ``force``.
    """
    import json

    from evalkit.io import ReportFile

    target = ReportFile.checked(out, force=force, option="out")
    text = json.dumps(contract_json_schema(), indent=2, ensure_ascii=False) + "\n"
    target.write(text)
    return text
