"""Which characters of a render the loss is on, before any token exists.

A chat template with ``{% generation %}`` markers says so itself (see
:func:`evalkit.tokens.render.render_with_generation_spans`). Most templates
have none, and ``apply_chat_template(return_assistant_tokens_mask=True)``
then returns an all-zero mask; so, as trainers that mask "assistant only"
do, evalkit finds each assistant message's content in the render, in
order, and extends the span over the end-of-turn token that closes it (the
special token right after the content, whitespace allowed between): a model
that is never trained on that token never learns to stop.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from evalkit.errors import EvalkitError

Span = tuple[int, int]
# How many occurrences of a content are tried before taking the first one:
# a short answer ("a", "ok") also occurs in headers and earlier turns.
MAX_TRIES = 16


class MaskNotFound(EvalkitError):
    """An assistant message's text does not appear in the template's render."""


# The probe conversation that shows how a template writes an answer: the answer is
# padded with whitespace, which a template that trims (`| trim`) leaves out.
PROBE_QUESTION = "evalkit probe question"
PROBE_ANSWER = "evalkit probe answer"
PADDED_ANSWER = f" \n{PROBE_ANSWER}\n "
PROBE = [
    {"role": "user", "content": PROBE_QUESTION},
    {"role": "assistant", "content": PADDED_ANSWER},
]


@dataclass(frozen=True)
class Closers:
    """The token strings that may close a turn, as one pattern, and how answers are written."""

    pattern: re.Pattern[str] | None
    trims: bool = False
    """Whether the template trims an answer's surrounding whitespace (``| trim``)."""

    @classmethod
    def of(cls, strings: Iterable[str], *, trims: bool = False) -> Closers:
        """A pattern matching optional whitespace and then the longest of ``strings``."""
        tokens = sorted({s for s in strings if s and not s.isspace()}, key=lambda s: (-len(s), s))
        if not tokens:
            return cls(None, trims)
        return cls(re.compile(r"\s*(?:" + "|".join(map(re.escape, tokens)) + ")"), trims)

    @classmethod
    def probed(cls, render: str | None, strings: Iterable[str]) -> Closers:
        """The token that closes an answer in the template's ``render`` of :data:`PROBE`.

        Any special token may follow a content, header tokens too (a short
        answer "assistant" would then be found in the header
        ``<|start_header_id|>assistant<|end_header_id|>``); the one written
        right after the probe's answer is the one that closes turns. Without a
        render (the template refused the probe), or with nothing found after the
        answer, every token of ``strings`` may close a turn.
        """
        every = cls.of(strings)
        if render is None:
            return every
        trims = PADDED_ANSWER not in render
        answer = PROBE_ANSWER if trims else PADDED_ANSWER
        at = render.find(answer)
        if at < 0 or every.pattern is None:
            return cls.of(strings, trims=trims)
        found = every.pattern.match(render, at + len(answer))
        if found is None:
            return cls.of(strings, trims=trims)
        return cls.of([found.group(0).strip()], trims=trims)

    def end_after(self, render: str, position: int) -> int | None:
        """Where the closing token that starts at ``position`` ends (None: no token there)."""
        if self.pattern is None:
            return None
        found = self.pattern.match(render, position)
        return found.end() if found else None


def _locate(render: str, text: str, start: int, closers: Closers) -> int:
    """Where ``text`` occurs from ``start``: preferably just before a closing token."""
    first = render.find(text, start)
    found, tries = first, 0
    while found >= 0 and tries < MAX_TRIES:
        if closers.end_after(render, found + len(text)) is not None:
            return found
        found = render.find(text, found + 1)
        tries += 1
    return first


def assistant_spans(
    render: str,
    messages: Sequence[dict[str, str]],
    closers: Closers,
    *,
    last_answer_from: int = 0,
) -> list[Span] | int:
    """Character spans of each assistant turn's content and closing token in ``render``.

    Messages are found in order, each after the one before; the last
    assistant turn is searched from ``last_answer_from`` (the end of the
    inference prompt, when the render starts with it), so that a short
    answer is not found inside the header that precedes it. Returns the
    index of the first assistant message that cannot be found instead, when
    the template rewrites the text (then only ``{% generation %}`` markers
    can say where the answer is). A blank last answer supervises the token
    that closes it (found right after the inference prompt, as ``{%
    generation %}`` markers around content and closer would mark it); an
    earlier blank assistant message, which has no such anchor, supervises
    nothing.
    """
    last_assistant = max(
        (i for i, message in enumerate(messages) if message["role"] == "assistant"), default=-1
    )
    cursor = 0
    spans: list[Span] = []
    for index, message in enumerate(messages):
        content = message["content"]
        is_assistant = message["role"] == "assistant"
        if index == last_assistant and not content.strip() and last_answer_from > 0:
            # A blank answer: the render goes on from the inference prompt straight to
            # the token that closes the turn, which is what the model learns to emit.
            closed = closers.end_after(render, last_answer_from)
            if closed is not None:
                spans.append((last_answer_from, closed))
                cursor = closed
                continue
        if not content or (content.isspace() and not is_assistant):
            continue
        start = max(cursor, last_answer_from) if index == last_assistant else cursor
        # Templates often trim (`message['content'] | trim`): then the whitespace around
        # a content in the render is the template's, and the trimmed text is looked for first.
        forms = [content.strip(), content] if closers.trims else [content, content.strip()]
        text, found = content, -1
        for text in dict.fromkeys(form for form in forms if form):
            found = _locate(render, text, start, closers)
            if found >= 0:
                break
        if found < 0:
            # Whitespace the template trims away (`| trim`) is an empty answer, not a rewrite.
            if is_assistant and content.strip():
                return index
            continue
        end = found + len(text)
        cursor = end
        if is_assistant:
            closed = closers.end_after(render, end)
            spans.append((found, closed if closed is not None else end))
            cursor = spans[-1][1]
    return spans


def all_assistant_spans(
    renders: Sequence[str],
    conversations: Sequence[Sequence[dict[str, str]]],
    closers: Closers,
    prompt_ends: Sequence[int],
    where: Callable[[int], str],
) -> list[list[Span]]:
    """:func:`assistant_spans` of every row; a message that cannot be found is an error."""
    result: list[list[Span]] = []
    for row, (render, messages) in enumerate(zip(renders, conversations, strict=True)):
        spans = assistant_spans(render, messages, closers, last_answer_from=prompt_ends[row])
        if isinstance(spans, int):
            raise MaskNotFound(
                f"{where(row)}: message {spans} (assistant) does not appear in the chat "
                "template's render (the template rewrites it), so its loss mask cannot be "
                "found; add {% generation %} markers around the assistant turn in the template"
            )
        result.append(spans)
    return result
