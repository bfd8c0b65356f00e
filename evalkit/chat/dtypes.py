"""The polars types of evalkit's normalised conversations: one definition for every reader."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import polars as pl

ROLE = "role"
CONTENT = "content"


def call_dtype() -> pl.DataType:
    """The polars type of a normalised tool call."""
    import polars as pl

    return pl.Struct(
        {"id": pl.String, "name": pl.String, "arguments": pl.String, "arguments_text": pl.Boolean}
    )


def conversation_dtype() -> pl.DataType:
    """The polars type of a normalised conversation: a list of messages.

    Each message is ``{role, content, tool_calls, tool_call_id, name, train,
    reasoning}``: ``content`` its text (empty for a call-only turn),
    ``tool_calls`` a list of ``{id, name, arguments, arguments_text}`` (null
    when it calls nothing), ``train`` the training flag as written (null when
    not written), ``reasoning`` the reasoning parts' text (LLaMA-Factory's
    ``reasoning`` parts; null when there are none).
    """
    import polars as pl

    return pl.List(
        pl.Struct(
            {
                ROLE: pl.String,
                CONTENT: pl.String,
                "tool_calls": pl.List(call_dtype()),
                "tool_call_id": pl.String,
                "name": pl.String,
                "train": pl.Boolean,
                "reasoning": pl.String,
            }
        )
    )
