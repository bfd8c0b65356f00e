"""A conversation's prompt as Chat Completions messages, valid under the API's rules.

The OpenAI chat API (and the servers that copy it, vLLM among them) refuses
a request whose messages break its rules: a ``tool`` message must answer,
by ``tool_call_id``, a call of the assistant message before it (tool
messages in between allowed); an assistant message with ``tool_calls``
must have each call answered before the next other message; an assistant
message needs text or calls; calls carry an ``id`` and ``arguments`` as a
JSON string. So a prompt is written in that form and checked here, and a
row that cannot be is bad input naming its message, rather than a file
whose requests fail one by one after upload.

Data that does not carry ids (ShareGPT ``function_call``/``observation``
turns, TRL messages without ids) gets them made up: ``call_<message>_<call>``
for a call, and a tool message without ``tool_call_id`` answers the calls
of the assistant message before it in order, as templates that ignore ids
read it. Arguments written as objects are sent as their JSON text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evalkit.chat.values import short


class RequestProblem(Exception):
    """Why a prompt cannot be sent: the reason and the 0-based message index."""

    def __init__(self, reason: str, message: int) -> None:
        super().__init__(reason)
        self.reason = reason
        self.message = message


@dataclass(frozen=True)
class ApiPrompt:
    """One prompt as Chat Completions messages."""

    messages: list[dict[str, Any]]
    ids_made_up: int
    """Call ids (and the tool messages' ``tool_call_id``) made up because the data has none."""


def api_tools(tools: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    """Tools in the API's form, and how many bare ``{name, …}`` schemas were wrapped in
    ``{type: "function", function: …}`` (LLaMA-Factory writes them bare)."""
    wrapped = 0
    result = []
    for tool in tools:
        if tool.get("type") == "function":
            result.append(tool)
        else:
            result.append({"type": "function", "function": tool})
            wrapped += 1
    return result, wrapped


@dataclass
class _Open:
    """The calls of the last assistant message, while its tool answers come."""

    message: int
    ids: list[str]
    names: list[str]
    answered: set[str]
    tool_messages: int = 0

    def unanswered(self) -> list[str]:
        return [
            f"{name} ({identifier})"
            for identifier, name in zip(self.ids, self.names, strict=True)
            if identifier not in self.answered
        ]


def _close(open_calls: _Open | None, at: int) -> None:
    if open_calls is None or not open_calls.unanswered():
        return
    where = f"before message {at}" if at >= 0 else "in the prompt"
    raise RequestProblem(
        f"calls {', '.join(open_calls.unanswered())} but no tool message answers "
        f"{where}; the API refuses an assistant message whose calls are not all answered",
        open_calls.message,
    )


def _assistant(message: dict[str, Any], index: int) -> tuple[dict[str, Any], _Open | None, int]:
    calls = message["tool_calls"] or []
    text = message["content"]
    if not calls and not text:
        raise RequestProblem(
            "is an assistant message with neither text nor tool calls; the API refuses "
            "an empty assistant message (remove the turn or give it its text)",
            index,
        )
    out: dict[str, Any] = {"role": "assistant", "content": text if text or not calls else None}
    if not calls:
        return out, None, 0
    made_up = 0
    written, ids, names = [], [], []
    for number, call in enumerate(calls):
        identifier = call["id"]
        if identifier is None:
            identifier = f"call_{index}_{number}"
            made_up += 1
        written.append(
            {
                "id": identifier,
                "type": "function",
                "function": {"name": call["name"], "arguments": call["arguments"]},
            }
        )
        ids.append(identifier)
        names.append(call["name"])
    out["tool_calls"] = written
    return out, _Open(index, ids, names, set()), made_up


def _tool(message: dict[str, Any], index: int, open_calls: _Open | None) -> tuple[str, bool]:
    """The call a tool message answers, and whether its id was made up."""
    if open_calls is None:
        raise RequestProblem(
            "is a tool message that follows no assistant message with tool calls; the API "
            "takes a tool message only as the answer to such a call",
            index,
        )
    given = message["tool_call_id"]
    position = open_calls.tool_messages
    open_calls.tool_messages += 1
    if given is not None:
        if given not in open_calls.ids:
            raise RequestProblem(
                f"answers tool_call_id {short(given)}, which is not a call of the assistant "
                f"message before it (message {open_calls.message}: "
                f"{', '.join(open_calls.ids)}); the API refuses it",
                index,
            )
        return given, False
    if position >= len(open_calls.ids):
        raise RequestProblem(
            f"is tool answer {position + 1} to message {open_calls.message}, which makes "
            f"{len(open_calls.ids)} call(s); give each tool message the tool_call_id it answers",
            index,
        )
    return open_calls.ids[position], True


def api_prompt(messages: list[dict[str, Any]]) -> ApiPrompt:
    """A prompt (normalised messages) as Chat Completions messages; :class:`RequestProblem`
    when the API would refuse it."""
    result: list[dict[str, Any]] = []
    open_calls: _Open | None = None
    made_up = 0
    for index, message in enumerate(messages):
        role = message["role"]
        if role == "tool":
            answered, guessed = _tool(message, index, open_calls)
            assert open_calls is not None
            open_calls.answered.add(answered)
            made_up += guessed
            out: dict[str, Any] = {
                "role": "tool",
                "content": message["content"],
                "tool_call_id": answered,
            }
        else:
            _close(open_calls, index)
            open_calls = None
            if role == "assistant":
                out, open_calls, invented = _assistant(message, index)
                made_up += invented
            else:
                out = {"role": role, "content": message["content"]}
        if message["name"] is not None:
            out["name"] = message["name"]
        result.append(out)
    _close(open_calls, -1)
    return ApiPrompt(result, made_up)
