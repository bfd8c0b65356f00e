"""Loading a contract from YAML or JSON, with errors that name the key.

Loading is where every contract mistake surfaces: a YAML syntax error (with
its line), a duplicated key, an unknown key (with the keys allowed there), a
wrong value, a broken JSON Schema. The result is a :class:`Contract` whose
schema is inline and complete, so the normalised contract fingerprints the
rules themselves and not a file name.
"""

from __future__ import annotations

import os
import types
import typing
from pathlib import Path
from typing import Any

from evalkit.contract.model import Contract
from evalkit.errors import InvalidContract, InvalidSchema, UnreadableFile

DEFAULT_SCHEMA: dict[str, Any] = {"type": "object"}


def read_document(path: Path, kind: str = "contract") -> Any:
    """Parse a YAML (``.yaml``/``.yml``) or JSON file; errors name the file and line.

    ``kind`` names what the file should be (a contract, a JSON Schema) in errors.
    Reading goes through :mod:`evalkit.io`: safe YAML with bounded
    aliases and nesting, keys given twice refused, FIFOs and devices refused.
    """
    from evalkit.io import DocumentError, load_document, require_regular_file

    if not path.exists():
        raise UnreadableFile(f"{path}: no such file")
    if path.is_dir():
        raise UnreadableFile(f"{path}: is a folder, expected a {kind} file")
    suffix = path.suffix.lower()
    if suffix not in (".yaml", ".yml", ".json"):
        found = f", not {suffix!r}" if suffix else ""
        raise UnreadableFile(f"{path}: a {kind} file must end in .yaml or .json{found}")
    require_regular_file(path, f"{kind} file")
    try:
        return load_document(path, f"{kind} file")
    except DocumentError as error:
        raise InvalidContract(error.message) from error


def _unwrap(annotation: Any) -> list[Any]:
    """The model classes an annotation may hold, stepping through Optional/list/dict."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return [inner for arg in typing.get_args(annotation) for inner in _unwrap(arg)]
    if origin in (list, dict):
        return [("container", origin, typing.get_args(annotation)[-1])]
    return [annotation]


def _allowed_keys(location: tuple[Any, ...]) -> list[str]:
    """Keys allowed in the mapping at ``location`` (to list them in an unknown-key error)."""
    from pydantic import BaseModel

    current: list[Any] = [Contract]
    parts = list(location)
    while parts:
        part = parts.pop(0)
        following: list[Any] = []
        for item in current:
            if isinstance(item, tuple):  # a container: this part is a key or an index
                following += _unwrap(item[2])
            elif isinstance(item, type) and issubclass(item, BaseModel):
                for name, info in item.model_fields.items():
                    if part in (name, info.alias):
                        following += _unwrap(info.annotation)
        current = following
    for item in current:
        if isinstance(item, type) and issubclass(item, BaseModel):
            return sorted(info.alias or name for name, info in item.model_fields.items())
    return []


def _dotted(location: tuple[Any, ...]) -> str:
    text = ""
    for part in location:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def describe_validation_error(error: Any) -> str:
    """One line for the first problem pydantic found, naming the key."""
    detail = error.errors()[0]
    location = tuple(part for part in detail["loc"] if not (isinstance(part, str) and "[" in part))
    key = _dotted(location)
    kind = detail["type"]
    if kind == "extra_forbidden":
        allowed = ", ".join(_allowed_keys(location[:-1]))
        return f"unknown key {key!r}; the keys allowed there are: {allowed}"
    if kind == "missing":
        return f"missing key {key!r}"
    message = str(detail["msg"]).removeprefix("Value error, ")
    if kind == "value_error":
        return f"{key}: {message}" if key else message
    given = detail.get("input")
    shown = repr(given) if isinstance(given, str | int | float | bool) else type(given).__name__
    return f"key {key!r}: {message[:1].lower() + message[1:]} (got {shown})"


def _load_schema_file(
    contract_path: Path,
    relative: str,
    key: str = "output.schema_file",
    kind: str = "JSON Schema",
) -> Any:
    """The schema file a contract names, which must lie in the contract's folder (or below).

    A contract is often taken from someone else (a pull request, a shared
    repository); ``../../`` or an absolute path would make scoring read and
    copy into ``summary.json`` any file the user can read. Links are
    resolved first, so a symbolic link inside the folder cannot point out.
    """
    folder = contract_path.parent.resolve()
    target = (folder / relative).resolve()
    if folder not in target.parents:
        raise InvalidSchema(
            f"{contract_path}: {key}: {relative!r} resolves to {target}, outside "
            f"the contract's folder {folder}; keep the file beside the contract (or in "
            "a folder below it)"
        )
    try:
        document = read_document(target, kind=kind)
    except UnreadableFile as error:
        raise InvalidContract(
            f"{contract_path}: {key}: {error.message}; the path is relative to the contract file"
        ) from error
    if kind != "JSON Schema":
        return document
    if not isinstance(document, dict):
        raise InvalidSchema(f"{target}: a JSON Schema must be an object")
    return document


def load_contract(path: str | os.PathLike[str]) -> Contract:
    """Read, validate and complete a contract file (YAML or JSON).

    Raises :class:`~evalkit.errors.InvalidContract` (or :class:`InvalidSchema`)
    with one line naming the file and the key. The returned contract holds its
    JSON Schema inline (from ``schema_file`` or the default ``{type: object}``).
    """
    from pydantic import ValidationError

    contract_path = Path(path)
    document = read_document(contract_path)
    if not isinstance(document, dict):
        found = "nothing" if document is None else f"a {type(document).__name__}"
        raise InvalidContract(f"{contract_path}: expected a mapping of keys, found {found}")
    try:
        contract = Contract.model_validate(document)
    except ValidationError as error:
        raise InvalidContract(f"{contract_path}: {describe_validation_error(error)}") from error
    return complete_schema(contract, contract_path)


def complete_schema(contract: Contract, contract_path: Path) -> Contract:
    """Inline ``schema_file`` (or the default schema) and check the schema; return the contract."""
    from evalkit.contract.validation import SchemaProblem, check_schema

    output = contract.output
    if output.parse == "tool_calls":
        return _complete_tools(contract, contract_path)
    if output.parse != "json":
        return contract
    schema = output.json_schema
    if output.schema_file is not None:
        schema = _load_schema_file(contract_path, output.schema_file)
    if schema is None:
        schema = dict(DEFAULT_SCHEMA)
    try:
        check_schema(schema)
    except SchemaProblem as problem:
        key = "output.schema_file" if output.schema_file else "output.schema"
        raise InvalidSchema(f"{contract_path}: {key}: {problem}") from problem
    new_output = output.model_copy(update={"json_schema": schema, "schema_file": None})
    completed = contract.model_copy(update={"output": new_output})
    from evalkit.contract.producible import unproducible_fields

    for name, why in unproducible_fields(completed):
        key = "output.schema_file" if output.schema_file else "output.schema"
        raise InvalidSchema(
            f"{contract_path}: fields.{name}: no format-valid output can match it ({why}); "
            f"fix the field or {key}"
        )
    return completed


def _complete_tools(contract: Contract, contract_path: Path) -> Contract:
    """Inline ``tools_file`` as ``tools`` and check an inline tools list (each tool's
    ``parameters`` must be a JSON Schema)."""
    from evalkit.contract.tool_rules import ToolProblem, tools_list

    output = contract.output
    key = "output.tools"
    tools: Any = output.tools
    if output.tools_file is not None:
        key = "output.tools_file"
        tools = _load_schema_file(contract_path, output.tools_file, key, "tools")
    if isinstance(tools, str):  # a gold column: checked row by row when gold is read
        return contract
    try:
        checked = tools_list(tools)
    except ToolProblem as problem:
        raise InvalidSchema(f"{contract_path}: {key}: {problem}") from problem
    if not checked:
        raise InvalidContract(f"{contract_path}: {key}: the list of tools is empty")
    new_output = output.model_copy(update={"tools": checked, "tools_file": None})
    return contract.model_copy(update={"output": new_output})
