"""The columns beside a conversation: its system prompt and its tools.

* **System.** A ``system`` column (``--system COL`` names another) holds
  each conversation's system prompt, the way LLaMA-Factory's ``system``
  column and axolotl's ``field_system`` do: it becomes the first message,
  unless the conversation already starts with a system message, which is
  then kept (both trainers do so: LLaMA-Factory takes a leading system turn
  before the column, ``src/llamafactory/data/converter.py``; axolotl adds
  the field only when the first turn is not a system turn,
  ``get_conversation_thread`` in ``prompt_strategies/chat_template.py``).
  A null or empty value adds nothing.
* **Tools.** A ``tools`` column (``--tools COL``) holds the functions the
  conversation may call, passed to ``apply_chat_template(…, tools=…)`` and
  sent as a request's ``body.tools``: a list of function schemas, each
  ``{type: "function", function: {name, description?, parameters?}}`` as
  the OpenAI API and HF templates take them, or the bare ``{name, …}`` that
  LLaMA-Factory's tool formatter also accepts (``tool_utils.py``:
  ``tool.get("function") if tool.get("type") == "function" else tool``); or
  that list as its JSON text (LLaMA-Factory's and many HF datasets' form).
  Values are kept as written: text as the text, a nested value as the source
  wrote it (:meth:`evalkit.io.Table.values`: a frame merges the keys of
  differing schemas). An empty list is no tools, as the OpenAI API and TRL
  read it: a chat template is then called without ``tools`` (given ``[]``,
  some templates render a function-calling preamble that lists no function),
  and a request carries no ``tools``; :class:`ToolsColumn` counts such rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evalkit.chat.reading import problem_error
from evalkit.chat.values import ConversationProblem, described, short
from evalkit.errors import InvalidTable, UnknownColumn

if TYPE_CHECKING:
    import polars as pl

    from evalkit.io import Table

DEFAULT_SYSTEM = "system"
DEFAULT_TOOLS = "tools"
TOOL_SHAPE = (
    '{"type": "function", "function": {"name": ..., "description": ..., "parameters": {...}}}'
)


def resolve_column(
    frame: pl.DataFrame, given: str | None, default: str, parameter: str, source: str
) -> str | None:
    """The column ``parameter`` names (it must exist), or the default one when present."""
    if given is None:
        return default if default in frame.columns else None
    if given not in frame.columns:
        listing = ", ".join(frame.columns[:20]) + (" …" if frame.width > 20 else "")
        raise UnknownColumn(
            f"{source}: {{{parameter}}} {given}: no such column; the columns are: "
            f"{listing or '(none)'}",
            refs=[parameter],
        )
    return given


def _text_values(frame: pl.DataFrame, column: str, source: str, what: str) -> pl.Series:
    import polars as pl

    series = frame[column]
    if series.dtype == pl.Null or isinstance(series.dtype, pl.Categorical | pl.Enum):
        return series.cast(pl.String)
    if series.dtype != pl.String:
        raise InvalidTable(
            f"{source}: column {column!r} holds {series.dtype} values; {what} is text"
        )
    return series


@dataclass(frozen=True)
class WithSystem:
    """Conversations with the system column's prompt put first."""

    conversations: pl.Series
    added: pl.Series
    """Per row: whether a system message was put first."""
    kept: int
    """Rows that start with their own system message: the column's value is not used."""


def with_system(conversations: pl.Series, table: Table, column: str) -> WithSystem:
    """Put each row's system prompt first, unless its conversation starts with one."""
    import polars as pl

    from evalkit.chat.dtypes import call_dtype, conversation_dtype

    prompts = _text_values(table.frame, column, table.label, "a system prompt")
    both = pl.DataFrame({"c": conversations, "s": prompts})
    given = pl.col("s").is_not_null() & (pl.col("s") != "")
    own = (pl.col("c").list.first().struct.field("role") == "system").fill_null(False)
    message = pl.struct(
        pl.lit("system").alias("role"),
        pl.col("s").alias("content"),
        pl.lit(None, pl.List(call_dtype())).alias("tool_calls"),
        pl.lit(None, pl.String).alias("tool_call_id"),
        pl.lit(None, pl.String).alias("name"),
        pl.lit(None, pl.Boolean).alias("train"),
        pl.lit(None, pl.String).alias("reasoning"),
    )
    result = both.select(
        pl.when(given & ~own)
        .then(pl.concat_list(message, pl.col("c")))
        .otherwise(pl.col("c"))
        .cast(conversation_dtype())
        .alias(conversations.name),
        (given & ~own).alias("added"),
        (given & own).alias("kept"),
    )
    return WithSystem(result[conversations.name], result["added"], int(result["kept"].sum()))


def _check_schema(tool: Any, number: int) -> None:
    if not isinstance(tool, dict):
        raise ConversationProblem(
            f"is {described(tool)}; write each tool as {TOOL_SHAPE}", number, item="tool"
        )
    schema: Any = tool
    if "type" in tool:
        if tool["type"] != "function":
            raise ConversationProblem(
                f"has type {short(tool['type'])}; chat templates take function tools "
                f"({TOOL_SHAPE})",
                number,
                item="tool",
            )
        schema = tool.get("function")
        if not isinstance(schema, dict):
            raise ConversationProblem(
                f"'function' is {described(schema)}; write it as "
                '{"name": ..., "description": ..., "parameters": {...}}',
                number,
                item="tool",
            )
    name = schema.get("name")
    if not isinstance(name, str) or not name:
        raise ConversationProblem(
            f"the function's 'name' is {described(name)}; every tool needs its name",
            number,
            item="tool",
        )
    parameters = schema.get("parameters")
    if parameters is not None and not isinstance(parameters, dict):
        raise ConversationProblem(
            f"({name}) 'parameters' is {described(parameters)}; write the JSON schema of "
            "the arguments as an object",
            number,
            item="tool",
        )


def tools_value(value: Any) -> list[Any] | None:
    """A tools value as the list it stands for (None: no tools, an empty list included),
    or a problem saying why not."""
    import orjson

    if value is None:
        return None
    if isinstance(value, str):
        if not value.strip():
            return None
        try:
            value = orjson.loads(value)
        except orjson.JSONDecodeError as error:
            raise ConversationProblem(
                f"is text that is not JSON ({str(error).split(':')[0]}): {short(value)}; give "
                f"the tools as a list of function schemas [{TOOL_SHAPE}], or its JSON text",
                item="tool",
            ) from None
    if not isinstance(value, list | tuple):
        raise ConversationProblem(
            f"is {described(value)}; give the tools as a list of function schemas "
            f"[{TOOL_SHAPE}], or its JSON text",
            item="tool",
        )
    for number, tool in enumerate(value):
        _check_schema(tool, number)
    return list(value) or None


@dataclass(frozen=True)
class ToolsColumn:
    """Each row's tools as JSON text (null: none), and how many rows gave an empty list."""

    texts: pl.Series
    empty_lists: int
    """Rows whose tools value is an empty list: no tools, as the API and TRL read it."""


def _is_empty_list(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip() == "[]"
    return isinstance(value, list | tuple) and not value


def read_tools(table: Table, column: str) -> ToolsColumn:
    """Each row's tools as JSON text (null: none or an empty list), checked; text kept as
    written, a nested value as the source wrote it."""
    import orjson
    import polars as pl

    series = table.frame[column]
    if series.dtype == pl.Null:
        return ToolsColumn(series.cast(pl.String), 0)
    if series.dtype not in (pl.String,) and not series.dtype.is_nested():
        raise InvalidTable(
            f"{table.label}: column {column!r} holds {series.dtype} values; tools are a list "
            f"of function schemas [{TOOL_SHAPE}], or its JSON text"
        )
    text = series.dtype == pl.String and not table.is_nested(column)
    values = series.to_list() if text else table.values(column)
    checked: dict[str, str | None] = {}
    encoded: list[str | None] = []
    empty = 0
    for row, value in enumerate(values):
        if value is None:
            encoded.append(None)
            continue
        empty += _is_empty_list(value)
        if isinstance(value, str) and value in checked:
            encoded.append(checked[value])
            continue
        try:
            tools = tools_value(value)
        except ConversationProblem as problem:
            raise problem_error(column, table.where(row), problem) from None
        if tools is None:
            result = None
        elif isinstance(value, str):
            result = value
        else:
            result = orjson.dumps(tools).decode()
        if isinstance(value, str):
            checked[value] = result
        encoded.append(result)
    return ToolsColumn(pl.Series(column, encoded, pl.String), empty)
