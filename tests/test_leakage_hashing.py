"""Normalisation, shingles, MinHash and exact Jaccard: each against a direct computation."""

from __future__ import annotations

import math
import random
import unicodedata

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binomtest

from evalkit.leakage import choose_lsh, normalize_text, normalize_texts
from evalkit.leakage.candidates import buckets_of, cross_class_pairs, decode_pairs
from evalkit.leakage.jaccard import JaccardChecker
from evalkit.leakage.minhash import (
    band_keys,
    estimate_similarity,
    minhash_signatures,
    miss_probability,
)
from evalkit.leakage.shingles import shingle_text_reference, shingle_texts


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("Refund  my\tORDER\n", "refund my order"),
        ("  leading and trailing  ", "leading and trailing"),
        ("Ｆｕｌｌ－ｗｉｄｔｈ", "full-width"),  # NFKC folds full-width forms
        ("\ufb01le \u2460", "file 1"),  # ligature fi, circled digit one
        ("non\u00a0breaking\u2003space", "non breaking space"),
        ("ÉCOLE", "école"),
        ("e\u0301cole", "école"),  # combining accent composes under NFKC
        ("", None),
        (" \t\n ", None),
        (None, None),
    ],
)
def test_normalize_text(raw: str | None, expected: str | None) -> None:
    assert normalize_text(raw) == expected


_ALPHABET = st.sampled_from(list("abcXYZ é\u00c9\t\n\u00a0\u3000\uff21\ufb01.,1"))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(_ALPHABET, max_size=30), min_size=1, max_size=20))
def test_normalize_matches_python_reference(texts: list[str]) -> None:
    def reference(text: str) -> str | None:
        folded = " ".join(unicodedata.normalize("NFKC", text).lower().split())
        return folded or None

    assert normalize_texts(texts).to_list() == [reference(text) for text in texts]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(_ALPHABET, max_size=30), min_size=1, max_size=20))
def test_normalize_is_idempotent(texts: list[str]) -> None:
    once = normalize_texts(texts)
    assert normalize_texts(once).to_list() == once.to_list()


@pytest.mark.parametrize("size", [1, 2, 3, 5])
def test_shingle_hashes_match_the_reference(size: int) -> None:
    rng = random.Random(size)
    texts = [" ".join(rng.choice("abcdefg") for _ in range(rng.randint(1, 9))) for _ in range(500)]
    shingles = shingle_texts(pl.Series(texts), size)
    for index, text in enumerate(texts):
        got = shingles.hashes[shingles.starts[index] : shingles.starts[index + 1]].tolist()
        assert got == shingle_text_reference(text, size), text


def test_shingle_hash_depends_on_words_not_position_or_neighbours() -> None:
    shingles = shingle_texts(pl.Series(["x a b c", "a b c y z", "c b a"]), 3)
    first, second, third = (
        set(shingles.hashes[shingles.starts[i] : shingles.starts[i + 1]].tolist()) for i in range(3)
    )
    assert len(first & second) == 1  # "a b c" in both
    assert not third & (first | second)  # order matters


def test_choose_lsh_picks_the_most_rows_within_the_miss_budget() -> None:
    for threshold in (0.5, 0.7, 0.8, 0.9, 0.95):
        params = choose_lsh(threshold)
        assert params.bands * params.rows <= params.num_perm
        assert params.false_negative_rate <= 1e-3
        direct = (1 - threshold**params.rows) ** params.bands
        assert params.false_negative_rate == pytest.approx(direct)
        more = params.rows + 1
        assert miss_probability(threshold, params.num_perm // more, more) > 1e-3
    assert (choose_lsh(0.8).bands, choose_lsh(0.8).rows) == (25, 5)
    assert choose_lsh(1.0).false_negative_rate == 0.0
    with pytest.raises(ValueError):
        choose_lsh(0.0)


def _word_set_pair(n: int, shared: int, rng: random.Random) -> tuple[str, str, float]:
    """Two texts of n distinct words sharing ``shared`` of them (1-shingles: J is exact)."""
    words = [f"w{rng.randrange(10**9)}" for _ in range(2 * n)]
    left = words[:n]
    right = left[:shared] + words[n : 2 * n - shared]
    return " ".join(left), " ".join(right), shared / (2 * n - shared)


def test_minhash_estimate_is_unbiased_against_exact_jaccard() -> None:
    rng = random.Random(7)
    pairs = [_word_set_pair(60, rng.randint(0, 60), rng) for _ in range(400)]
    texts = pl.Series([text for pair in pairs for text in pair[:2]])
    signatures = minhash_signatures(shingle_texts(texts, 1), 128, seed=3)
    left, right = np.arange(0, 800, 2), np.arange(1, 800, 2)
    estimate = estimate_similarity(signatures, left, right)
    exact = np.array([pair[2] for pair in pairs])
    error = estimate - exact
    # Each estimate is a Binomial(128, J)/128 draw: unbiased, with known spread.
    assert abs(error.mean()) < 0.006
    sigma = np.sqrt(exact * (1 - exact) / 128)
    assert np.all(np.abs(error) <= 4.5 * sigma + 1e-9)
    assert error.std() == pytest.approx(np.sqrt(np.mean(sigma**2)), rel=0.2)


def test_band_collision_rate_follows_the_s_curve() -> None:
    rng = random.Random(11)
    params = choose_lsh(0.8)
    for shared, n_pairs in ((40, 300), (50, 300), (56, 300)):
        pairs = [_word_set_pair(60, shared, rng) for _ in range(n_pairs)]
        similarity = pairs[0][2]
        texts = pl.Series([text for pair in pairs for text in pair[:2]])
        signatures = minhash_signatures(shingle_texts(texts, 1), params.num_perm, seed=5)
        hit = np.zeros(n_pairs, dtype=bool)
        for band in range(params.bands):
            keys = band_keys(signatures, band, params.rows)
            hit |= keys[0::2] == keys[1::2]
        expected = 1 - miss_probability(similarity, params.bands, params.rows)
        assert binomtest(int(hit.sum()), n_pairs, expected).pvalue > 1e-3, similarity


def test_exact_jaccard_matches_python_sets() -> None:
    rng = random.Random(5)
    texts = [" ".join(rng.choice("abcdef") for _ in range(rng.randint(1, 12))) for _ in range(80)]
    shingles = shingle_texts(pl.Series(texts), 2)
    checker = JaccardChecker(shingles, np.arange(len(texts)))
    left = np.array([rng.randrange(80) for _ in range(400)])
    right = np.array([rng.randrange(80) for _ in range(400)])

    def grams(text: str) -> set[tuple[str, ...]]:
        words = text.split(" ")
        return {tuple(words[i : i + 2]) for i in range(max(len(words) - 1, 1))}

    expected = [
        len(grams(texts[a]) & grams(texts[b])) / len(grams(texts[a]) | grams(texts[b]))
        for a, b in zip(left, right, strict=True)
    ]
    assert checker.similarity(left, right) == pytest.approx(expected, abs=1e-12)


def test_cross_class_pairs_skip_pairs_inside_one_split() -> None:
    keys = np.array([5, 1, 5, 5, 2, 1, 9, 5], dtype=np.uint64)
    masks = np.array([1, 1, 2, 1, 1, 3, 1, 2])  # bit masks of the splits of each text
    low, high = decode_pairs(cross_class_pairs(buckets_of(keys), masks, 8), 8)
    assert sorted(zip(low.tolist(), high.tolist(), strict=True)) == [
        (0, 2),
        (0, 7),
        (1, 5),
        (2, 3),
        (3, 7),
    ]
    both = np.array([3, 3, 3, 3, 3, 3, 3, 3])  # every text in two splits: all pairs count
    low, high = decode_pairs(cross_class_pairs(buckets_of(keys), both, 8), 8)
    assert len(low) == math.comb(4, 2) + 1
