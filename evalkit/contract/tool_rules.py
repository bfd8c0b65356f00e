"""The rules of ``output.parse: tool_calls`` that do not depend on any output.

What a tool-calling contract may say (:func:`check_tool_contract`), which gold
columns it reads, what a row's tools are (each tool's ``parameters`` must be a
JSON Schema, checked as ``parse: json`` checks its schema), what a gold call is,
and the canonical text two calls are compared by: sorted keys, and numbers of
equal value written alike (``1 == 1.0``), so that arguments compare "exactly
after JSON normalisation" whatever order or spelling a model used.

The class of an example is the called function: the gold calls' function
name, ``none`` where no call is expected, and the sorted names joined with
``+`` when the gold calls several functions (``lookup_order+refund_status``),
so every example has one class and compare/gate judge them unchanged.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from evalkit.contract.tool_names import FUNCTION_CLASS, NO_CALL
from evalkit.contract.tool_syntax import Call, call_of, load_json

# A tool without ``parameters`` takes none (the OpenAI API: "omitting parameters
# defines a function with an empty parameter list").
NO_PARAMETERS: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": False}
_INT_LIMIT = 2**63
_SORT = orjson.OPT_SORT_KEYS


class ToolProblem(Exception):
    """A tools value or a gold call that breaks the rules, with a one-line reason."""


def same_numbers(value: Any) -> Any:
    """``value`` with every integral float as an int (``1.0`` is ``1``), recursively."""
    kind = type(value)
    if kind is float and value.is_integer() and -_INT_LIMIT < value < _INT_LIMIT:
        return int(value)
    if kind is list:
        return [same_numbers(item) for item in value]
    if kind is dict:
        return {key: same_numbers(item) for key, item in value.items()}
    return value


def canonical_arguments(arguments: dict[str, Any]) -> str:
    """The canonical JSON text of a call's arguments: keys sorted, ``1.0`` written ``1``.

    Flat arguments without floats (the usual case) need no rewriting first.
    """
    for value in arguments.values():
        kind = type(value)
        if kind is float or kind is dict or kind is list:
            return orjson.dumps(same_numbers(arguments), option=_SORT).decode()
    return orjson.dumps(arguments, option=_SORT).decode()


_NAME_TEXTS: dict[str, str] = {}
_NAME_TEXTS_LIMIT = 10_000


def call_text(name: str, arguments_text: str) -> str:
    """The canonical JSON text of one call, ``{"arguments": …, "name": …}`` (keys sorted),
    from its canonical arguments text."""
    quoted = _NAME_TEXTS.get(name)
    if quoted is None:  # a few names recur; a model's garbage names are not all kept
        quoted = orjson.dumps(name).decode()
        if len(_NAME_TEXTS) < _NAME_TEXTS_LIMIT:
            _NAME_TEXTS[name] = quoted
    return '{"arguments":' + arguments_text + ',"name":' + quoted + "}"


def calls_key(calls: Sequence[Call], mode: str) -> str:
    """The canonical text of a list of calls under ``calls: mode`` (sorted for ``set``).

    Two lists with equal keys match under every matcher (gold is checked so
    that this holds), so most examples are decided by comparing two strings.
    """
    texts = [call_text(name, canonical_arguments(arguments)) for name, arguments in calls]
    if mode == "set":
        texts.sort()
    return "[" + ",".join(texts) + "]"


def function_class(names: Sequence[str]) -> str:
    """The class of a list of calls: the function, ``none``, or the sorted names joined by ``+``."""
    return "+".join(sorted(set(names))) if names else NO_CALL


def _function_of(tool: dict[str, Any]) -> dict[str, Any]:
    return tool["function"] if "type" in tool else tool


def tools_list(value: Any) -> list[dict[str, Any]]:
    """A tools value (a list of function schemas, or its JSON text) as the list, checked.

    The shape is the chat reader's (:func:`evalkit.chat.extras.tools_value`);
    then every ``parameters`` must be a JSON Schema and names must be unique.
    Raises :class:`ToolProblem` naming the tool.
    """
    from evalkit.chat.extras import tools_value
    from evalkit.chat.values import ConversationProblem
    from evalkit.contract.validation import SchemaProblem, check_schema

    try:
        tools = tools_value(value)
    except ConversationProblem as problem:
        where = f"tools[{problem.message}]: " if problem.message is not None else ""
        raise ToolProblem(f"{where}{problem.reason}") from None
    if tools is None:
        return []
    seen: set[str] = set()
    for index, tool in enumerate(tools):
        function = _function_of(tool)
        name = function["name"]
        if name in seen:
            raise ToolProblem(f"tools[{index}] ({name}): the name is used twice in the list")
        seen.add(name)
        parameters = function.get("parameters")
        if parameters is None:
            continue
        try:
            check_schema(parameters)
        except SchemaProblem as problem:
            raise ToolProblem(
                f"tools[{index}] ({name}): parameters is not a valid JSON Schema: {problem}"
            ) from None
    return list(tools)


def tools_digest(tools: list[dict[str, Any]]) -> str:
    """The content hash of a row's tools (sorted-key JSON), the key the catalog keeps them by."""
    import orjson

    return hashlib.sha256(orjson.dumps(tools, option=orjson.OPT_SORT_KEYS)).hexdigest()


@dataclass
class ToolCatalog:
    """Every distinct tools value of a gold file: digest -> {name: parameters schema}.

    Validators are compiled once per tool (jsonschema-rs, as for ``parse:
    json``) when first asked for.
    """

    schemas: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    _validators: dict[tuple[str, str], Any] = field(default_factory=dict)

    def add(self, tools: list[dict[str, Any]]) -> str:
        """Keep a (checked) tools list; return its digest."""
        digest = tools_digest(tools)
        if digest not in self.schemas:
            self.schemas[digest] = {
                _function_of(tool)["name"]: _function_of(tool).get("parameters") or NO_PARAMETERS
                for tool in tools
            }
        return digest

    def names(self, digest: str) -> list[str]:
        """The tool names of one tools value, in the order written."""
        return list(self.schemas[digest])

    def validator(self, digest: str, name: str) -> Any:
        """The compiled validator of one tool's parameters."""
        key = (digest, name)
        found = self._validators.get(key)
        if found is None:
            from evalkit.contract.validation import compile_fast

            found = self._validators[key] = compile_fast(self.schemas[digest][name])
        return found

    def explain(self, digest: str, name: str, arguments: Any) -> str:
        """Why ``arguments`` break the tool's schema: the failing path and the message."""
        from evalkit.contract.validation import build_explainer, explain

        schema = self.schemas[digest][name]
        _, message = explain(
            lambda: build_explainer(schema), self.validator(digest, name), arguments
        )
        return message


def gold_calls_of(value: Any) -> list[Call]:
    """A gold calls value: ``[{name, arguments}]`` (or the OpenAI shape), or its JSON text.

    ``[]`` means no call is expected. Raises :class:`ToolProblem` saying what is wrong.
    """
    from evalkit.contract.tool_syntax import _Invalid

    if value is None:
        raise ToolProblem("no value; write [] where no call is expected")
    if type(value) is str:
        try:
            value = load_json(value)
        except _Invalid as problem:
            raise ToolProblem(f"the JSON text does not parse: {problem}") from None
    if type(value) is not list:
        raise ToolProblem(f"is {type(value).__name__}, not a list of calls")
    calls = []
    for index, item in enumerate(value):
        if type(item) is dict:  # the usual shapes, decided without a function call
            function = item.get("function")
            call = function if type(function) is dict else item
            name, arguments = call.get("name"), call.get("arguments")
            if type(name) is str and name and type(arguments) is dict:
                calls.append((name, arguments))
                continue
        function = item.get("function") if isinstance(item, dict) else None
        try:
            calls.append(call_of(function if isinstance(function, dict) else item))
        except _Invalid as problem:
            raise ToolProblem(f"call {index}: {problem}") from None
    return calls


__all__ = [
    "FUNCTION_CLASS",
    "NO_CALL",
    "ToolCatalog",
    "ToolProblem",
    "call_text",
    "calls_key",
    "canonical_arguments",
    "function_class",
    "gold_calls_of",
    "same_numbers",
    "tools_list",
]
