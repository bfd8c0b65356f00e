"""What ``tokenizer.apply_chat_template(messages, tools=tools, …)`` receives, per conversation.

Every renderer (``evalkit tokens``, ``split --tokenizer``, ``smoke``,
``generate``, ``reload-check``) gets its messages here and nowhere else, so
that what evalkit measures and what it generates from is what the trainer's
template renders:

* messages in the OpenAI form HF chat templates are written for: ``{role,
  content}``, ``tool_calls: [{id?, type: "function", function: {name,
  arguments}}]`` on assistant turns that call tools, ``tool_call_id`` and
  ``name`` where the data has them; no key the data does not have (a
  template that tests ``message.tool_calls is defined`` sees what was
  written);
* ``content`` is text: a call-only turn (``content: null`` beside its calls)
  gets ``""``, since current templates fail on a missing content;
* a call's ``arguments``: a string holding a JSON object is handed over as
  that object, because HF templates write arguments with ``tojson`` (a
  string would come out quoted, not as the object the model emits); any
  other string (not JSON, or JSON that is not an object) and any value
  written as JSON (an object, as TRL and LLaMA-Factory write them) is handed
  over as written. :class:`CallArguments` records which was done;
* the conversation's tools (the list, or None) and each message's training
  flag as written (``weight``/``training``; None when not written).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    import polars as pl

    from evalkit.chat.column import ChatColumn

Handed = Literal["parsed", "text", "as_written"]
"""How a call's arguments reach the template: ``parsed`` (a JSON string holding an object,
handed over as the object), ``text`` (a string that is not a JSON object, as written),
``as_written`` (arguments written as a JSON value, handed over as that value)."""


@dataclass(frozen=True)
class CallArguments:
    """How one tool call's arguments were handed to the template."""

    message: int
    """0-based index of the message that makes the call."""
    call: int
    """0-based index of the call in that message."""
    handed: Handed


@dataclass(frozen=True)
class TemplateConversation:
    """One conversation as ``apply_chat_template(messages, tools=tools, …)`` takes it."""

    messages: list[dict[str, Any]]
    """OpenAI-form message dicts (see the module docstring)."""
    tools: list[dict[str, Any]] | None
    """The conversation's tools as written, or None when it has none."""
    train: list[bool | None]
    """Per message: the training flag as written (``weight``/``training``), or None."""
    arguments: tuple[CallArguments, ...]
    """Per tool call, in order: how its arguments were handed over."""


def _arguments(call: dict[str, Any]) -> tuple[Any, Handed]:
    import orjson

    text = call["arguments"]
    if not call["arguments_text"]:
        return orjson.loads(text), "as_written"
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return text, "text"
    return (value, "parsed") if isinstance(value, dict) else (text, "text")


def template_message(
    message: dict[str, Any], index: int, handed: list[CallArguments]
) -> dict[str, Any]:
    """One normalised message (a row of the conversation column) in OpenAI form.

    ``handed`` receives how each of its calls' arguments was handed over.
    """
    out: dict[str, Any] = {"role": message["role"], "content": message["content"]}
    calls = message["tool_calls"]
    if calls:
        written = []
        for number, call in enumerate(calls):
            arguments, how = _arguments(call)
            handed.append(CallArguments(index, number, how))
            item: dict[str, Any] = {} if call["id"] is None else {"id": call["id"]}
            item["type"] = "function"
            item["function"] = {"name": call["name"], "arguments": arguments}
            written.append(item)
        out["tool_calls"] = written
    if message["tool_call_id"] is not None:
        out["tool_call_id"] = message["tool_call_id"]
    if message["name"] is not None:
        out["name"] = message["name"]
    if message.get("reasoning") is not None:
        out["reasoning_content"] = message["reasoning"]
    return out


def _rows(series: pl.Series, rows: Sequence[int] | range | None) -> pl.Series:
    if rows is None:
        return series
    if isinstance(rows, range) and rows.step == 1:
        return series.slice(rows.start, max(len(rows), 0))
    return series.gather(list(rows))


def template_conversations(
    chat: ChatColumn, rows: Sequence[int] | range | None = None, *, prompt: bool = False
) -> list[TemplateConversation]:
    """What the chat template receives for each conversation of ``chat`` (of ``rows``).

    ``prompt=False`` gives the whole conversation (the training render);
    ``prompt=True`` the inference prompt, the conversation before its last
    assistant turn (:meth:`ChatColumn.prompts`), rendered with
    ``add_generation_prompt=True``. ``rows`` picks rows (a ``range`` is a
    slice); None takes every row. Raises
    :class:`~evalkit.errors.UsageError` for a text column.
    """
    source = chat.prompts() if prompt else chat.messages_series()
    conversations = _rows(source, rows).to_list()
    tools_text = _rows(chat.tools, rows).to_list() if chat.tools is not None else None
    parsed = chat.parsed_tools
    result: list[TemplateConversation] = []
    for position, conversation in enumerate(conversations):
        handed: list[CallArguments] = []
        messages = [
            template_message(message, index, handed) for index, message in enumerate(conversation)
        ]
        text = tools_text[position] if tools_text is not None else None
        result.append(
            TemplateConversation(
                messages=messages,
                tools=parsed[text] if text is not None else None,
                train=[message["train"] for message in conversation],
                arguments=tuple(handed),
            )
        )
    return result


def handed_counts(conversations: Iterable[TemplateConversation]) -> dict[Handed, int]:
    """How many calls' arguments were handed over each way, over ``conversations``."""
    counts: Counter[Handed] = Counter()
    for conversation in conversations:
        counts.update(call.handed for call in conversation.arguments)
    return {how: counts[how] for how in ("parsed", "text", "as_written")}
