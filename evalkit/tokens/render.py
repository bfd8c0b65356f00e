"""Rendering conversations with a chat template, and encoding the renders.

This is the one place where messages become the text and the token ids a
model sees, for training (the whole conversation) and for inference (the
prompt, ``add_generation_prompt=True``). Encoding follows what
``apply_chat_template(tokenize=True)`` does - the render tokenized without
adding special tokens, since the template writes its own - but in batches:
rendering once and encoding many renders at a time is far faster than one
``apply_chat_template`` call per example, and gives the same ids.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from evalkit.errors import EvalkitError, UsageError
from evalkit.tokens.load import chat_template

Messages = Sequence[dict[str, str]]


class TemplateFailure(EvalkitError):
    """The chat template refused a conversation (e.g. roles that do not alternate)."""


def require_template(tokenizer: Any, where: str) -> str:
    """The tokenizer's chat template, or a clear error naming where it was looked for."""
    template = chat_template(tokenizer)
    if template is None:
        raise UsageError(
            f"{where}: the tokenizer has no chat template (neither 'chat_template' in "
            "tokenizer_config.json nor chat_template.jinja), so conversations cannot be "
            "rendered; add the model family's template, or pass text columns"
        )
    return template


def render(tokenizer: Any, messages: Messages, *, add_generation_prompt: bool = False) -> str:
    """One conversation rendered by the tokenizer's chat template, as text."""
    text = tokenizer.apply_chat_template(
        list(messages), tokenize=False, add_generation_prompt=add_generation_prompt
    )
    assert isinstance(text, str)
    return text


def render_all(
    tokenizer: Any,
    conversations: Sequence[Messages],
    *,
    add_generation_prompt: bool = False,
    where: Callable[[int], str] = lambda row: f"row {row + 1}",
) -> list[str]:
    """Every conversation rendered; a template error names the row (``where``)."""
    from jinja2 import TemplateError

    renders: list[str] = []
    for row, messages in enumerate(conversations):
        try:
            renders.append(render(tokenizer, messages, add_generation_prompt=add_generation_prompt))
        except TemplateError as error:
            first = str(error).strip().splitlines()[0] if str(error).strip() else ""
            raise TemplateFailure(
                f"{where(row)}: the chat template refused this conversation ({first})"
            ) from None
    return renders


def encode_renders(
    tokenizer: Any, renders: Sequence[str], *, offsets: bool = False
) -> list[list[int]] | Any:
    """Token ids of rendered texts, as ``apply_chat_template(tokenize=True)`` gives them.

    With ``offsets`` the whole batch encoding is returned (``input_ids`` and
    ``offset_mapping``), for mapping characters of the render to tokens.
    """
    encoded = tokenizer(
        list(renders),
        add_special_tokens=False,
        return_offsets_mapping=offsets,
        return_attention_mask=False,
    )
    return encoded if offsets else encoded["input_ids"]


def prompt_renders(
    tokenizer: Any,
    prompts: Sequence[Messages],
    *,
    where: Callable[[int], str] = lambda row: f"row {row + 1}",
) -> list[str]:
    """The inference prompts: each conversation's prompt with the generation prompt added."""
    return render_all(tokenizer, prompts, add_generation_prompt=True, where=where)
