"""Which characters of a render the loss is on, before any token exists.

A chat template with ``{% generation %}`` markers says so itself (see
:func:`evalkit.tokens.render.render_with_generation_spans`). Most templates
have none, and ``apply_chat_template(return_assistant_tokens_mask=True)``
then returns an all-zero mask; so evalkit finds each assistant turn in the
render itself. An assistant turn is what the model writes once its header
is open: its text, its tool calls as the template writes them, and the
end-of-turn token that closes it (a model that is never trained on that
token never learns to stop). Two ways to find it, tried in this order:

* **Turn header** (every current chat family): the header of an assistant
  turn is what ``add_generation_prompt=True`` appends
  (``<|im_start|>assistant\\n``, ``<|start_header_id|>assistant<|end_header_id|>\\n\\n``),
  read from the template's render of a probe conversation. Each assistant
  turn's span runs from the end of its header to the end of the token that
  closes it, so tool calls (``<tool_call>{…}</tool_call>``, Llama's
  ``{"name": …, "parameters": …}``), a thinking block the template adds, or
  text a template writes in place of the content are all supervised, as
  the template renders them; the last turn's span starts where the
  inference prompt ends, which is where generation starts.
* **Content** (templates whose generation prompt is empty, or whose turns
  do not start with it): each assistant content is found in the render, in
  order, and extended over the end-of-turn token right after it. Tool calls
  cannot be located this way (their text is the template's), so a row with
  tool calls needs ``{% generation %}`` markers then.

Turns whose training flag says not to train on them (``weight: 0``,
``training: false``) are found like the others and left out of the mask.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from evalkit.errors import EvalkitError

Span = tuple[int, int]
Message = dict[str, Any]
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
class Probe:
    """The template's renders of :data:`PROBE`: whole, and its question with and without
    the generation prompt (None where the template refused)."""

    render: str | None
    question: str | None = None
    prompt: str | None = None

    def header(self) -> str | None:
        """What the generation prompt adds, when the whole render opens the answer with it."""
        if self.render is None or self.question is None or self.prompt is None:
            return None
        if not self.prompt.startswith(self.question) or not self.render.startswith(self.prompt):
            return None
        header = self.prompt[len(self.question) :]
        return header if header.strip() else None


@dataclass(frozen=True)
class Closers:
    """How the template writes an assistant turn: the tokens that may close it (one
    pattern), whether it trims answers, and the header that opens it."""

    pattern: re.Pattern[str] | None
    trims: bool = False
    """Whether the template trims an answer's surrounding whitespace (``| trim``)."""
    header: str | None = None
    """What opens an assistant turn (the generation prompt), or None: spans from contents."""

    @classmethod
    def of(cls, strings: Iterable[str], *, trims: bool = False) -> Closers:
        """A pattern matching optional whitespace and then the longest of ``strings``."""
        tokens = sorted({s for s in strings if s and not s.isspace()}, key=lambda s: (-len(s), s))
        if not tokens:
            return cls(None, trims)
        return cls(re.compile(r"\s*(?:" + "|".join(map(re.escape, tokens)) + ")"), trims)

    @classmethod
    def probed(cls, probe: Probe | str | None, strings: Iterable[str]) -> Closers:
        """The token that closes an answer in the template's render of :data:`PROBE`.

        Any special token may follow a content, header tokens too (a short
        answer "assistant" would then be found in the header
        ``<|start_header_id|>assistant<|end_header_id|>``); the one written
        right after the probe's answer is the one that closes turns. Without a
        render (the template refused the probe), or with nothing found after the
        answer, every token of ``strings`` may close a turn, and spans come from
        contents. The header is kept when the generation prompt opens the answer.
        """
        if not isinstance(probe, Probe):
            probe = Probe(probe)
        render = probe.render
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
        closing = cls.of([found.group(0).strip()], trims=trims)
        header = probe.header()
        if header is not None and at < len(probe.prompt or ""):
            header = None  # the answer does not follow the generation prompt
        return cls(closing.pattern, trims, header)

    def end_after(self, render: str, position: int) -> int | None:
        """Where the closing token that starts at ``position`` ends (None: no token there)."""
        if self.pattern is None:
            return None
        found = self.pattern.match(render, position)
        return found.end() if found else None

    def next_end(self, render: str, position: int) -> int | None:
        """Where the first closing token at or after ``position`` ends (None: none)."""
        if self.pattern is None:
            return None
        found = self.pattern.search(render, position)
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


def _forms(content: str, closers: Closers) -> list[str]:
    """How a content may appear in the render: as written, or trimmed (first when the
    template trims)."""
    forms = [content.strip(), content] if closers.trims else [content, content.strip()]
    return [form for form in dict.fromkeys(forms) if form]


def _last_assistant(messages: Sequence[Message]) -> int:
    return max((i for i, m in enumerate(messages) if m["role"] == "assistant"), default=-1)


def _header_spans(
    render: str, messages: Sequence[Message], closers: Closers, last_answer_from: int
) -> dict[int, Span] | None:
    """Each assistant turn from the end of its header to the end of its closing token.

    None when a turn does not fit that shape (no header or closing token
    where one is due, a span holding the next turn's header, or a text
    content that is not inside its span): the row's spans then come from
    the contents.
    """
    header = closers.header
    assert header is not None
    last = _last_assistant(messages)
    spans: dict[int, Span] = {}
    cursor = 0
    for index, message in enumerate(messages):
        if message["role"] != "assistant":
            continue
        if index == last and last_answer_from > 0:
            start = max(last_answer_from, cursor)
        else:
            at = render.find(header, cursor)
            if at < 0:
                return None
            start = at + len(header)
        end = closers.next_end(render, start)
        if end is None or render.find(header, start, end) >= 0:
            return None
        content = message["content"]
        # A template may drop the text beside tool calls (Llama 3's does); text alone must show.
        shown = any(render.find(form, start, end) >= 0 for form in _forms(content, closers))
        if content.strip() and not message.get("tool_calls") and not shown:
            return None
        spans[index] = (start, end)
        cursor = end
    return spans


def _content_spans(
    render: str, messages: Sequence[Message], closers: Closers, last_answer_from: int
) -> dict[int, Span] | int:
    """Each assistant content found in the render, extended over its closing token.

    The last assistant turn is searched from ``last_answer_from`` (the end
    of the inference prompt, when the render starts with it), so that a
    short answer is not found inside the header that precedes it. A blank
    last answer supervises the token that closes it (found right after the
    inference prompt); an earlier blank assistant message, which has no
    such anchor, supervises nothing. Returns the index of the first
    assistant message that cannot be found instead (the template rewrites
    its text, or it makes tool calls, whose text is the template's).
    """
    last = _last_assistant(messages)
    cursor = 0
    spans: dict[int, Span] = {}
    for index, message in enumerate(messages):
        content = message["content"]
        is_assistant = message["role"] == "assistant"
        if is_assistant and message.get("tool_calls"):
            return index
        if index == last and not content.strip() and last_answer_from > 0:
            # A blank answer: the render goes on from the inference prompt straight to
            # the token that closes the turn, which is what the model learns to emit.
            closed = closers.end_after(render, last_answer_from)
            if closed is not None:
                spans[index] = (last_answer_from, closed)
                cursor = closed
                continue
        if not content or (content.isspace() and not is_assistant):
            continue
        start = max(cursor, last_answer_from) if index == last else cursor
        text, found = content, -1
        for text in _forms(content, closers):
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
            spans[index] = (found, closed if closed is not None else end)
            cursor = spans[index][1]
    return spans


def assistant_spans(
    render: str,
    messages: Sequence[Message],
    closers: Closers,
    *,
    last_answer_from: int = 0,
) -> dict[int, Span] | int:
    """Character span of each assistant turn in ``render``, by message index.

    From the turn headers when the template has one and every turn fits it,
    else from the contents (see the module docstring). Returns the index of
    the first assistant message that cannot be located instead.
    """
    if closers.header is not None:
        found = _header_spans(render, messages, closers, last_answer_from)
        if found is not None:
            return found
    return _content_spans(render, messages, closers, last_answer_from)


def excluded(train: Sequence[bool | None] | None, index: int) -> bool:
    """Whether the message's training flag says not to train on it."""
    return train is not None and train[index] is False


def all_assistant_spans(
    renders: Sequence[str],
    conversations: Sequence[Sequence[Message]],
    closers: Closers,
    prompt_ends: Sequence[int],
    where: Callable[[int], str],
    train: Sequence[Sequence[bool | None]] | None = None,
) -> list[list[Span]]:
    """The supervised spans of every row: :func:`assistant_spans` less the turns whose
    flag excludes them; a turn that cannot be located is an error naming the row."""
    result: list[list[Span]] = []
    for row, (render, messages) in enumerate(zip(renders, conversations, strict=True)):
        spans = assistant_spans(render, messages, closers, last_answer_from=prompt_ends[row])
        if isinstance(spans, int):
            raise _not_found(where(row), messages, spans)
        flags = train[row] if train is not None else None
        result.append([span for index, span in spans.items() if not excluded(flags, index)])
    return result


def _not_found(where: str, messages: Sequence[Message], index: int) -> MaskNotFound:
    fix = "add {% generation %} markers around the assistant turn in the template"
    if messages[index].get("tool_calls"):
        return MaskNotFound(
            f"{where}: message {index} (assistant) makes tool calls, and the chat template "
            "writes no turn header (its generation prompt is empty, or its turns do not "
            f"start with it) to find them by, so its loss mask cannot be found; {fix}"
        )
    return MaskNotFound(
        f"{where}: message {index} (assistant) does not appear in the chat template's "
        "render (the template rewrites it), so its loss mask cannot be found; " + fix
    )


def marked_spans(
    blocks: Sequence[Span],
    render: str,
    messages: Sequence[Message],
    train: Sequence[bool | None] | None,
    closers: Closers,
    last_answer_from: int,
    where: str,
) -> list[Span]:
    """The ``{% generation %}`` blocks of one render, less those of excluded turns.

    A block belongs to the assistant turn whose span (from its header, see
    :func:`assistant_spans`) holds its start; when turns have no header to
    find them by, the blocks are the assistant turns in order, one each. A
    row whose blocks cannot be matched to its turns is an error, since the
    mask would otherwise train on a turn the data excludes.
    """
    if train is None or not any(excluded(train, i) for i in range(len(messages))):
        return list(blocks)
    turns = [i for i, message in enumerate(messages) if message["role"] == "assistant"]
    owners: list[int] | None = None
    if closers.header is not None:
        spans = _header_spans(render, messages, closers, last_answer_from)
        if spans is not None:
            found = [
                next((i for i, (s, e) in spans.items() if s <= start < e), None)
                for start, _ in blocks
            ]
            if all(owner is not None for owner in found):
                owners = [owner for owner in found if owner is not None]
    if owners is None and len(blocks) == len(turns):
        owners = turns
    if owners is None:
        raise MaskNotFound(
            f"{where}: the chat template's {len(blocks)} {{% generation %}} blocks cannot be "
            f"matched to the conversation's {len(turns)} assistant turns, and a turn's "
            "training flag excludes it (weight: 0 / training: false); put one block in each "
            "assistant turn"
        )
    pairs = zip(blocks, owners, strict=True)
    return [block for block, owner in pairs if not excluded(train, owner)]
