"""The inference prompts of a split: read, validated, rendered and encoded.

One code path with ``evalkit tokens``: the conversations come from
:func:`evalkit.chat.read_chat` (every chat shape), each prompt is the
conversation without its last assistant turn, as
:func:`evalkit.chat.template_conversations` hands it to the template (tool
calls, tool answers and the row's tools kept), rendered by
:func:`evalkit.tokens.render.prompt_renders` (``add_generation_prompt=True``)
and encoded by :func:`evalkit.tokens.render.encode_renders` (the ids
``apply_chat_template(tokenize=True)`` gives). So the prompt a model answers
here is, token for token, the inference render the tokens checks compare
with the training render.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalkit.errors import DuplicateIds, InvalidTable, UsageError

if TYPE_CHECKING:
    from evalkit.io import Table, TableLike


@dataclass(frozen=True)
class PromptSet:
    """Every row's id and prompt, in the data's row order."""

    id_column: str
    """The id column's name (the key of ``predictions.jsonl``)."""
    ids: list[Any]
    """The ids, one per row (strings or integers, as in the data)."""
    renders: list[str]
    """The rendered prompts (chat template, generation prompt added)."""
    prompt_ids: list[list[int]]
    """The token ids of each render."""

    def __len__(self) -> int:
        return len(self.ids)


def _read_ids(frame: Any, column: str, source: str) -> list[Any]:
    """The id column as Python values: scalar, present in every row, unique."""
    import polars as pl

    ids = frame[column]
    if not (ids.dtype == pl.String or ids.dtype.is_integer()):
        raise InvalidTable(
            f"{source}: id column {column!r} holds {ids.dtype} values; ids must be strings "
            "or integers"
        )
    if ids.null_count():
        row = int(ids.is_null().arg_max() or 0) + 1
        raise InvalidTable(f"{source}: row {row} has no id in column {column!r}")
    if ids.n_unique() != len(ids):
        repeated = ids.filter(ids.is_duplicated())
        first = repeated.min()
        raise DuplicateIds(
            f"{source}: id {first!r} occurs {int((repeated == first).sum())} times in column "
            f"{column!r}; each example needs its own id"
        )
    return ids.to_list()


def read_prompts(
    data: TableLike | Table,
    id_column: str,
    text_columns: Sequence[str],
    tokenizer: Any,
    *,
    tokenizer_folder: Path,
) -> PromptSet:
    """The prompts of ``data``'s conversations, as ``tokenizer``'s chat template renders them.

    Refuses plain text columns (there is no template render to check), a
    tokenizer without a chat template, and a template that refuses a
    conversation (naming the id).
    """
    from evalkit.chat import read_chat, template_conversations
    from evalkit.io import Table, read_table
    from evalkit.tokens.render import encode_renders, prompt_renders, require_template

    table = data if isinstance(data, Table) else read_table(data, name="data", ids=[id_column])
    frame, source = table.frame, table.label
    table.require_columns([id_column, *text_columns])
    if frame.height == 0:
        raise InvalidTable(f"{source}: has no rows; there is nothing to generate")
    ids = _read_ids(frame, id_column, source)
    chat = read_chat(table, list(text_columns))
    if not chat.is_conversation:
        raise UsageError(
            f"{source}: {{text}} {' '.join(text_columns)} holds plain text, not "
            "conversations; "
            "generate renders conversations with the chat template (write each example as "
            "messages: [{role, content}, …])",
            refs=["text"],
        )
    require_template(tokenizer, str(tokenizer_folder))
    prompts = template_conversations(chat, prompt=True)
    renders = prompt_renders(
        tokenizer,
        [prompt.messages for prompt in prompts],
        where=lambda row: f"{source}: id {ids[row]!r}",
        tools=[prompt.tools for prompt in prompts],
    )
    encoded = encode_renders(tokenizer, renders)
    return PromptSet(id_column, ids, renders, [list(row) for row in encoded])
