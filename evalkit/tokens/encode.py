"""Encoding many texts at once, and mapping character spans of a text onto its tokens.

The fast tokenizer's own backend (``tokenizers``) encodes a batch in Rust on
every core; its ``Encoding`` objects answer "which token holds character
c" without building the offsets of every token in Python, which is what
turning a character span into a token range needs. The ids are those of
``tokenizer(texts, add_special_tokens=…)``: transformers calls the same
backend.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evalkit.tokens.spans import Span

TokenRun = tuple[int, int]  # first and last token (inclusive) of a supervised stretch


def backend(tokenizer: Any) -> Any:
    """The ``tokenizers.Tokenizer`` behind a fast tokenizer, with truncation and padding off.

    A tokenizer.json may carry truncation or padding settings; transformers
    switches them off for a plain ``tokenizer(text)`` call, and so does this.
    """
    engine = tokenizer.backend_tokenizer
    if engine.truncation is not None:
        engine.no_truncation()
    if engine.padding is not None:
        engine.no_padding()
    return engine


def encode_batch(tokenizer: Any, texts: Sequence[str], *, add_special_tokens: bool) -> list[Any]:
    """``tokenizers.Encoding`` of every text (ids, offsets), encoded in one parallel call."""
    if not texts:
        return []
    return list(backend(tokenizer).encode_batch(list(texts), add_special_tokens=add_special_tokens))


def _overlapping(offsets: Sequence[tuple[int, int]], start: int, end: int) -> TokenRun | None:
    """First and last token overlapping ``[start, end)``, scanning the offsets (the slow path)."""
    hits = [i for i, (s, e) in enumerate(offsets) if s < end and e > start]
    return (hits[0], hits[-1]) if hits else None


def span_tokens(encoding: Any, start: int, end: int) -> TokenRun | None:
    """The tokens that overlap characters ``[start, end)`` (as transformers' assistant mask).

    A token counts when any of its characters is in the span, so a token
    that straddles the span's edge is supervised, as it is in
    ``apply_chat_template(return_assistant_tokens_mask=True)``.
    """
    if end <= start:
        return None
    first = encoding.char_to_token(start)
    last = encoding.char_to_token(end - 1)
    if first is None or last is None:  # characters no token holds (a normaliser dropped them)
        return _overlapping(encoding.offsets, start, end)
    count = len(encoding)
    while last + 1 < count:  # bytes of one character split over several tokens
        following = encoding.token_to_chars(last + 1)
        if following is None or not (following[0] < end and following[1] > start):
            break
        last += 1
    return first, last


def span_runs(encoding: Any, spans: Sequence[Span]) -> list[TokenRun]:
    """Token runs of a row's character spans, in order, a token shared by two counted once."""
    runs: list[TokenRun] = []
    for start, end in spans:
        run = span_tokens(encoding, start, end)
        if run is None:
            continue
        first, last = run
        if runs and first <= runs[-1][1]:
            first = runs[-1][1] + 1
        if first <= last:
            runs.append((first, last))
    return runs
