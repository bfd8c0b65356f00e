"""Token lengths of a ``--text`` column, counted exactly as ``evalkit tokens`` counts them.

``split --tokenizer DIR`` reports these, so a split's length quantiles and
the ``total`` tokens of ``evalkit tokens`` on the same rows agree: a
conversation is its chat template's render encoded as
``apply_chat_template(tokenize=True)`` does; a text is ``tokenizer(text)``
with the special tokens added; two text columns are ``prompt +
completion`` (TRL's join). What the template receives (tool calls,
tools) comes from :func:`evalkit.chat.template_conversations`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from evalkit.tokens.encode import encode_batch
from evalkit.tokens.render import render_all, require_template

if TYPE_CHECKING:
    import polars as pl

    from evalkit.chat import ChatColumn

CHUNK_ROWS = 4096


def _counts(tokenizer: Any, texts: list[str], *, add_special_tokens: bool) -> list[int]:
    counts: list[int] = []
    for start in range(0, len(texts), CHUNK_ROWS):
        encoded = encode_batch(
            tokenizer, texts[start : start + CHUNK_ROWS], add_special_tokens=add_special_tokens
        )
        counts.extend(len(encoding) for encoding in encoded)
    return counts


def text_token_lengths(tokenizer: Any, texts: pl.Series) -> pl.Series:
    """Tokens of each text as ``tokenizer(text)`` counts them (null stays null)."""
    import polars as pl

    present = texts.is_not_null().to_list()
    values = [text for text, here in zip(texts.to_list(), present, strict=True) if here]
    counts = iter(_counts(tokenizer, values, add_special_tokens=True))
    return pl.Series("length", [next(counts) if here else None for here in present], pl.Int64)


def token_lengths(
    chat: ChatColumn,
    tokenizer: Any,
    *,
    source: str = "input table",
    where: Callable[[int], str] | None = None,
) -> pl.Series:
    """Tokens of every row of ``chat`` (null where a text is null), as ``evalkit tokens`` counts.

    Conversations need the tokenizer's chat template; its absence is an
    error naming ``source``. ``where`` names a row in a template error.
    """
    import polars as pl

    if chat.is_conversation:
        from evalkit.chat import template_conversations

        require_template(tokenizer, source)
        conversations = template_conversations(chat)
        renders = render_all(
            tokenizer,
            [conversation.messages for conversation in conversations],
            where=where or (lambda row: f"{source}, row {row + 1}"),
            tools=[conversation.tools for conversation in conversations],
        )
        counts = _counts(tokenizer, renders, add_special_tokens=False)
        return pl.Series("length", counts, pl.Int64)
    if not chat.paired:
        return text_token_lengths(tokenizer, chat.texts[0])
    prompts, completions = chat.texts
    both = pl.select(
        pl.when(pl.lit(prompts).is_null() & pl.lit(completions).is_null())
        .then(None)
        .otherwise(pl.lit(prompts).fill_null("") + pl.lit(completions).fill_null(""))
        .alias("text")
    )["text"]
    return text_token_lengths(tokenizer, both)
