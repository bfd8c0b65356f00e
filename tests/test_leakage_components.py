"""``duplicate_components``: the clusters ``evalkit split --near-dup`` merges into groups."""

from __future__ import annotations

import random

import numpy as np
import polars as pl
import pytest

from evalkit.leakage import duplicate_components


def clusters(labels: np.ndarray, texts: list[str | None]) -> set[frozenset[str | None]]:
    """The clusters as sets of (unique) texts, which do not depend on row positions."""
    members: dict[int, set[str | None]] = {}
    for label, text in zip(labels.tolist(), texts, strict=True):
        members.setdefault(label, set()).add(text)
    return {frozenset(group) for group in members.values()}


def shingle_set(text: str, size: int = 3) -> set[tuple[str, ...]]:
    tokens = " ".join(text.lower().split()).split(" ")
    return {tuple(tokens[i : i + size]) for i in range(max(len(tokens) - size + 1, 1))}


def brute_force_clusters(texts: list[str | None], threshold: float) -> set[frozenset[str | None]]:
    """Union-find over every pair, by the Jaccard similarity computed with Python sets."""
    parent = list(range(len(texts)))

    def find(i: int) -> int:
        while parent[i] != i:
            i = parent[i]
        return i

    sets = [shingle_set(t) if t and t.strip() else None for t in texts]
    for i, a in enumerate(sets):
        for j in range(i + 1, len(sets)):
            b = sets[j]
            if a is not None and b is not None and len(a & b) >= threshold * len(a | b):
                parent[find(j)] = find(i)
    return clusters(np.array([find(i) for i in range(len(texts))]), texts)


def words(rng: random.Random, n: int) -> list[str]:
    return [f"w{rng.randrange(5000)}" for _ in range(n)]


def test_exact_near_and_chained_duplicates_share_a_label() -> None:
    base = "please refund the order that arrived broken last tuesday morning thanks"
    texts = [
        base,  # 0
        "  PLEASE refund the ORDER that arrived broken last tuesday morning thanks ",  # 1: exact
        base.replace("thanks", "regards"),  # 2: one word changed, J = 9/11
        base.replace("thanks", "regards").replace("please", "kindly"),  # 3: near 2, not 0
        "something entirely different about a login problem on the website today",  # 4
        None,  # 5
        "",  # 6
        "   ",  # 7
        None,  # 8
    ]
    labels = duplicate_components(texts, 0.8)
    assert labels.dtype == np.int64
    assert labels.tolist() == [0, 0, 0, 0, 4, 5, 6, 7, 8]


def test_accepts_a_polars_series_and_labels_are_first_positions() -> None:
    series = pl.Series("text", ["b c d e f", "x y z", "B C D E F"])
    assert duplicate_components(series, 0.9).tolist() == [0, 1, 0]
    assert duplicate_components(pl.Series([None, None], dtype=pl.Null), 0.5).tolist() == [0, 1]
    assert duplicate_components([], 0.8).tolist() == []


def test_threshold_edges_are_inclusive() -> None:
    # 6 distinct words -> 4 shingles; one more word -> 5 shingles, 4 shared: J = 4/5 exactly.
    short, longer = "a b c d e f", "a b c d e f g"
    assert duplicate_components([short, longer], 0.8).tolist() == [0, 0]
    assert duplicate_components([short, longer], 0.81).tolist() == [0, 1]
    assert duplicate_components([short, longer], 1.0).tolist() == [0, 1]
    # Texts shorter than a shingle are one shingle: equal after normalisation or nothing.
    assert duplicate_components(["hi there", "hi you"], 0.1).tolist() == [0, 1]
    assert duplicate_components(["Hi  there", "hi there"], 1.0).tolist() == [0, 0]


def test_clusters_do_not_depend_on_row_order() -> None:
    rng = random.Random(3)
    bases = [words(rng, rng.randint(20, 60)) for _ in range(150)]
    texts: list[str | None] = [" ".join(base) for base in bases]
    for base in bases[:60]:  # near copies: one word replaced
        changed = list(base)
        changed[rng.randrange(len(changed))] = "CHANGED"
        texts.append(" ".join(changed))
    texts += [None, "", None]
    reference = clusters(duplicate_components(texts, 0.8, seed=1), texts)
    assert reference == brute_force_clusters(texts, 0.8)
    assert sum(len(c) == 2 for c in reference) >= 40
    for shuffle_seed in range(3):
        order = list(range(len(texts)))
        random.Random(shuffle_seed).shuffle(order)
        shuffled = [texts[i] for i in order]
        labels = duplicate_components(shuffled, 0.8, seed=1)
        assert clusters(labels, shuffled) == reference
        # The label is the position of the cluster's first row.
        for position, label in enumerate(labels.tolist()):
            assert label <= position
            assert labels[label] == label


def test_same_seed_same_labels() -> None:
    rng = random.Random(9)
    texts = [" ".join(words(rng, 30)) for _ in range(300)]
    first = duplicate_components(texts, 0.5, seed=4)
    assert np.array_equal(first, duplicate_components(texts, 0.5, seed=4))


def test_large_buckets_of_templated_text_are_linked_and_kept_apart() -> None:
    # Two templates, 300 near-identical texts each: buckets far beyond the pairwise limit.
    rng = random.Random(2)
    template_a = " ".join(words(rng, 40))
    template_b = " ".join(words(rng, 40))
    texts = [f"{template_a} order {n}" for n in range(300)]
    texts += [f"{template_b} ticket {n}" for n in range(300)]
    labels = duplicate_components(texts, 0.8)
    assert set(labels[:300].tolist()) == {0}
    assert set(labels[300:].tolist()) == {300}


def test_progress_is_silent_when_stderr_is_not_a_terminal(
    capsys: pytest.CaptureFixture[str],
) -> None:
    duplicate_components(["a b c d", "a b c d e"], 0.5, progress=True)
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""


def test_threshold_out_of_range_is_refused() -> None:
    with pytest.raises(ValueError, match="threshold"):
        duplicate_components(["a"], 0.0)
    with pytest.raises(ValueError, match="threshold"):
        duplicate_components(["a"], 1.5)


def test_progress_bars_on_a_terminal(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import sys

    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    duplicate_components(["a b c d", "a b c d e", "x y z"], 0.5, progress=True)
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "hashing texts" in captured.err and "checking candidate pairs" in captured.err


def test_union_find_numbers_components_as_scipy_does() -> None:
    """``within.components`` replaced scipy's ``connected_components``: same numbering
    (by each component's smallest node), on random graphs with loops and repeated edges."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    from evalkit.leakage.within import components

    rng = np.random.default_rng(7)
    for _ in range(300):
        n = int(rng.integers(1, 80))
        m = int(rng.integers(0, 120))
        left, right = rng.integers(0, n, m), rng.integers(0, n, m)
        graph = coo_matrix((np.ones(m, dtype=np.int8), (left, right)), shape=(n, n))
        expected = connected_components(graph, directed=False)[1]
        assert components(n, left, right).tolist() == expected.tolist()
    path = np.arange(999)
    assert components(1000, path[::-1] + 1, path[::-1]).tolist() == [0] * 1000
    assert components(0, path[:0], path[:0]).tolist() == []


def test_buckets_list_their_members_in_ascending_order() -> None:
    """``buckets_of`` sorts unstably, then orders each bucket: the buckets a stable sort gives."""
    from evalkit.leakage.candidates import buckets_of

    rng = np.random.default_rng(3)
    for _ in range(300):
        n = int(rng.integers(0, 200))
        keys = rng.integers(0, int(rng.integers(1, 300)), n).astype(np.uint64)
        order = np.argsort(keys, kind="stable")
        runs = np.split(order, np.flatnonzero(np.diff(keys[order])) + 1) if n else []
        expected = [run.tolist() for run in runs if len(run) >= 2]
        buckets = buckets_of(keys)
        got = [
            buckets.members[start:end].tolist()
            for start, end in zip(buckets.starts[:-1], buckets.starts[1:], strict=True)
        ]
        assert got == expected
