"""TRL's prompt-completion form: two ``--text`` columns, the prompt and its completion.

Two text columns stay text (each row's prompt and completion); two
conversation columns are joined in order, and the prompt is the first
column's messages. One of each is refused: the row would be half text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalkit.chat.dialect import ColumnReader, ColumnsDialect, ColumnsRead, NormalizedColumn
from evalkit.errors import InvalidConversation

if TYPE_CHECKING:
    from evalkit.io import Table


def read_prompt_completion(
    table: Table, names: tuple[str, ...], read_column: ColumnReader
) -> ColumnsRead:
    """The two columns as text, or as one conversation per row (prompt turns counted)."""
    import polars as pl

    table.require_columns(names)
    read = [read_column(table, name) for name in names]
    kinds = {kind for kind, _ in read}
    if len(kinds) > 1:
        text_column = next(n for n, (k, _) in zip(names, read, strict=True) if k == "text")
        chat_column = next(n for n, (k, _) in zip(names, read, strict=True) if k != "text")
        raise InvalidConversation(
            f"{table.label}: {{text}} {text_column} holds text but {{text}} {chat_column} holds "
            "conversations; give two text columns or two conversation columns",
            refs=["text"],
        )
    if kinds == {"text"}:
        return ColumnsRead("text", "text", texts=tuple(value for _, value in read))  # type: ignore[misc]
    parts: list[NormalizedColumn] = [value for _, value in read]  # type: ignore[misc]
    joined = pl.select(
        pl.concat_list(pl.lit(parts[0].conversations), pl.lit(parts[1].conversations))
    ).to_series()
    merged = NormalizedColumn(
        joined,
        sum(part.skipped_parts for part in parts),
        parts[0].shape,
        retyped=any(part.retyped for part in parts),
        json_text=any(part.json_text for part in parts),
    )
    return ColumnsRead(
        "conversation", parts[0].shape, normalized=merged,
        prompt_turns=parts[0].conversations.list.len(),
    )  # fmt: skip


PROMPT_COMPLETION = ColumnsDialect(
    name="prompt_completion",
    label="TRL",
    columns=2,
    parts=("prompt", "completion"),
    read=read_prompt_completion,
)
