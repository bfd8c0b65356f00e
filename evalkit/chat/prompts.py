"""The inference inputs of a split: every conversation without its reference answer.

``evalkit prompts`` turns a split into the requests a model answers, so that
evaluation runs on exactly the conversations the split holds: no script of
one's own in between, whose prompt might differ from the training render.

* ``openai-batch``: one OpenAI Batch request per line, ``{custom_id, method:
  "POST", url: "/v1/chat/completions", body: {model, messages, temperature,
  max_tokens}}``; a Batch job (or an OpenAI-compatible server such as vLLM)
  runs it, and its output file goes straight into ``evalkit score
  --pred-format openai-batch`` (``custom_id`` is the id, as a string).
* ``jsonl``: ``{<id column>: id, messages: [...]}`` per line, for any other
  runner (``evalkit generate``, a notebook).

The prompt is the conversation before its last assistant turn (a
conversation without an assistant turn is a prompt already); for TRL's
prompt-completion form, the prompt column; a text column becomes one user
message. Messages are written in the API's form
(:mod:`evalkit.chat.requests`): ``{role, content}``, ShareGPT speakers
mapped, content parts joined into text, and every tool call, tool answer
(``tool_call_id``) and ``name`` kept; the row's tools go in ``body.tools``
(``tools`` beside ``messages`` in jsonl lines). A row whose prompt the API
would refuse is bad input, named by its line and message.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalkit.chat.column import ChatColumn, read_chat
from evalkit.chat.prompt_options import PromptFormat, PromptsParams
from evalkit.chat.requests import RequestProblem, api_prompt, api_tools
from evalkit.errors import (
    DuplicateIds,
    InvalidConversation,
    InvalidTable,
    ParameterError,
    UsageError,
)
from evalkit.io import (
    atomic_write_bytes,
    check_new_output,
    is_hf_dataset,
    is_path,
    read_table,
    resolve_hf_split,
)
from evalkit.options import takes

if TYPE_CHECKING:
    import polars as pl

    from evalkit.io import TableLike

BATCH_URL = "/v1/chat/completions"


@dataclass(frozen=True)
class PromptFile:
    """The prompts of one split, ready to write: one JSON line per item."""

    data: bytes
    """The whole file: one JSON object per line, in the split's row order."""
    n: int
    """Prompts (items of the split)."""
    source: str
    """The split file they come from (``split frame`` for a frame)."""
    format: PromptFormat
    """``openai-batch`` or ``jsonl``."""
    kind: str
    """What ``--text`` held: ``text`` or ``conversation``."""
    shape: str
    """How it was written: ``text``, ``messages`` or ``sharegpt``."""
    answers_left_out: int
    """Conversations whose reference answer (last assistant turn) was left out."""
    model: str | None
    """The ``model`` of every Batch request (``openai-batch`` only)."""
    with_tools: int = 0
    """Prompts sent with the row's tools (``body.tools``)."""
    tool_calls: int = 0
    """Tool calls in the prompts sent (each answered by its tool message)."""
    ids_made_up: int = 0
    """Call ids and ``tool_call_id`` values made up because the data has none."""
    tools_wrapped: int = 0
    """Bare ``{name, …}`` tool schemas sent as ``{type: "function", function: …}``."""
    tools_column: str | None = None
    """The column the tools came from."""
    empty_tool_lists: int = 0
    """Rows whose tools value is an empty list: sent without ``tools`` (no tools)."""

    def write(self, out: Path | str, *, force: bool = False) -> Path:
        """Write the file atomically; an existing file needs ``force``."""
        path = Path(out)
        check_new_output(path, force, inputs=[Path(self.source)])
        atomic_write_bytes(path, self.data)
        return path


def _check_options(given: PromptsParams) -> None:
    fmt, model = given.format, given.model
    if fmt == "jsonl":
        settings = (
            ("model", model),
            ("max_tokens", given.max_tokens),
            ("temperature", given.temperature),
        )
        for name, value in settings:
            if value is not None:
                raise ParameterError(
                    name,
                    "is a request setting: request settings apply to {format} openai-batch; "
                    "jsonl lines hold only the id and the messages",
                    refs=["format"],
                )
        return
    if not model:
        raise ParameterError(
            "model",
            "must be given: an openai-batch request names the model that answers it "
            "(e.g. gpt-4o-mini, or your fine-tuned model's name)",
        )


def _checked_ids(
    frame: pl.DataFrame, id_column: str, source: str, where: Callable[[int], str]
) -> pl.Series:
    import polars as pl

    ids = frame[id_column]
    if ids.dtype.is_nested():
        raise InvalidTable(f"{source}: id column {id_column!r} holds {ids.dtype}, not ids")
    if ids.null_count():
        row = int(ids.is_null().arg_true()[0])
        raise InvalidTable(f"{where(row)}: no id in column {id_column!r}; every prompt needs one")
    as_text = ids.cast(pl.String)
    if as_text.n_unique() != len(as_text):
        repeated = as_text.filter(as_text.is_duplicated()).min()
        raise DuplicateIds(
            f"{source}: id {repeated!r} occurs more than once in column {id_column!r}; "
            "a Batch custom_id must be unique"
        )
    return ids


@dataclass
class _Prompts:
    messages: list[list[dict[str, Any]]]
    tools: list[list[dict[str, Any]] | None]
    tool_calls: int = 0
    ids_made_up: int = 0
    tools_wrapped: int = 0


def _prompt_messages(chat: ChatColumn, where: Callable[[int], str]) -> _Prompts:
    """Each row's prompt as API messages, and its tools."""
    if not chat.is_conversation:
        texts = chat.texts[0]
        if texts.null_count():
            row = int(texts.is_null().arg_true()[0])
            raise InvalidTable(
                f"{where(row)}: no text in column {chat.columns[0]!r}; every prompt needs one"
            )
        return _Prompts([[{"role": "user", "content": text}] for text in texts.to_list()],
                        [None] * len(texts))  # fmt: skip
    column = chat.columns[0]
    conversations = chat.prompts().to_list()
    shifted = chat.system_rows.to_list() if chat.system_rows is not None else None
    tools_text = chat.tools.to_list() if chat.tools is not None else [None] * len(chat)
    result = _Prompts([], [])
    for row, messages in enumerate(conversations):
        if not messages:
            raise InvalidTable(
                f"{where(row)}: column {column!r} has nothing before the "
                "last assistant turn; a prompt needs at least one message"
            )
        try:
            prompt = api_prompt(messages)
        except RequestProblem as problem:
            index = problem.message - (1 if shifted is not None and shifted[row] else 0)
            raise InvalidConversation(
                f"{where(row)}: column {column!r}, message {index}: {problem.reason}"
            ) from None
        result.messages.append(prompt.messages)
        result.ids_made_up += prompt.ids_made_up
        result.tool_calls += sum(len(m.get("tool_calls", ())) for m in prompt.messages)
        text = tools_text[row]
        if text is None or not chat.parsed_tools[text]:
            result.tools.append(None)  # the API refuses an empty tools list
            continue
        tools, wrapped = api_tools(chat.parsed_tools[text])
        result.tools.append(tools)
        result.tools_wrapped += wrapped
    return result


@takes(PromptsParams)
def prompts(
    split: TableLike,
    params: PromptsParams | None = None,
    /,
    *,
    out: str | os.PathLike[str] | None = None,
    force: bool = False,
    **values: Any,
) -> PromptFile:
    """The inference inputs of a split, as OpenAI Batch requests or ``{id, messages}``.

    ``split`` is one split file (or dataset folder; a DatasetDict folder with
    ``hf_split``), or a polars, pandas or pyarrow frame. ``params`` is a
    :class:`~evalkit.chat.prompt_options.PromptsParams` (the command's
    options), or its fields as keywords (``id_column=``, ``text=``, ...).

    ``text`` is the conversation column (or prompt and completion columns,
    Alpaca's three columns, or a text column); each prompt is its
    conversation without the reference answer, its tool calls and tool
    answers kept, and the row's tools (``tools``, default: a column named
    ``tools``) sent with it; ``system`` names the column of system prompts
    (default: a column named ``system``). ``openai-batch`` needs ``model``;
    ``temperature`` defaults to 0 (greedy: an evaluation should not depend on
    sampling) and ``max_tokens`` is sent only when given. Bad input raises
    an :class:`~evalkit.errors.EvalkitError`.

    With ``out`` the file is written too, as ``evalkit prompts --out`` writes
    it (which is this call): atomically, never over the split, and over an
    existing file only with ``force``, checked before the split is read.
    Without it nothing is written (:meth:`PromptFile.write` writes later).
    """
    given = PromptsParams.build(params, values)
    if out is not None:
        check_new_output(Path(out), force, inputs=[Path(split)] if is_path(split) else [])
    result = _prompt_file(split, given)
    if out is not None:
        result.write(Path(out), force=force)
    return result


def _prompt_file(split: TableLike, given: PromptsParams) -> PromptFile:
    """The prompt file of ``split`` (what :func:`prompts` returns)."""
    import orjson
    import polars as pl

    _check_options(given)
    id_column, text, format, model = given.id_column, given.text, given.format, given.model
    max_tokens, temperature = given.max_tokens, given.temperature
    if is_path(split):
        path = resolve_hf_split(Path(split), given.hf_split)
        if path.is_dir() and not is_hf_dataset(path):
            raise UsageError(
                f"{path}: is a folder; pass one split file, e.g. {path / 'test.parquet'} "
                "(prompts are written per split)"
            )
        split = path
    elif given.hf_split is not None:
        raise ParameterError(
            "hf_split",
            f"{given.hf_split}: the split is a frame, not a Hugging Face DatasetDict folder; "
            "leave out {hf_split}",
            refs=["hf_split"],
        )
    table = read_table(split, name="split", ids=[id_column])
    frame, source, where = table.frame, table.label, table.where
    table.require_columns([id_column])
    ids = _checked_ids(frame, id_column, source, where)
    chat = read_chat(table, text, system=given.system, tools=given.tools)
    built = _prompt_messages(chat, where)
    answers_left_out = 0
    if chat.is_conversation:
        answers_left_out = len(chat) - chat.reference_answers().null_count()
    lines: list[bytes] = []
    if format == "openai-batch":
        settings: dict[str, Any] = {"temperature": 0.0 if temperature is None else temperature}
        if max_tokens is not None:
            settings["max_tokens"] = max_tokens
        rows = zip(ids.cast(pl.String).to_list(), built.messages, built.tools, strict=True)
        for identifier, prompt, row_tools in rows:
            body: dict[str, Any] = {"model": model, "messages": prompt}
            if row_tools is not None:
                body["tools"] = row_tools
            body.update(settings)
            request = {"custom_id": identifier, "method": "POST", "url": BATCH_URL, "body": body}
            lines.append(orjson.dumps(request))
    else:
        for identifier, prompt, row_tools in zip(ids.to_list(), built.messages, built.tools,
                                                 strict=True):  # fmt: skip
            line: dict[str, Any] = {id_column: identifier, "messages": prompt}
            if row_tools is not None:
                line["tools"] = row_tools
            lines.append(orjson.dumps(line))
    return PromptFile(
        data=b"".join(line + b"\n" for line in lines),
        n=len(lines),
        source=source,
        format=format,
        kind=chat.kind,
        shape=chat.shape,
        answers_left_out=answers_left_out,
        model=model,
        with_tools=sum(row_tools is not None for row_tools in built.tools),
        tool_calls=built.tool_calls,
        ids_made_up=built.ids_made_up,
        tools_wrapped=built.tools_wrapped,
        tools_column=chat.tools_column,
        empty_tool_lists=chat.empty_tool_lists,
    )
