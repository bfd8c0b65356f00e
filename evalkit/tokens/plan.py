"""What each split's rows become: the training texts, their loss spans, their prompts.

Conversations are rendered by the chat template, as
:func:`evalkit.chat.template_conversations` gives them (tool calls and the
row's tools included), their inference prompts too (the conversation
before its last assistant turn, as ``generate`` renders it, through
:func:`evalkit.tokens.render.prompt_renders`); text columns are taken as
they are, TRL's prompt-completion pair joined as TRL joins it (``prompt +
completion``). A planner works a chunk of rows at a time, so that
:func:`evalkit.tokens.figures.measure` can render one chunk while the
tokenizer encodes another.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from evalkit.chat import handed_counts, template_conversations
from evalkit.errors import EvalkitError
from evalkit.records._tokens import Encode, Loss
from evalkit.tokens.figures import Plan
from evalkit.tokens.inputs import SplitInput
from evalkit.tokens.render import (
    prompt_renders,
    render_all,
    render_with_generation_spans,
)
from evalkit.tokens.spans import PROBE, Closers, Probe, all_assistant_spans, marked_spans
from evalkit.tokens.time_limit import TemplateTimeout


def added_token_strings(tokenizer: Any) -> list[str]:
    """The strings of every special and added token (what becomes a control token in text)."""
    strings = {added.content for added in tokenizer.added_tokens_decoder.values()}
    strings.update(tokenizer.all_special_tokens)
    return sorted(s for s in strings if s and not s.isspace())


def special_in_text(split: SplitInput, strings: list[str]) -> np.ndarray:
    """Per row: whether a message content (or the text) holds one of ``strings``."""
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


def excluded_turns(split: SplitInput, loss: Loss) -> int:
    """Assistant turns ``--loss assistant`` leaves out: their flag says ``weight: 0`` or
    ``training: false``. A flag on another role changes no mask (only assistant turns are
    supervised), and the other losses do not read flags."""
    import polars as pl

    conversations = split.chat.conversations
    if loss != "assistant" or conversations is None:
        return 0
    message = pl.element().struct
    flagged = (message.field("role") == "assistant") & (message.field("train") == False)  # noqa: E712
    return int(conversations.list.eval(flagged.fill_null(False)).list.sum().sum())


@dataclass
class SplitPlanner:
    """Plans chunks of one split's rows (``planner(start, stop)``), and flags special text."""

    split: SplitInput
    tokenizer: Any
    loss: Loss
    encode: Encode
    markers: bool
    special_in_text: np.ndarray = field(init=False)
    special_found: str | None = field(init=False)
    handed: Counter[str] = field(init=False, default_factory=Counter)
    """How the planned rows' tool-call arguments reached the template (see
    :func:`evalkit.chat.handed_counts`)."""

    def __post_init__(self) -> None:
        strings = added_token_strings(self.tokenizer)
        self.special_in_text = special_in_text(self.split, strings)
        self.special_found = first_special(self.split, self.special_in_text, strings)
        chat = self.split.chat
        self._closers = Closers.of(strings)
        if chat.is_conversation and self.loss == "assistant":
            self._closers = Closers.probed(self._probe(), strings)
        if chat.is_conversation:
            self._has_answer = chat.reference_answers().is_not_null().to_list()
            # The inference prompt is always the conversation's first messages (see
            # ChatColumn.prompts): its template messages are a prefix of the whole one's.
            self._prompt_lengths = chat.prompts().list.len().to_list()
            self._turns = chat.prompt_turns.to_list() if chat.prompt_turns is not None else None

    def _probe(self) -> Probe:
        """The template's renders of the probe conversation (None where it refused one)."""
        where = "evalkit's probe conversation (one user turn, one answer)"

        def rendered(messages: list[dict[str, str]], prompt: bool) -> str | None:
            try:
                return render_all(
                    self.tokenizer, [messages], add_generation_prompt=prompt, where=lambda _: where
                )[0]
            except TemplateTimeout:  # a template that does not end is no refusal: stop here
                raise
            except EvalkitError:
                return None

        whole = rendered(PROBE, False)
        if whole is None:
            return Probe(None)
        return Probe(whole, rendered(PROBE[:1], False), rendered(PROBE[:1], True))

    @property
    def n(self) -> int:
        """Rows of the split."""
        return len(self.split.chat)

    def __call__(self, start: int, stop: int) -> Plan:
        if self.split.chat.is_conversation:
            return self._conversations(start, stop)
        return self._texts(start, stop)

    def _where(self, start: int) -> Callable[[int], str]:
        return lambda row: self.split.where(start + row)

    def _conversations(self, start: int, stop: int) -> Plan:
        chat, tokenizer = self.split.chat, self.tokenizer
        whole = template_conversations(chat, range(start, stop))
        self.handed.update(handed_counts(whole))
        messages = [conversation.messages for conversation in whole]
        tools = [conversation.tools for conversation in whole]
        where = self._where(start)
        spans = None
        if self.loss == "assistant" and self.markers:
            renders, spans = render_with_generation_spans(
                tokenizer, messages, where=where, tools=tools
            )
        else:
            renders = render_all(tokenizer, messages, where=where, tools=tools)
        lengths = self._prompt_lengths[start:stop]
        prompt_messages = [
            conversation.messages[:length]
            for conversation, length in zip(whole, lengths, strict=True)
        ]
        rows = [row for row in range(stop - start) if self._has_answer[start + row]]
        rendered = prompt_renders(
            tokenizer,
            [prompt_messages[row] for row in rows],
            where=lambda k: where(rows[k]),
            tools=[tools[row] for row in rows],
        )
        prompts: list[str | None] = [None] * (stop - start)
        for row, prompt in zip(rows, rendered, strict=True):
            prompts[row] = prompt
        add_special = self.encode == "text"
        if self.loss == "assistant":
            ends = [
                len(p) if p is not None and render.startswith(p) else 0
                for p, render in zip(prompts, renders, strict=True)
            ]
            train = [conversation.train for conversation in whole]
            if spans is None:
                spans = all_assistant_spans(renders, messages, self._closers, ends, where, train)
            else:
                spans = [
                    marked_spans(
                        spans[row], renders[row], messages[row], train[row], self._closers,
                        ends[row], where(row),
                    )
                    for row in range(stop - start)
                ]  # fmt: skip
            return Plan(renders, add_special, "spans", spans=spans, prompts=prompts)
        if self.loss == "completion":
            boundary = self._completion_prompts(start, messages, prompt_messages, prompts, tools)
            return Plan(
                renders, add_special, "after_prompt", prompts=prompts, boundary_prompts=boundary
            )
        return Plan(renders, add_special, "all", prompts=prompts)

    def _completion_prompts(
        self,
        start: int,
        messages: list[Any],
        prompt_messages: list[Any],
        prompts: list[str | None],
        tools: list[Any],
    ) -> list[str | None] | None:
        """The prompt column's render, for rows where it is not the inference prompt."""
        assert self._turns is not None
        turns = self._turns[start : start + len(messages)]
        rows = [
            row
            for row, count in enumerate(turns)
            if prompts[row] is None or len(prompt_messages[row]) != count
        ]
        if not rows:
            return None
        where = self._where(start)
        rendered = prompt_renders(
            self.tokenizer,
            [messages[row][: turns[row]] for row in rows],
            where=lambda k: where(rows[k]),
            tools=[tools[row] for row in rows],
        )
        boundary: list[str | None] = [None] * len(turns)
        for row, prompt in zip(rows, rendered, strict=True):
            boundary[row] = prompt
        return boundary

    def _texts(self, start: int, stop: int) -> Plan:
        chat = self.split.chat
        first = chat.texts[0].slice(start, stop - start).to_list()
        if not chat.paired:
            return Plan(first, True, "all")
        second = chat.texts[1].slice(start, stop - start).to_list()
        return Plan(
            texts=[p + c for p, c in zip(first, second, strict=True)],
            add_special_tokens=True,
            supervision="after_prompt" if self.loss == "completion" else "all",
            prompts=list(first),
            prompt_add_special_tokens=True,
        )
