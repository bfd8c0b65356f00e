"""Per-example token figures: lengths, loss mask, stop tokens, truncation, render parity.

One pass over a split's rows, a chunk at a time (the encodings of 100k
conversations would not fit in memory at once), keeps only what the checks
and statistics need, one value per example, in numpy arrays: the checks and
quantiles are then vectorised, and a count in the report is a sum over one
of these arrays.

The pass is a pipeline: while the tokenizer encodes one chunk in a
background thread (in Rust, without the GIL, on every core), this thread
renders the next chunk with the chat template and measures the previous
one, so the Python work hides behind the encoding instead of adding to it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from evalkit.records import TruncationMode
from evalkit.tokens.encode import TokenRun, encode_batch, span_runs
from evalkit.tokens.parity import PromptMatch, prompt_matches
from evalkit.tokens.spans import Span

Supervision = Literal["spans", "after_prompt", "all"]
CHUNK_ROWS = 2048
# Chunks planned ahead of the one being measured: the encoder always has one
# queued, so it never waits for this thread's Python.
AHEAD = 2


@dataclass(frozen=True)
class Plan:
    """How a chunk of a split's rows becomes training sequences and what the loss is on.

    Every list holds one entry per row of the chunk, in order.
    """

    texts: list[str]
    """What is encoded for training: the template's render, or the text."""
    add_special_tokens: bool
    """Whether the tokenizer adds its special tokens (BOS…) around each text."""
    supervision: Supervision
    """``spans``: the character spans below; ``after_prompt``: every token after
    the row's boundary prompt; ``all``: every token."""
    spans: list[list[Span]] | None = None
    """Per row, the supervised character spans (``spans``)."""
    prompts: list[str | None] | None = None
    """Per row, the inference prompt compared for render parity (None: none)."""
    boundary_prompts: list[str | None] | None = None
    """``after_prompt``: the prompt whose tokens are not supervised, where it is
    not the row's inference prompt (None entries: the inference prompt)."""
    prompt_add_special_tokens: bool = False
    """Whether prompts are encoded with the tokenizer's special tokens (text)."""


@dataclass(frozen=True)
class Settings:
    """The tokenizer facts and limits every row is measured against."""

    stop_ids: frozenset[int]
    pad_id: int | None
    """The id a padding-masking collator masks (the eos when the tokenizer has no pad)."""
    bos_id: int | None
    split_ids: frozenset[int]
    max_seq_length: int | None = None
    truncation_mode: TruncationMode = "keep_start"


@dataclass(frozen=True)
class TrainTokens:
    """One sampled example's training sequence (and its prompt's text), for the HTML page."""

    text: str
    ids: list[int]
    offsets: list[tuple[int, int]]
    supervised: list[bool]
    kept: list[bool]
    prompt: str | None
    prompt_add_special_tokens: bool


@dataclass
class RowFigures:
    """One value per example of a split."""

    total: np.ndarray
    supervised: np.ndarray
    kept_supervised: np.ndarray
    runs: np.ndarray
    unclosed_runs: np.ndarray
    unclosed_id: np.ndarray
    """The last token of the row's first run that no stop token closes (-1: none)."""
    closing_is_pad: np.ndarray
    double_bos: np.ndarray
    eos_lost: np.ndarray
    parity: np.ndarray
    """1: the prompt is a token prefix; 0: it is not; -1: the row has no prompt."""
    divergences: dict[int, PromptMatch] = field(default_factory=dict)
    samples: dict[int, TrainTokens] = field(default_factory=dict)

    @property
    def n(self) -> int:
        """Examples in the split."""
        return int(self.total.size)


def empty_figures(n: int) -> RowFigures:
    def ints() -> np.ndarray:
        return np.zeros(n, np.int64)

    def flags() -> np.ndarray:
        return np.zeros(n, bool)

    return RowFigures(
        total=ints(),
        supervised=ints(),
        kept_supervised=ints(),
        runs=ints(),
        unclosed_runs=ints(),
        unclosed_id=np.full(n, -1, np.int64),
        closing_is_pad=flags(),
        double_bos=flags(),
        eos_lost=flags(),
        parity=np.full(n, -1, np.int8),
    )


def closing_token(
    ids: Sequence[int], encoding: Any, text: str, run: TokenRun, stops: frozenset[int]
) -> int:
    """The run's last supervised token if generation stops on it, else -1.

    Whitespace after the stop token (ChatML's ``\\n`` after ``<|im_end|>``,
    supervised when the loss is on the whole completion) is looked past.
    """
    first, index = run
    while index >= first:
        if ids[index] in stops:
            return index
        chars = encoding.token_to_chars(index)
        if chars is None or not text[chars[0] : chars[1]].isspace():
            return -1
        index -= 1
    return -1


def _kept_range(n: int, settings: Settings) -> tuple[int, int]:
    limit = settings.max_seq_length
    if limit is None or n <= limit:
        return 0, n
    return (0, limit) if settings.truncation_mode == "keep_start" else (n - limit, n)


def _row(
    figures: RowFigures,
    row: int,
    ids: list[int],
    encoding: Any,
    text: str,
    runs: list[TokenRun],
    settings: Settings,
) -> None:
    n = len(ids)
    low, high = _kept_range(n, settings)
    figures.total[row] = n
    figures.runs[row] = len(runs)
    supervised = kept = unclosed = 0
    for run in runs:
        first, last = run
        supervised += last - first + 1
        overlap = min(last, high - 1) - max(first, low) + 1
        kept += max(overlap, 0)
        closing = closing_token(ids, encoding, text, run, settings.stop_ids)
        if closing < 0:
            if not unclosed:
                figures.unclosed_id[row] = ids[last]
            unclosed += 1
            continue
        if settings.pad_id is not None and ids[closing] == settings.pad_id:
            figures.closing_is_pad[row] = True
        if overlap > 0 and not low <= closing < high:
            figures.eos_lost[row] = True
    figures.supervised[row] = supervised
    figures.kept_supervised[row] = kept
    figures.unclosed_runs[row] = unclosed
    bos = settings.bos_id
    figures.double_bos[row] = bos is not None and n >= 2 and ids[0] == bos and ids[1] == bos


def _runs(plan: Plan, row: int, encoding: Any, n: int, boundary: int | None) -> list[TokenRun]:
    if plan.supervision == "spans":
        assert plan.spans is not None
        return span_runs(encoding, plan.spans[row])
    if plan.supervision == "all":
        return [(0, n - 1)] if n else []
    return [(boundary, n - 1)] if boundary is not None and boundary < n else []


def supervised_runs(
    tokenizer: Any, plan: Plan, settings: Settings, encodings: Sequence[Any]
) -> list[list[TokenRun]]:
    """The supervised token runs of each row of an encoded plan: the loss mask, as measured.

    What :func:`measure` counts as supervised for every row, for a caller
    that trains on the rows (``evalkit smoke``) instead of measuring them.
    """
    chunk = _Chunk(plan.texts, list(encodings), [encoding.ids for encoding in encodings])
    matches: list[PromptMatch | None] = [None] * chunk.size
    if plan.supervision == "after_prompt":
        matches = _matches(tokenizer, plan, settings, plan.prompts, chunk)
    boundaries = _boundaries(tokenizer, plan, settings, matches, chunk)
    return [
        _runs(plan, offset, encoding, len(chunk.ids[offset]), boundaries[offset])
        for offset, encoding in enumerate(chunk.encodings)
    ]


Planner = Callable[[int, int], Plan]
"""Rows ``start:stop`` of a split -> their plan (rendering happens here)."""


def measure(
    tokenizer: Any, n: int, planner: Planner, settings: Settings, sample_rows: Sequence[int] = ()
) -> RowFigures:
    """Plan, encode and measure the ``n`` rows; ``sample_rows`` keep their tokens."""
    figures = empty_figures(n)
    sampled = set(sample_rows)
    pending: deque[tuple[int, Plan, Future[list[Any]]]] = deque()
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="evalkit-encode") as pool:
        for start in range(0, n, CHUNK_ROWS):
            plan = planner(start, min(start + CHUNK_ROWS, n))
            encoding = pool.submit(
                encode_batch, tokenizer, plan.texts, add_special_tokens=plan.add_special_tokens
            )
            pending.append((start, plan, encoding))
            if len(pending) > AHEAD:
                _measure_chunk(tokenizer, figures, *pending.popleft(), settings, sampled)
        while pending:
            _measure_chunk(tokenizer, figures, *pending.popleft(), settings, sampled)
    return figures


def _measure_chunk(
    tokenizer: Any,
    figures: RowFigures,
    start: int,
    plan: Plan,
    encoded: Future[list[Any]],
    settings: Settings,
    sampled: set[int],
) -> None:
    encodings = encoded.result()
    ids = [encoding.ids for encoding in encodings]
    chunk = _Chunk(plan.texts, encodings, ids)
    matches = _matches(tokenizer, plan, settings, plan.prompts, chunk)
    boundaries = _boundaries(tokenizer, plan, settings, matches, chunk)
    for offset, encoding in enumerate(encodings):
        row = start + offset
        runs = _runs(plan, offset, encoding, len(ids[offset]), boundaries[offset])
        _row(figures, row, ids[offset], encoding, plan.texts[offset], runs, settings)
        match = matches[offset]
        if match is not None:
            figures.parity[row] = 1 if match.divergence is None else 0
            if match.divergence is not None:
                figures.divergences[row] = match
        if row in sampled:
            prompt = plan.prompts[offset] if plan.prompts is not None else None
            figures.samples[row] = _train_tokens(
                plan, offset, ids[offset], encoding, runs, settings, prompt
            )


@dataclass(frozen=True)
class _Chunk:
    """A plan's rows, encoded."""

    texts: list[str]
    encodings: list[Any]
    ids: list[list[int]]

    @property
    def size(self) -> int:
        return len(self.texts)


def _matches(
    tokenizer: Any,
    plan: Plan,
    settings: Settings,
    prompts: list[str | None] | None,
    chunk: _Chunk,
) -> list[PromptMatch | None]:
    if prompts is None:
        return [None] * chunk.size
    return prompt_matches(
        tokenizer,
        prompts,
        chunk.texts,
        chunk.encodings,
        chunk.ids,
        splits=settings.split_ids,
        add_special_tokens=plan.prompt_add_special_tokens,
        shortcut=not plan.add_special_tokens,
    )


def _boundaries(
    tokenizer: Any,
    plan: Plan,
    settings: Settings,
    matches: list[PromptMatch | None],
    chunk: _Chunk,
) -> list[int | None]:
    """``after_prompt``: how many leading tokens of each row are its prompt's."""
    if plan.supervision != "after_prompt":
        return [None] * chunk.size
    lengths = [match.length if match is not None else None for match in matches]
    own = plan.boundary_prompts
    if own is not None and any(prompt is not None for prompt in own):
        extra = _matches(tokenizer, plan, settings, own, chunk)
        lengths = [
            other.length if other is not None else length
            for other, length in zip(extra, lengths, strict=True)
        ]
    return lengths


def _train_tokens(
    plan: Plan,
    offset: int,
    ids: list[int],
    encoding: Any,
    runs: list[TokenRun],
    settings: Settings,
    prompt: str | None,
) -> TrainTokens:
    n = len(ids)
    supervised = [False] * n
    for first, last in runs:
        for index in range(first, last + 1):
            supervised[index] = True
    low, high = _kept_range(n, settings)
    kept = [low <= index < high for index in range(n)]
    return TrainTokens(
        text=plan.texts[offset],
        ids=list(ids),
        offsets=list(encoding.offsets),
        supervised=supervised,
        kept=kept,
        prompt=prompt,
        prompt_add_special_tokens=plan.prompt_add_special_tokens,
    )
