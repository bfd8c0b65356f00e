"""Where a model's tool calls are: structured calls, or text in a chat template's syntax.

A served model's calls come back **structured** (``message.tool_calls`` of an
OpenAI Batch or chat-completion output, vLLM's when its tool parser runs, a
``tool_calls`` field beside ``output``); a model run without a tool parser
(``evalkit generate``, vLLM without ``--tool-call-parser``) writes them as
**text** in its template's syntax. The syntaxes, each a parser object in
:data:`SYNTAXES` (a new one is one more entry, never a new branch):

* ``qwen`` (alias ``hermes``): ``<tool_call>{"name": …, "arguments": {…}}</tool_call>``,
  one block per call (Qwen2.5/Qwen3 and Hermes templates; a last block that the
  generation cut before ``</tool_call>`` runs to the end, as vLLM's hermes parser
  reads it); text around the blocks (content, ``<think>``) is not a call;
* ``llama3``: the whole output is ``{"name": …, "parameters": {…}}`` (Llama 3.1/3.2
  JSON tool calling; an optional ``<|python_tag|>`` first; several calls joined by
  ``;``);
* ``mistral``: ``[TOOL_CALLS][{"name": …, "arguments": {…}}, …]`` (tokenizers before
  v11) or ``[TOOL_CALLS]name[ARGS]{…}`` per call (v11 and later, ``[ARGS]`` and a
  ``[CALL_ID]…`` optional); the v11 form without its control tokens, as a decoder that
  skips special tokens leaves it (``name{…}``), counts too;
* ``json``: the whole output (or its first ``` fence) is ``{"name": …, "arguments":
  {…}}`` or a list of such objects (also ``{"type": "function", "function": {…}}``).

``auto`` takes structured calls when the prediction has any, else tries the
text syntaxes in :data:`AUTO_ORDER` and takes the first that finds a call, and
records which. Each syntax answers ``None`` (no call in that syntax: the output
is text), the calls, or why the calls it found do not parse (``unparsable_call``:
the model's error, never bad input). ``arguments`` may be an object or the JSON
text of one (the API's form); a call without ``name`` or ``arguments``, arguments
that are not an object, invalid JSON, or a key given twice do not parse.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple, Protocol

import orjson

from evalkit.contract.parsed import FENCE
from evalkit.contract.tool_names import AUTO, AUTO_ORDER, STRUCTURED, SYNTAX_CHOICES

DETAIL_LIMIT = 200
_loads, _dumps, _decode_error = orjson.loads, orjson.dumps, orjson.JSONDecodeError
_SORT = orjson.OPT_SORT_KEYS

Call = tuple[str, dict[str, Any]]
"""One call: the function's name and its arguments (a JSON object)."""


class Found(NamedTuple):
    """The calls one syntax found in an output, or why they do not parse (a named tuple:
    one is made per output)."""

    syntax: str
    """The syntax that found them (``structured`` or a text syntax's name)."""
    calls: tuple[Call, ...] = ()
    """The calls, in the order written (empty when ``problem`` is set)."""
    problem: str | None = None
    """Why the calls found do not parse (``unparsable_call``), or None."""
    texts: tuple[tuple[str, str, str], ...] | None = None
    """Per call, (name, canonical call text, canonical arguments text) when a fast path
    made them, else None."""


class TextSyntax(Protocol):
    """A text syntax: finds the calls written in a model's raw output."""

    name: str

    def find(self, text: str) -> Found | None:
        """The calls in ``text``, why they do not parse, or None when it holds none."""
        ...


def _short(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= DETAIL_LIMIT else flat[: DETAIL_LIMIT - 1] + "…"


def _key_count(value: Any) -> int:
    """Keys of every object in a JSON value (a loop, not a generator: it runs per call)."""
    count = 0
    if type(value) is dict:
        count = len(value)
        items: Any = value.values()
    elif type(value) is list:
        items = value
    else:
        return 0
    for item in items:
        kind = type(item)
        if kind is dict or kind is list:
            count += _key_count(item)
    return count


_NOT_FLAT = frozenset({float, dict, list})


def simple_call(value: Any) -> tuple[str, str, str, dict[str, Any]] | None:
    """``(name, call text, arguments text, arguments)`` of the common call object, or None.

    The common object is ``{"name": "…", "arguments": {…}}`` whose arguments
    hold no float, object or list: then orjson's sorted-key text of the whole
    object *is* the canonical call text (:func:`evalkit.contract.tool_rules.call_text`),
    and no number needs rewriting. Anything else (None) takes the general path.
    The caller checks that no key repeats (by counting colons).
    """
    if type(value) is not dict or len(value) != 2:
        return None
    name, arguments = value.get("name"), value.get("arguments")
    if type(name) is not str or not name or type(arguments) is not dict:
        return None
    for item in arguments.values():
        if type(item) in _NOT_FLAT:
            return None
    text = _dumps(value, option=_SORT).decode()
    return name, text, text[13 : text.rindex(',"name":')], arguments


class _Invalid(Exception):
    """A piece that does not parse as JSON (or repeats a key), with the reason."""


def load_json(text: str) -> Any:
    """``text`` as JSON (orjson, RFC 8259); a key given twice is invalid, as for ``parse: json``.

    Every key is followed by one colon, so when the text has exactly as many
    colons as the value has keys (nested ones included), no key can repeat;
    only otherwise is the text decoded again with a hook that sees each key.
    """
    import orjson

    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError as error:
        raise _Invalid(_decode_reason(error)) from None
    if text.count(":") != _key_count(value):
        from evalkit.contract.parse import duplicate_key

        repeated = duplicate_key(text, value)
        if repeated is not None:
            raise _Invalid(f"key {repeated!r} is given twice")
    return value


_LAST_WHOLE: list[Any] = [None, None, None]  # body, value, problem


def whole_json(body: str) -> tuple[Any, str | None]:
    """``(value, None)`` of a whole output as JSON, or ``(None, why not)``.

    ``llama3`` and ``json`` both try the whole output under ``auto``: the last
    answer is kept, so a text answer that is JSON is parsed once, not twice.
    """
    if _LAST_WHOLE[0] == body:
        return _LAST_WHOLE[1], _LAST_WHOLE[2]
    try:
        value, problem = load_json(body), None
    except _Invalid as invalid:
        value, problem = None, str(invalid)
    _LAST_WHOLE[:] = [body, value, problem]
    return value, problem


def _decode_reason(error: Exception) -> str:
    message = getattr(error, "msg", str(error))
    position, document = getattr(error, "pos", None), getattr(error, "doc", None)
    if "depth limit" in message:
        return "nested deeper than 1,024 levels"
    if document is not None and position is not None and position >= len(document):
        return "truncated: the text ends inside the JSON value"
    return f"not valid JSON: {message} at char {position}"


def call_of(value: Any, arguments_key: str = "arguments") -> Call:
    """A call object ``{name, <arguments_key>}`` as a :data:`Call`; :class:`_Invalid` if not one.

    ``arguments`` may be the JSON text of an object (the OpenAI API writes them so).
    """
    if type(value) is not dict:
        raise _Invalid(f"a call is a JSON object with 'name' and '{arguments_key}'")
    name = value.get("name")
    if type(name) is not str or not name:
        raise _Invalid("the call has no 'name' (a non-empty string)")
    if arguments_key not in value or value[arguments_key] is None:
        raise _Invalid(f"the call of {name!r} has no '{arguments_key}'")
    arguments = value[arguments_key]
    if type(arguments) is str:
        try:
            arguments = load_json(arguments)
        except _Invalid as problem:
            raise _Invalid(f"the arguments of {name!r}: {problem}") from None
    if type(arguments) is not dict:
        raise _Invalid(f"the arguments of {name!r} are not a JSON object")
    return name, arguments


def _found(syntax: str, pieces: list[str], read: Any) -> Found:
    """Parse each piece with ``read`` (text -> list of calls); the first failure names its piece."""
    calls: list[Call] = []
    for number, piece in enumerate(pieces, start=1):
        try:
            calls.extend(read(piece))
        except _Invalid as problem:
            where = f"call {number} of {len(pieces)}" if len(pieces) > 1 else "the call"
            return Found(syntax, problem=_short(f"{where} ({syntax}): {problem}"))
    if not calls:
        return Found(syntax, problem=f"the calls ({syntax}) are an empty list")
    return Found(syntax, tuple(calls))


class Hermes:
    r"""``<tool_call>{"name": …, "arguments": …}</tool_call>`` blocks (Qwen, Hermes).

    A block's body runs from its opening tag to the next closing tag, or to the
    end of the text (the regular expression ``<tool_call>(.*?)(?:</tool_call>|\Z)``,
    found with ``str.find``: this runs once per output).
    """

    name = "qwen"
    _open, _close = "<tool_call>", "</tool_call>"

    def find(self, text: str) -> Found | None:
        start = text.find(self._open)
        if start < 0:
            return None
        end = text.find(self._close, start)
        if end >= 0 and text.find(self._open, end) < 0:  # one closed block: the usual case
            piece = text[start + len(self._open) : end].strip()
            try:
                fast = simple_call(_loads(piece))
            except _decode_error:
                fast = None
            if fast is not None and piece.count(":") == 2 + len(fast[3]):
                return Found(self.name, ((fast[0], fast[3]),), None, (fast[:3],))
        pieces = []
        while start >= 0:
            begin = start + len(self._open)
            end = text.find(self._close, begin)
            if end < 0:
                pieces.append(text[begin:].strip())
                break
            pieces.append(text[begin:end].strip())
            start = text.find(self._open, end + len(self._close))
        calls, texts = [], []
        for piece in pieces:
            try:
                value = _loads(piece)
            except _decode_error:
                value = None
            fast = simple_call(value)
            if fast is None or piece.count(":") != 2 + len(fast[3]):
                return _found(self.name, pieces, lambda piece: [call_of(load_json(piece))])
            calls.append((fast[0], fast[3]))
            texts.append(fast[:3])
        return Found(self.name, tuple(calls), texts=tuple(texts))


class Llama3:
    """The whole output is ``{"name": …, "parameters": …}`` (Llama 3.1/3.2 JSON calls)."""

    name = "llama3"
    _start = re.compile(r'\{\s*(?:"type"\s*:\s*"function"\s*,\s*)?"name"\s*:')
    _joint = re.compile(r"(?<=\})\s*;\s*(?=\{)")

    def find(self, text: str) -> Found | None:
        body = text.strip().removeprefix("<|python_tag|>").strip()
        if not body.startswith("{"):
            return None
        value, problem = whole_json(body)
        if problem is not None:
            pieces = self._joint.split(body)
            if len(pieces) > 1:
                return _found(self.name, pieces, self._call)
            if self._start.match(body):
                return Found(self.name, problem=_short(f"the call ({self.name}): {problem}"))
            return None
        if type(value) is dict and "name" in value and "parameters" in value:
            return _found(self.name, [body], lambda _: [call_of(value, "parameters")])
        return None

    @staticmethod
    def _call(piece: str) -> list[Call]:
        return [call_of(load_json(piece), "parameters")]


class Mistral:
    """``[TOOL_CALLS][…]`` (before v11) or ``[TOOL_CALLS]name[ARGS]{…}`` (v11 on)."""

    name = "mistral"
    marker = "[TOOL_CALLS]"
    _named = re.compile(
        r"\s*([A-Za-z0-9_.:-]+)\s*(?:\[CALL_ID\]\s*[A-Za-z0-9_-]*\s*)?(?:\[ARGS\])?\s*(\{.*\})\s*",
        re.DOTALL,
    )

    def find(self, text: str) -> Found | None:
        if self.marker not in text:
            bare = self._named.fullmatch(text)
            if bare is None:
                return None
            return _found(self.name, [text], self._named_call)
        rest = text.split(self.marker, 1)[1].strip()
        if rest.startswith("["):
            return _found(self.name, [rest], self._listed)
        pieces = text.split(self.marker)[1:]
        return _found(self.name, pieces, self._named_call)

    @staticmethod
    def _listed(piece: str) -> list[Call]:
        value = load_json(piece)
        if type(value) is not list:
            raise _Invalid("[TOOL_CALLS] is followed by a list of calls")
        return [call_of(item) for item in value]

    def _named_call(self, piece: str) -> list[Call]:
        match = self._named.fullmatch(piece)
        if match is None:
            raise _Invalid("expected a function name and its JSON arguments")
        arguments = load_json(match.group(2))
        if type(arguments) is not dict:
            raise _Invalid(f"the arguments of {match.group(1)!r} are not a JSON object")
        return [(match.group(1), arguments)]


class JsonCalls:
    """The whole output (or its first fence) is a call object or a list of them."""

    name = "json"
    _start = re.compile(r'\[?\s*\{\s*"(?:name|function)"\s*:')

    def find(self, text: str) -> Found | None:
        body = text.strip()
        if body.startswith("```"):
            fence = FENCE.search(body)
            body = fence.group(1).strip() if fence is not None else body
        if not body.startswith(("{", "[")):
            return None
        value, problem = whole_json(body)
        if problem is not None:
            if self._start.match(body):
                return Found(self.name, problem=_short(f"the calls ({self.name}): {problem}"))
            return None
        items = value if type(value) is list else [value]
        if not items or not all(self._call_like(item) for item in items):
            return None
        return _found(self.name, [body], lambda _: [self._call(item) for item in items])

    @staticmethod
    def _call_like(item: Any) -> bool:
        if type(item) is not dict:
            return False
        if item.get("type") == "function" and type(item.get("function")) is dict:
            return True
        return "name" in item and "arguments" in item

    @staticmethod
    def _call(item: dict[str, Any]) -> Call:
        function = item.get("function")
        return call_of(function if type(function) is dict else item)


SYNTAXES: dict[str, TextSyntax] = {
    "qwen": Hermes(),
    "hermes": Hermes(),
    "llama3": Llama3(),
    "mistral": Mistral(),
    "json": JsonCalls(),
}
"""The text syntaxes by name (``hermes`` is ``qwen``'s template family's other name)."""


def structured_calls(items: Any) -> Found:
    """Structured calls (``message.tool_calls``, a ``tool_calls`` field) as :class:`Found`.

    Each item is ``{id?, type: "function", function: {name, arguments}}`` (the
    OpenAI API's and vLLM's shape) or ``{name, arguments}``.
    """

    def read(item: Any) -> list[Call]:
        function = item.get("function") if type(item) is dict else None
        return [call_of(function if type(function) is dict else item)]

    if type(items) is not list:
        return Found(STRUCTURED, problem="tool_calls is not a list of calls")
    return _found(STRUCTURED, items, read)


def find_calls(text: str, structured: list[Any] | None, syntax: str) -> Found | None:
    """The calls of one output under ``output.syntax`` (None: no call, the output is text).

    ``structured`` is the prediction's structured calls (None or empty: none).
    """
    if syntax == STRUCTURED or (syntax == AUTO and structured):
        return structured_calls(structured) if structured else None
    if syntax != AUTO:
        return SYNTAXES[syntax].find(text)
    for name in AUTO_ORDER:
        found = SYNTAXES[name].find(text)
        if found is not None:
            return found
    return None


__all__ = [
    "AUTO_ORDER",
    "SYNTAXES",
    "SYNTAX_CHOICES",
    "Call",
    "Found",
    "TextSyntax",
    "call_of",
    "find_calls",
    "load_json",
    "simple_call",
    "structured_calls",
]
