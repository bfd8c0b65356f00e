"""Tool calls and per-message training flags, read from one message's values.

The reference semantics of what a message carries besides its text:

* ``tool_calls``: ``[{id?, type: "function", function: {name, arguments}}]``
  on assistant messages, the shape of the OpenAI chat API and of OpenAI's
  fine-tuning files. ``arguments`` is kept as written: a string (the API's
  JSON text) stays that string; any other JSON value (TRL's and LLaMA-
  Factory's objects) is kept as its JSON text, marked as not written as text,
  so that a chat template receives it as it was written.
* ShareGPT's ``function_call`` turn: its value is the JSON text of ``{name,
  arguments}`` or of a list of them, the form LLaMA-Factory's
  ``FunctionFormatter`` parses (``src/llamafactory/data/formatter.py``: one
  call or a list of parallel calls, each ``tool_call["name"]`` and
  ``tool_call["arguments"]``).
* ``tool_call_id`` on a tool message must answer a call made earlier in the
  conversation; a tool message without one answers the calls before it in
  order, as templates that ignore ids render it.
* The training flag: OpenAI's ``weight`` (0 or 1, assistant messages only)
  and axolotl's per-message ``training`` (a boolean on any message, which
  overrides ``roles_to_train`` in axolotl's chat_template strategy:
  ``should_train = turn["training"]`` when set,
  ``src/axolotl/prompt_strategies/chat_template.py``). None when neither is
  written: the trainer's role rule applies.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from evalkit.chat.values import ConversationProblem, described, short
from evalkit.io import RepeatedKey, unique_object

CALL_SHAPE = '{"type": "function", "function": {"name": ..., "arguments": ...}}'


@dataclass(frozen=True)
class ToolCall:
    """One call of a tool by the assistant."""

    name: str
    arguments: str
    """The arguments as written when written as text; else the JSON text of the value."""
    arguments_text: bool
    """Whether ``arguments`` was written as a string (the OpenAI API's form)."""
    id: str | None = None

    def row(self) -> dict[str, Any]:
        """The call as a row of the normalised column's ``tool_calls`` list."""
        return {
            "id": self.id,
            "name": self.name,
            "arguments": self.arguments,
            "arguments_text": self.arguments_text,
        }


def arguments_value(value: Any) -> tuple[str, bool]:
    """(text, written as text) of an ``arguments`` value, kept as written.

    A value that is not a string is kept as the JSON text ``json.dumps(value,
    ensure_ascii=False)`` gives it, the text LLaMA-Factory makes of the same
    value (``FunctionCall(name, json.dumps(arguments, ensure_ascii=False))``).
    """
    if isinstance(value, str):
        return value, True
    return json.dumps(value, ensure_ascii=False), False


def _call(item: Any, number: int, index: int) -> ToolCall:
    if not isinstance(item, dict):
        raise ConversationProblem(
            f"tool call {number} is {described(item)}; write each call as {CALL_SHAPE}", index
        )
    kind = item.get("type")
    if kind != "function":
        got = "has no 'type'" if kind is None else f"has type {short(kind)}"
        raise ConversationProblem(
            f"tool call {number} {got}; a call is {CALL_SHAPE} (type 'function')", index
        )
    function = item.get("function")
    if not isinstance(function, dict):
        raise ConversationProblem(
            f"tool call {number}: 'function' is {described(function)}; write it as "
            '{"name": ..., "arguments": ...}',
            index,
        )
    name = function.get("name")
    if not isinstance(name, str) or not name:
        raise ConversationProblem(
            f"tool call {number}: the function's 'name' is {described(name)}; name the tool "
            "that is called",
            index,
        )
    if function.get("arguments") is None:
        raise ConversationProblem(
            f"tool call {number} ({name}) has no 'arguments'; write them (the API's form is "
            'a JSON string, e.g. "{}" for none)',
            index,
        )
    identifier = item.get("id")
    if identifier is not None and not isinstance(identifier, str):
        raise ConversationProblem(
            f"tool call {number} ({name}): 'id' is {described(identifier)}; an id is text", index
        )
    text, written_as_text = arguments_value(function["arguments"])
    return ToolCall(name, text, written_as_text, identifier)


def tool_calls(message: dict[str, Any], role: str, index: int) -> tuple[ToolCall, ...]:
    """The ``tool_calls`` of a role/content message, validated (empty when there are none)."""
    value = message.get("tool_calls")
    if value is None:
        return ()
    if not isinstance(value, list | tuple):
        raise ConversationProblem(
            f"'tool_calls' is {described(value)}; write a list of calls [{CALL_SHAPE}, ...]",
            index,
        )
    if value and role != "assistant":
        raise ConversationProblem(
            f"a {role} message has 'tool_calls'; only assistant messages call tools", index
        )
    return tuple(_call(item, number, index) for number, item in enumerate(value))


def strict_json(text: str) -> Any:
    """JSON text parsed with a key given twice refused (:class:`RepeatedKey`): JSON readers
    disagree on which value wins, so the text means nothing certain."""
    return json.loads(text, object_pairs_hook=unique_object)


def function_call_turn(
    value: Any, index: int, what: str = "function_call 'value'"
) -> tuple[ToolCall, ...]:
    """The calls of a ShareGPT ``function_call`` turn (or a LLaMA-Factory ``tool_call``
    part): the JSON text of ``{name, arguments}``, or of a list of them."""
    fix = 'write the value as the JSON text of {"name": ..., "arguments": {...}} (or a list)'
    if not isinstance(value, str):
        raise ConversationProblem(f"{what} is {described(value)}; {fix}", index)
    try:
        parsed = strict_json(value)
    except RepeatedKey as repeated:
        raise ConversationProblem(
            f"{what} gives key {short(repeated.args[0])} twice in one object; keep one", index
        ) from None
    except (ValueError, RecursionError) as error:
        reason = error.args[0].split(":")[0] if isinstance(error, ValueError) else "too deep"
        raise ConversationProblem(
            f"{what} is not JSON ({reason}): {short(value)}; {fix}", index
        ) from None
    items = parsed if isinstance(parsed, list) else [parsed]
    if not items:
        raise ConversationProblem(f"{what} is an empty list; {fix}", index)
    calls = []
    for number, item in enumerate(items):
        if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not item["name"]:
            raise ConversationProblem(
                f"function_call call {number} is {described(item)} without a 'name'; {fix}", index
            )
        if "arguments" not in item or item["arguments"] is None:
            raise ConversationProblem(
                f"function_call call {number} ({item['name']}) has no 'arguments'; {fix}", index
            )
        text, written_as_text = arguments_value(item["arguments"])
        calls.append(ToolCall(item["name"], text, written_as_text))
    return tuple(calls)


def text_field(message: dict[str, Any], key: str, index: int) -> str | None:
    """An optional text field of a message (``tool_call_id``, ``name``), checked."""
    value = message.get(key)
    if value is None or isinstance(value, str):
        return value
    raise ConversationProblem(f"{key!r} is {described(value)}; it must be text", index)


def train_flag(message: dict[str, Any], role: str, index: int) -> bool | None:
    """The message's training flag: ``weight`` (0/1, assistant), ``training`` (bool) or
    LLaMA-Factory's ``loss_weight`` (a number: 0 is not trained on, above 0 is)."""
    flag: bool | None = None
    loss_weight = message.get("loss_weight")
    if loss_weight is not None:
        if (
            isinstance(loss_weight, bool)
            or not isinstance(loss_weight, int | float)
            or not loss_weight >= 0
            or loss_weight == float("inf")
        ):
            raise ConversationProblem(
                f"'loss_weight' is {short(loss_weight)}; LLaMA-Factory's loss_weight is a "
                "number >= 0 (0: do not train on this turn)",
                index,
            )
        flag = loss_weight > 0
    weight = message.get("weight")
    if weight is not None:
        if isinstance(weight, bool) or not isinstance(weight, int | float) or weight not in (0, 1):
            raise ConversationProblem(
                f"'weight' is {short(weight)}; OpenAI's weight is 0 (do not train on this "
                "turn) or 1 (train on it)",
                index,
            )
        if role != "assistant":
            raise ConversationProblem(
                f"a {role} message has 'weight'; OpenAI's weight applies to assistant messages "
                "only (axolotl's 'training' flag may mark any message)",
                index,
            )
        if flag is not None and flag != (weight == 1):
            raise ConversationProblem(
                f"'weight' {weight!r} and 'loss_weight' {loss_weight!r} disagree; keep one", index
            )
        flag = weight == 1
    training = message.get("training")
    if training is not None:
        if not isinstance(training, bool):
            raise ConversationProblem(
                f"'training' is {short(training)}; axolotl's training flag is true or false",
                index,
            )
        if flag is not None and flag != training:
            raise ConversationProblem(
                f"'weight' {weight!r} and 'training' {str(training).lower()} disagree; keep one",
                index,
            )
        flag = training
    return flag


def check_answers(roles: Sequence[str], calls: Sequence[Sequence[ToolCall]],
                  answers: Sequence[str | None]) -> None:  # fmt: skip
    """Every ``tool_call_id`` answers a call made earlier in the conversation.

    ``roles``, ``calls`` and ``answers`` are per message: the role, its tool
    calls, its ``tool_call_id``.
    """
    made: set[str] = set()
    called = False
    for index, (role, own, answer) in enumerate(zip(roles, calls, answers, strict=True)):
        if role == "tool" and not called:
            raise ConversationProblem(
                "tool message (an observation) comes before any tool call; a tool message "
                "answers a call an earlier assistant turn made",
                index,
            )
        called = called or bool(own)
        if role == "tool" and answer is not None and answer not in made:
            known = ", ".join(sorted(made)[:5]) or "none"
            raise ConversationProblem(
                f"tool message answers tool_call_id {short(answer)}, which no earlier "
                f"assistant call has (ids called before it: {known})",
                index,
            )
        made.update(call.id for call in own if call.id is not None)
