"""Polars expressions for the text of conversations and of text columns.

What duplicates are compared on and what lengths count: a turn is its
content, then one line per tool call (its name and its arguments), so two
examples that call other tools or pass other arguments differ; text columns
are joined as TRL joins a prompt and its completion, with a newline.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import polars as pl

TURN_SEPARATOR = "\n"


def message_text() -> pl.Expr:
    """A message's compared text: its content, then each tool call's name and arguments."""
    import polars as pl

    message, call = pl.element(), pl.element()
    calls = (
        message.struct.field("tool_calls")
        .list.eval(
            pl.concat_str(
                [call.struct.field("name"), call.struct.field("arguments")], separator=" "
            )
        )
        .list.join(TURN_SEPARATOR)
    )
    return pl.concat_str(
        [message.struct.field("content"), calls], separator=TURN_SEPARATOR, ignore_nulls=True
    )


def message_chars() -> pl.Expr:
    """A message's characters: its content's, and its tool calls' names and arguments."""
    import polars as pl

    message, call = pl.element(), pl.element()
    calls = (
        message.struct.field("tool_calls")
        .list.eval(
            call.struct.field("name").str.len_chars()
            + call.struct.field("arguments").str.len_chars()
        )
        .list.sum()
        .fill_null(0)
    )
    return message.struct.field("content").str.len_chars() + calls


def joined_texts(texts: tuple[pl.Series, ...]) -> pl.Series:
    """One text column, or two (prompt, completion) joined by a newline (null when both are)."""
    import polars as pl

    if len(texts) == 1:
        return texts[0].alias("text")
    both_null = texts[0].is_null() & texts[1].is_null()
    joined = pl.concat_str(
        [pl.lit(texts[0]), pl.lit(texts[1])], separator=TURN_SEPARATOR, ignore_nulls=True
    )
    return pl.select(pl.when(pl.lit(both_null)).then(None).otherwise(joined).alias("text"))["text"]
