"""What each split's rows become: the training texts, their loss spans, their prompts.

Conversations are rendered by the chat template (once, in a batch), their
inference prompts too (``messages[:-1]``-style, as ``generate`` renders
them, through :func:`evalkit.tokens.render.prompt_renders`); text columns
are taken as they are, TRL's prompt-completion pair joined as TRL joins it
(``prompt + completion``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from evalkit.tokens.figures import Plan
from evalkit.tokens.inputs import SplitInput
from evalkit.tokens.models import Encode, Loss
from evalkit.tokens.render import (
    prompt_renders,
    render_all,
    render_with_generation_spans,
)
from evalkit.tokens.spans import Closers, all_assistant_spans


@dataclass(frozen=True)
class Prepared:
    """A split's plan, and what is known about its rows before encoding."""

    plan: Plan
    special_in_text: np.ndarray
    """Per row: whether a message content (or the text) holds a special token's string."""
    special_found: str | None
    """The special token string found first in the first such row (None: no row)."""


def added_token_strings(tokenizer: Any) -> list[str]:
    """The strings of every special and added token (what becomes a control token in text)."""
    strings = {added.content for added in tokenizer.added_tokens_decoder.values()}
    strings.update(tokenizer.all_special_tokens)
    return sorted(s for s in strings if s and not s.isspace())


def special_in_text(split: SplitInput, strings: list[str]) -> np.ndarray:
    import polars as pl

    chat = split.chat
    n = len(chat)
    if not strings:
        return np.zeros(n, bool)
    if chat.conversations is not None:
        content = pl.element().struct.field("content").str.contains_any(strings)
        found = chat.conversations.list.eval(content).list.any()
        return found.fill_null(False).to_numpy().astype(bool)
    flags = np.zeros(n, bool)
    for texts in chat.texts:
        flags |= texts.str.contains_any(strings).fill_null(False).to_numpy().astype(bool)
    return flags


def _conversation_plan(
    split: SplitInput, tokenizer: Any, loss: Loss, encode: Encode, markers: bool
) -> Plan:
    chat = split.chat
    messages = chat.messages()
    where = split.where
    generation_spans = None
    if loss == "assistant" and markers:
        renders, generation_spans = render_with_generation_spans(tokenizer, messages, where=where)
    else:
        renders = render_all(tokenizer, messages, where=where)
    has_answer = chat.reference_answers().is_not_null().to_list()
    prompt_messages = chat.prompts().to_list()
    rows = [row for row, has in enumerate(has_answer) if has]
    rendered = prompt_renders(
        tokenizer, [prompt_messages[row] for row in rows], where=lambda k: where(rows[k])
    )
    prompts: list[str | None] = [None] * len(messages)
    for row, prompt in zip(rows, rendered, strict=True):
        prompts[row] = prompt
    plan = Plan(
        texts=renders,
        add_special_tokens=encode == "text",
        supervision="all",
        prompts=prompts,
    )
    if loss == "assistant":
        if generation_spans is None:
            prompt_ends = [
                len(p) if p is not None and render.startswith(p) else 0
                for p, render in zip(prompts, renders, strict=True)
            ]
            closers = Closers.of(added_token_strings(tokenizer))
            generation_spans = all_assistant_spans(renders, messages, closers, prompt_ends, where)
        return replace(plan, supervision="spans", spans=generation_spans)
    if loss == "completion":
        boundary = _completion_prompts(split, tokenizer, prompt_messages, prompts)
        return replace(plan, supervision="after_prompt", boundary_prompts=boundary)
    return plan


def _completion_prompts(
    split: SplitInput,
    tokenizer: Any,
    prompt_messages: list[Any],
    prompts: list[str | None],
) -> list[str | None] | None:
    """The prompt column's render, for rows where it is not the inference prompt."""
    chat = split.chat
    assert chat.prompt_turns is not None
    turns = chat.prompt_turns.to_list()
    messages = chat.messages()
    rows = [
        row
        for row, count in enumerate(turns)
        if prompts[row] is None or len(prompt_messages[row]) != count
    ]
    if not rows:
        return None
    rendered = prompt_renders(
        tokenizer,
        [messages[row][: turns[row]] for row in rows],
        where=lambda k: split.where(rows[k]),
    )
    boundary: list[str | None] = [None] * len(turns)
    for row, prompt in zip(rows, rendered, strict=True):
        boundary[row] = prompt
    return boundary


def _text_plan(split: SplitInput, loss: Loss) -> Plan:
    chat = split.chat
    if not chat.paired:
        return Plan(texts=chat.texts[0].to_list(), add_special_tokens=True, supervision="all")
    prompts = chat.texts[0].to_list()
    completions = chat.texts[1].to_list()
    return Plan(
        texts=[p + c for p, c in zip(prompts, completions, strict=True)],
        add_special_tokens=True,
        supervision="after_prompt" if loss == "completion" else "all",
        prompts=prompts,
        prompt_add_special_tokens=True,
    )


def prepare(
    split: SplitInput, tokenizer: Any, loss: Loss, encode: Encode, *, markers: bool
) -> Prepared:
    """The plan of one split (rendering its conversations), and its special-token flags."""
    plan = (
        _conversation_plan(split, tokenizer, loss, encode, markers)
        if split.chat.is_conversation
        else _text_plan(split, loss)
    )
    strings = added_token_strings(tokenizer)
    flags = special_in_text(split, strings)
    return Prepared(plan, flags, first_special(split, flags, strings))


def first_special(split: SplitInput, flags: np.ndarray, strings: list[str]) -> str | None:
    """Which special token string the first flagged row holds (the earliest in its text)."""
    rows = np.flatnonzero(flags)
    if not rows.size:
        return None
    row = int(rows[0])
    chat = split.chat
    if chat.conversations is not None:
        messages = chat.conversations.slice(row, 1).to_list()[0]
        text = "\n".join(message["content"] for message in messages)
    else:
        text = "\n".join(texts[row] or "" for texts in chat.texts)
    found = [(text.find(s), -len(s), s) for s in strings if s in text]
    return min(found)[2] if found else None
