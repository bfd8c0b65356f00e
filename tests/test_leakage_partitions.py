"""The Ray engine's partition functions, checked directly against the local engine.

No Ray here: each function is what one task computes, run on hand-made
partitions of texts whose local-engine answer is computed beside it. Cutting
the work into partitions must give the local engine's codes, buckets, pivot
links, similarities and ranks exactly.
"""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from evalkit.leakage.candidates import (
    all_pairs,
    buckets_of,
    cross_class_pairs,
    distinct_buckets,
    sorted_unique,
)
from evalkit.leakage.clusters import distinct_texts
from evalkit.leakage.distributed import checks
from evalkit.leakage.distributed import partitions as part
from evalkit.leakage.distributed.blocks import block_bytes_of, plan_blocks
from evalkit.leakage.distributed.tasks import requests_by_partition
from evalkit.leakage.inputs import SplitSource
from evalkit.leakage.jaccard import JaccardChecker
from evalkit.leakage.minhash import band_keys, choose_lsh, minhash_signatures
from evalkit.leakage.normalize import normalize_texts
from evalkit.leakage.search import FULL_CHECK_BUCKET, _connecting_pairs
from evalkit.leakage.shingles import shingle_texts

PARAMS = choose_lsh(0.7, seed=3)


def corpus(seed: int = 0) -> pl.Series:
    """Distinct sorted texts: random ones, one-word variants, and a template repeated
    150 times with one word changed (a bucket larger than FULL_CHECK_BUCKET)."""
    rng = random.Random(seed)
    vocabulary = [f"w{i}" for i in range(300)]
    base = [" ".join(rng.choices(vocabulary, k=rng.randint(12, 30))) for _ in range(400)]
    texts = list(base)
    for text in base[:80]:
        words = text.split()
        words[rng.randrange(len(words))] = "changed"
        texts.append(" ".join(words))
    template = " ".join(rng.choices(vocabulary, k=40)).split()
    for number in range(150):
        words = list(template)
        words[rng.randrange(len(words))] = f"slot{number}"
        texts.append(" ".join(words))
    distinct, _, _ = distinct_texts(normalize_texts(pl.Series(texts)))
    return distinct


@pytest.fixture(scope="module")
def indexed() -> tuple[pl.Series, object, np.ndarray, np.ndarray]:
    texts = corpus()
    shingles = shingle_texts(texts, PARAMS.shingle_size)
    signatures = minhash_signatures(shingles, PARAMS.num_perm, PARAMS.seed)
    masks = np.random.default_rng(1).choice([1, 2, 4, 3], size=len(texts)).astype(np.int64)
    return texts, shingles, signatures, masks


def partitioned_records(signatures: np.ndarray, masks: np.ndarray, cuts: list[int], parts: int):
    """Band records of all bands from text partitions cut at ``cuts``, gathered per part."""
    bounds = [0, *cuts, len(signatures)]
    gathered: list[list[part.BandRecords]] = [[] for _ in range(parts)]
    for start, stop in itertools.pairwise(bounds):
        pieces = part.band_records(
            signatures[start:stop], start, masks[start:stop], range(PARAMS.bands), PARAMS.rows,
            parts,
        )  # fmt: skip
        for k, piece in enumerate(pieces):
            gathered[k].append(piece)
    return [part.BandRecords.concat(pieces) for pieces in gathered]


def local_band_buckets(signatures: np.ndarray):
    return [buckets_of(band_keys(signatures, b, PARAMS.rows)) for b in range(PARAMS.bands)]


def bucket_sets(buckets) -> set[tuple[int, ...]]:
    return {
        tuple(buckets.members[a:b].tolist())
        for a, b in zip(buckets.starts[:-1], buckets.starts[1:], strict=True)
    }


def test_band_partitions_form_the_local_engines_buckets(indexed) -> None:
    _, _, signatures, masks = indexed
    expected = set().union(*(bucket_sets(b) for b in local_band_buckets(signatures)))
    found: set[tuple[int, ...]] = set()
    for records in partitioned_records(signatures, masks, [100, 333], parts=3):
        found |= bucket_sets(part.band_buckets(records))
    assert found == expected
    assert any(len(bucket) > FULL_CHECK_BUCKET for bucket in found)  # the template


def test_cross_split_codes_are_the_local_candidates(indexed) -> None:
    texts, _, signatures, masks = indexed
    n = len(texts)
    local = distinct_buckets(local_band_buckets(signatures))
    expected = cross_class_pairs(local, masks, n)
    found = [
        part.cross_split_codes(part.band_buckets(records), records, n)
        for records in partitioned_records(signatures, masks, [250], parts=4)
    ]
    assert np.array_equal(sorted_unique(np.concatenate(found)), expected)
    assert len(expected) > 100


def test_small_bucket_codes_and_pivots_give_the_local_links(indexed) -> None:
    texts, shingles, signatures, masks = indexed
    n = len(texts)
    local = distinct_buckets(local_band_buckets(signatures))
    checker = JaccardChecker(shingles, local.members)
    left, right, _, _ = _connecting_pairs(local, checker, PARAMS, n, progress_off())
    expected = set(zip(left.tolist(), right.tolist(), strict=True))
    subset = checks.extract(shingles, signatures, 0, sorted_unique(local.members))
    subset_checker = checks.SubsetChecker(subset)
    links: set[tuple[int, int]] = set()
    for records in partitioned_records(signatures, masks, [200], parts=2):
        buckets = part.band_buckets(records)
        codes = sorted_unique(part.small_bucket_codes(buckets, n))
        scope = np.full(len(codes), -1, dtype=np.int64)
        checked = checks.check_codes(scope, codes, n, subset_checker, PARAMS.threshold)
        links |= set(zip(checked.left.tolist(), checked.right.tolist(), strict=True))
        pivot_left, pivot_right, _ = checks.pivot_links(
            part.large_buckets(buckets), subset_checker, PARAMS.threshold
        )
        links |= set(zip(pivot_left.tolist(), pivot_right.tolist(), strict=True))
    assert links == expected
    assert len(expected) > 150


def test_the_check_of_a_fetched_subset_equals_the_local_check(indexed) -> None:
    texts, shingles, signatures, _ = indexed
    n = len(texts)
    rng = np.random.default_rng(2)
    left = rng.integers(0, n - 1, 500)
    right = np.minimum(left + rng.integers(1, 40, 500), n - 1)
    keep = left < right
    codes = sorted_unique(left[keep] * n + right[keep])
    ranks = sorted_unique(np.concatenate([codes // n, codes % n]))
    first_ranks = np.array([0, 170, 390, n])
    pieces = requests_by_partition(ranks, first_ranks)
    subsets = []
    for k, wanted in enumerate(pieces):
        lo, hi = int(first_ranks[k]), int(first_ranks[k + 1])
        starts = shingles.starts[lo : hi + 1] - shingles.starts[lo]
        local = type(shingles)(shingles.hashes[shingles.starts[lo] : shingles.starts[hi]], starts)
        subsets.append(checks.extract(local, signatures[lo:hi], lo, wanted))
    checker = checks.SubsetChecker(checks.TextSubset.concat(subsets, PARAMS.num_perm))
    checked = checks.check_codes(np.zeros(len(codes), dtype=np.int64), codes, n, checker, 0.0)
    reference = JaccardChecker(shingles, np.arange(n))
    a, b = codes // n, codes % n
    assert np.allclose(checked.similarity, reference.similarity(a, b), rtol=0, atol=1e-12)
    agree = (signatures[a] == signatures[b]).mean(axis=1)
    assert np.array_equal(checked.estimate, agree)
    assert checked.candidates == {0: len(codes)}


def test_range_partitions_rank_texts_as_the_local_sort() -> None:
    texts = pl.Series(["b", "a", "é", "Z", "a b", "zz", "b", "ab", "", "ä", "a"])
    boundaries = part.range_boundaries(texts.sample(6, seed=1), 3)
    where = part.range_part(texts, boundaries)
    ranked: list[str] = []
    for k in range(3):
        ranked += texts.filter(pl.Series(where == k)).unique().sort().to_list()
    assert ranked == texts.unique().sort().to_list()
    # equal texts always land in one partition, whatever the boundaries
    assert len(set(where[texts.to_numpy() == "a"].tolist())) == 1


def test_hash_partitions_keep_every_key_together() -> None:
    ids = pl.Series([f"id{i % 37}" for i in range(500)])
    where = part.hash_part(ids, 5)
    for value in ids.unique():
        assert len(set(where[(ids == value).to_numpy()].tolist())) == 1
    assert len(set(where.tolist())) == 5
    pieces = part.split_by_part(ids.to_frame("id"), where, 5)
    assert sum(piece.height for piece in pieces) == 500


def test_byte_range_blocks_read_every_line_once(tmp_path: Path) -> None:
    lines = [f'{{"id": "{i}", "text": "{"x" * (i % 13)}"}}\n'.encode() for i in range(200)]
    path = tmp_path / "train.jsonl"
    path.write_bytes(b"".join(lines) + b"\n")  # a blank last line too
    for size in (1, 7, 40, 333):
        blocks = plan_blocks([SplitSource("train", path)], size)
        assert len(blocks) > 1
        pieces = [block_bytes_of(path, b.start or 0, b.end or 0) for b in blocks]
        assert b"".join(pieces) == path.read_bytes()
        assert all(piece.endswith(b"\n") for piece in pieces if piece)
    assert plan_blocks([SplitSource("train", path)], 10**6) == [
        plan_blocks([SplitSource("train", path)], 10**6)[0]
    ]
    assert plan_blocks([SplitSource("train", path)], 10**6)[0].start is None


def progress_off():
    from evalkit.leakage.progress import Progress

    return Progress(False)


def test_all_pairs_of_small_buckets_match_a_direct_enumeration() -> None:
    records = part.BandRecords(
        band=np.array([0, 0, 0, 1, 1, 0]),
        key=np.array([5, 5, 5, 5, 5, 9], dtype=np.uint64),
        rank=np.array([7, 2, 4, 2, 9, 1]),
        mask=np.zeros(6, dtype=np.int64),
    )
    buckets = part.band_buckets(records)
    assert bucket_sets(buckets) == {(2, 4, 7), (2, 9)}
    codes = part.small_bucket_codes(buckets, 10)
    assert sorted_unique(codes).tolist() == sorted([24, 27, 47, 29])
    assert np.array_equal(sorted_unique(codes), all_pairs(buckets, 10))


def test_string_hashes_follow_their_specification() -> None:
    """A polynomial over the UTF-8 bytes and SplitMix64, whatever polars or Python does."""
    mask = (1 << 64) - 1

    def mix(value: int) -> int:
        value ^= value >> 30
        value = (value * 0xBF58476D1CE4E5B9) & mask
        value ^= value >> 27
        value = (value * 0x94D049BB133111EB) & mask
        return value ^ (value >> 31)

    def reference(text: str) -> int:
        data = text.encode("utf-8")
        total = sum((byte + 1) * pow(0x100000001B3, i, 1 << 64) for i, byte in enumerate(data))
        return mix((total + len(data) * 0x9E3779B97F4A7C15) & mask)

    texts = ["T00001", "", "é ü 日本", "x" * 300, "conversation 7"]
    series = pl.Series([None, *texts])
    assert part.string_hashes(series).tolist() == [0, *[reference(t) for t in texts]]
    assert part.string_hashes(series.slice(3, 2)).tolist() == [reference(t) for t in texts[2:4]]
