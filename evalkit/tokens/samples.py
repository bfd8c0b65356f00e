"""A seeded handful of examples per split, token by token, for a person to read.

Statistics say how often something is wrong; a person believes it when they
see one example: the render with its special tokens, each token with its
id, the supervised ones marked, and the inference prompt beside it with the
first token where the two part.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from evalkit.tokens.encode import encode_batch
from evalkit.tokens.figures import RowFigures
from evalkit.tokens.parity import compare


@dataclass(frozen=True)
class ShownToken:
    """One token as the page shows it."""

    id: int
    text: str
    special: bool
    supervised: bool
    kept: bool


@dataclass(frozen=True)
class Sample:
    """One example: its training tokens and its inference prompt's."""

    split: str
    id: str
    train: list[ShownToken]
    prompt: list[ShownToken] | None
    """None when the example has no prompt (one text column)."""
    divergence: int | None
    """First position where the prompt's ids leave the training ids (None: a prefix)."""


def sample_rows(n: int, size: int, seed: int, split_index: int) -> list[int]:
    """``size`` rows of ``n`` (all when fewer), the same for the same seed and split position."""
    if size <= 0 or n == 0:
        return []
    rng = np.random.default_rng([seed, split_index])
    return sorted(int(row) for row in rng.choice(n, size=min(size, n), replace=False))


def _special_ids(tokenizer: Any) -> set[int]:
    ids = {int(i) for i, added in tokenizer.added_tokens_decoder.items() if added.special}
    return ids | {int(i) for i in tokenizer.all_special_ids}


def _pieces(tokenizer: Any, text: str, ids: Sequence[int], offsets: Sequence[Any]) -> list[str]:
    """Each token's text: its characters in ``text``, or its vocabulary string when it has none."""
    pieces = []
    for token_id, (start, end) in zip(ids, offsets, strict=True):
        piece = text[start:end] if end > start else ""
        pieces.append(piece or str(tokenizer.convert_ids_to_tokens(int(token_id))))
    return pieces


def build_samples(
    tokenizer: Any, split: str, ids: Sequence[str], figures: RowFigures
) -> list[Sample]:
    """The sampled rows of one split (those whose tokens ``figures`` kept)."""
    rows = sorted(figures.samples)
    special = _special_ids(tokenizer)
    samples = []
    for row in rows:
        kept = figures.samples[row]
        pieces = _pieces(tokenizer, kept.text, kept.ids, kept.offsets)
        train = [
            ShownToken(token_id, piece, token_id in special, supervised, in_limit)
            for token_id, piece, supervised, in_limit in zip(
                kept.ids, pieces, kept.supervised, kept.kept, strict=True
            )
        ]
        prompt, divergence = None, None
        if kept.prompt is not None:
            (encoding,) = encode_batch(
                tokenizer, [kept.prompt], add_special_tokens=kept.prompt_add_special_tokens
            )
            prompt_pieces = _pieces(tokenizer, kept.prompt, encoding.ids, encoding.offsets)
            prompt = [
                ShownToken(token_id, piece, token_id in special, False, True)
                for token_id, piece in zip(encoding.ids, prompt_pieces, strict=True)
            ]
            divergence = compare(encoding.ids, kept.ids).divergence
        samples.append(Sample(split, ids[row], train, prompt, divergence))
    return samples
