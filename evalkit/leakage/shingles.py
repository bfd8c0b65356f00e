"""Word shingles of normalised texts, as 64-bit hashes, computed column-wise.

A text of n words has the n - k + 1 shingles "w_i … w_{i+k-1}" (k = shingle
size); a text of fewer than k words has one shingle, itself. Every word is
hashed with BLAKE2b (8 bytes) of its UTF-8 bytes, so a shingle's hash depends
on its words alone: not on the row order, the rest of the data, the machine or
the polars version. polars' own (fast, but version-dependent) hash serves only
as a key to find each distinct word once, so BLAKE2b runs once per word of the
vocabulary, not once per occurrence.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
import polars as pl

UInt64Array = np.ndarray  # numpy arrays of uint64, named for readability
GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_FOLD_BLOCK = 1 << 16  # words per block of the fold: 512 KB of uint64


def splitmix64(values: np.ndarray) -> np.ndarray:
    """The SplitMix64 finaliser: a fast, well-mixing bijection on uint64 (a new array)."""
    mixed = values ^ (values >> np.uint64(30))
    mixed *= np.uint64(0xBF58476D1CE4E5B9)
    mixed ^= mixed >> np.uint64(27)
    mixed *= np.uint64(0x94D049BB133111EB)
    mixed ^= mixed >> np.uint64(31)
    return mixed


def word_hash(word: str) -> int:
    """The 64-bit hash of one word (BLAKE2b, little-endian): the base of every shingle hash."""
    return int.from_bytes(hashlib.blake2b(word.encode("utf-8"), digest_size=8).digest(), "little")


@dataclass(frozen=True)
class Shingles:
    """The shingle hashes of n texts: text t owns ``hashes[starts[t]:starts[t + 1]]``.

    Every text has at least one shingle (empty texts are never shingled), and a
    text's hashes may repeat (a repeated phrase); set semantics are applied
    where they matter (MinHash ignores repeats, the Jaccard check removes them).
    """

    hashes: np.ndarray  # uint64, all texts concatenated
    starts: np.ndarray  # int64, n + 1 offsets into ``hashes``

    @property
    def n_texts(self) -> int:
        """Number of texts."""
        return len(self.starts) - 1

    def counts(self) -> np.ndarray:
        """Shingles per text (with repeats)."""
        return np.diff(self.starts)


def _word_hashes(words: pl.Series) -> np.ndarray:
    """Stable hash of every word in ``words`` (one BLAKE2b call per distinct word)."""
    import pyarrow.compute as pc

    # polars hands its string views over without a copy, and pyarrow encodes them
    # faster than the large strings of the default export (0.25 s for 5M words, not 0.5).
    encoded = pc.dictionary_encode(words.to_arrow(compat_level=pl.CompatLevel.newest()))
    vocabulary = encoded.dictionary.to_pylist()
    stable = np.fromiter(
        (word_hash(word) for word in vocabulary), dtype=np.uint64, count=len(vocabulary)
    )
    # Through polars: pyarrow's own to_numpy imports pandas (~0.35 s of CPU) to do it.
    return stable[pl.Series(encoded.indices).to_numpy()]


def _mix_in_place(values: np.ndarray) -> None:
    """SplitMix64 finaliser applied in place (saves the temporaries of :func:`splitmix64`)."""
    values ^= values >> np.uint64(30)
    values *= np.uint64(0xBF58476D1CE4E5B9)
    values ^= values >> np.uint64(27)
    values *= np.uint64(0x94D049BB133111EB)
    values ^= values >> np.uint64(31)


def _fold_windows(flat: np.ndarray, size: int) -> np.ndarray:
    """Fold the next size-1 words into every position (position i of the result is the
    hash of the window of words i … i+size-1, where that window exists).

    Windows that run past their text's end are computed too (contiguous arrays
    beat gathers) and dropped by the caller; texts shorter than a window are
    redone exactly after. Done in blocks that stay in the core's cache through
    the seven passes of each fold (one pass over all words at a time went to
    memory and back each pass).
    """
    combined = np.empty_like(flat)
    total = len(flat)
    for first in range(0, total, _FOLD_BLOCK):
        end = min(first + _FOLD_BLOCK, total)
        value = flat[first:end].copy()
        for offset in range(1, size):
            stop = min(end, total - offset)  # positions that have a word offset ahead
            if stop <= first:
                break
            head = value[: stop - first]
            head *= GOLDEN
            head += flat[first + offset : stop + offset]
            _mix_in_place(head)
        combined[first:end] = value
    return combined


def shingle_texts(normalized: pl.Series, size: int) -> Shingles:
    """Shingle hashes of normalised, non-empty texts (words are separated by one space)."""
    if size < 1:
        raise ValueError(f"shingle size must be at least 1, got {size}")
    if normalized.null_count() or (normalized.str.len_bytes() == 0).any():
        raise ValueError("shingle_texts needs non-empty, normalised texts")
    words = normalized.str.split(" ")
    n_words = words.list.len().to_numpy().astype(np.int64)
    flat = _word_hashes(words.explode())
    first_word = np.zeros(len(n_words) + 1, dtype=np.int64)
    np.cumsum(n_words, out=first_word[1:])
    combined = _fold_windows(flat, size)
    # A window starts at every word but the last size-1 of its text.
    window_end = np.ones(len(flat), dtype=bool)
    for back in range(1, size):
        last = first_word[1:] - back
        window_end[last[last >= first_word[:-1]]] = False
    short = np.flatnonzero(n_words < size)
    window_end[first_word[short]] = True
    hashes = combined[window_end]
    per_text = np.maximum(n_words - size + 1, 1)
    starts = np.zeros(len(n_words) + 1, dtype=np.int64)
    np.cumsum(per_text, out=starts[1:])
    if len(short):
        hashes[starts[short]] = _short_text_hashes(flat, first_word[short], n_words[short])
    return Shingles(hashes=hashes, starts=starts)


def _short_text_hashes(flat: np.ndarray, first: np.ndarray, n_words: np.ndarray) -> np.ndarray:
    """The one shingle of each text with fewer words than the shingle size: all its words."""
    value = flat[first].copy()
    for offset in range(1, int(n_words.max())):
        inside = offset < n_words
        folded = value[inside] * GOLDEN + flat[first[inside] + offset]
        _mix_in_place(folded)
        value[inside] = folded
    return value


def shingle_text_reference(text: str, size: int) -> list[int]:
    """Pure-Python shingle hashes of one normalised text: the specification, for tests."""
    mask = (1 << 64) - 1

    def mix(value: int) -> int:
        value ^= value >> 30
        value = (value * 0xBF58476D1CE4E5B9) & mask
        value ^= value >> 27
        value = (value * 0x94D049BB133111EB) & mask
        return value ^ (value >> 31)

    hashes = [word_hash(word) for word in text.split(" ")]
    windows = [hashes[i : i + size] for i in range(max(len(hashes) - size + 1, 1))]
    out = []
    for window in windows:
        value = window[0]
        for following in window[1:]:
            value = mix((value * int(GOLDEN) + following) & mask)
        out.append(value)
    return out
