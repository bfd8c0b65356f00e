"""Repetition within each split (audit's ``within``, the manifest's too) against brute force.

The planted set has, per split, exact copies (case and spacing changed),
near copies (one word changed), a chain (a ~ b ~ c with a and c further
apart), a template repeated with a changing order number (more variants
than a bucket is checked pair by pair, so the pivot path runs), copies in
another split (a leak, not repetition), empty texts and shared openings.
The brute force compares every pair of items of a split with Python sets of
word 3-shingles and joins them with a union-find.
"""

from __future__ import annotations

import json
import random
import unicodedata
from collections import Counter
from collections.abc import Callable
from itertools import combinations
from pathlib import Path

import polars as pl
import pytest
from conftest import CliResult, assert_one_line_error

from evalkit import audit

THRESHOLD = 0.8
OPENING_WORDS = 5
WORDS = [f"word{i}" for i in range(3000)]


def _text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def _change(text: str, position: int, word: str) -> str:
    words = text.split(" ")
    words[position] = word
    return " ".join(words)


def planted() -> dict[str, list[tuple[str, str | None]]]:
    """(id, text) per split."""
    rng = random.Random(5)
    splits: dict[str, list[tuple[str, str | None]]] = {"train": [], "val": [], "test": []}
    number = 0

    def add(split: str, text: str | None) -> None:
        nonlocal number
        number += 1
        splits[split].append((f"I{number:04d}", text))

    for split, size in (("train", 150), ("val", 40), ("test", 40)):
        for _ in range(size):
            add(split, _text(rng, rng.randint(8, 40)))
        for _ in range(4):  # exact copies, as a person retypes them
            base = _text(rng, 30)
            add(split, base)
            add(split, "  " + base.upper().replace(" ", "\t ") + " ")
        for _ in range(3):  # near copies: one word of 40 changed (J = 34/40)
            base = _text(rng, 40)
            add(split, base)
            add(split, _change(base, 20, "changed"))
        base = _text(rng, 40)  # a chain: a ~ b ~ c, a and c two words apart
        add(split, base)
        add(split, _change(base, 10, "first"))
        add(split, _change(_change(base, 10, "first"), 30, "second"))
        add(split, None)
        add(split, "   ")
        for _ in range(6):  # a shared opening with different rest
            add(split, "hello, this is about my " + _text(rng, 20))
    template = "your automated order status request for order {} was received " + _text(rng, 32)
    for k in range(90):  # one template, 90 variants: more than a bucket checked pairwise
        add("train", template.format(f"ORD-{k:06d}"))
    leak = _text(rng, 30)
    add("val", leak)
    add("test", leak)  # a copy in another split: a leak, not repetition in either
    return splits


def normalize(text: str | None) -> str | None:
    if text is None:
        return None
    value = " ".join(unicodedata.normalize("NFKC", text).lower().split())
    return value or None


def shingles(text: str) -> set[str]:
    words = text.split(" ")
    if len(words) < 3:
        return {text}
    return {" ".join(words[i : i + 3]) for i in range(len(words) - 2)}


def brute_force(items: list[tuple[str, str | None]]) -> tuple[dict, set, set]:
    """(the within record, exact pairs, near pairs) of one split, pair by pair."""
    texts = [normalize(text) for _, text in items]
    ids = [item_id for item_id, _ in items]
    parent = list(range(len(items)))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    exact_pairs, near_pairs = set(), set()
    sets = [shingles(t) if t else set() for t in texts]
    for i, j in combinations(range(len(items)), 2):
        if texts[i] is None or texts[j] is None:
            continue
        pair = tuple(sorted((ids[i], ids[j])))
        if texts[i] == texts[j]:
            exact_pairs.add(pair)
        elif len(sets[i] & sets[j]) / len(sets[i] | sets[j]) >= THRESHOLD:
            near_pairs.add(pair)
        else:
            continue
        parent[find(i)] = find(j)
    counts = Counter(t for t in texts if t is not None)
    in_exact = sum(1 for t in texts if t is not None and counts[t] > 1)
    members: dict[int, list[str]] = {}
    for index, text in enumerate(texts):
        if text is not None:
            members.setdefault(find(index), []).append(ids[index])
    clusters = sorted(
        ((len(m), min(m)) for m in members.values() if len(m) > 1), key=lambda c: (-c[0], c[1])
    )
    in_near = sum(size for size, _ in clusters)
    openings = Counter(
        " ".join(t.split(" ")[:OPENING_WORDS])
        for t in texts
        if t is not None and len(t.split(" ")) >= OPENING_WORDS
    )
    top = sorted(((n, o) for o, n in openings.items() if n > 1), key=lambda x: (-x[0], x[1]))
    n = len(items)
    record = {
        "n": n,
        "exact_share": in_exact / n,
        "near_share": in_near / n,
        "in_exact_clusters": in_exact,
        "in_near_clusters": in_near,
        "n_clusters": len(clusters),
        "clusters": [{"size": s, "example_id": e} for s, e in clusters[:10]],
        "openings": [{"text": o, "n": c} for c, o in top[:5]],
    }
    return record, exact_pairs, near_pairs


@pytest.fixture(scope="module")
def frames() -> dict[str, pl.DataFrame]:
    return {
        split: pl.DataFrame(
            {"id": [i for i, _ in items], "text": [t for _, t in items]},
            schema={"id": pl.String, "text": pl.String},
        )
        for split, items in planted().items()
    }


def test_within_counts_equal_the_brute_force(frames: dict[str, pl.DataFrame]) -> None:
    report = audit(frames, id_column="id", text="text", within=True)
    seen_near = 0
    for split, items in planted().items():
        record, exact_pairs, near_pairs = brute_force(items)
        assert report.within[split].model_dump() == record, split
        listed_exact = {
            (p.a, p.b) for p in report.within_exact_duplicates or [] if p.a_split == split
        }
        listed_near = {
            (p.a, p.b) for p in report.within_near_duplicates or [] if p.a_split == split
        }
        assert listed_exact == exact_pairs, split
        assert listed_near == near_pairs, split
        seen_near += len(near_pairs)
    # The planted set exercises what it means to: the template's large cluster, chains, pairs.
    train = report.within["train"]
    assert train.clusters[0].size == 90
    assert seen_near > 4000
    assert all(p.a < p.b and p.a_split == p.b_split for p in report.within_near_duplicates or [])
    # A copy in another split is a leak, never repetition.
    assert report.counts.exact_duplicates == 1
    assert report.within["val"].in_exact_clusters == report.within["test"].in_exact_clusters == 8


def test_without_within_no_pairs_are_listed(frames: dict[str, pl.DataFrame]) -> None:
    report = audit(frames, id_column="id", text="text")
    assert report.within_exact_duplicates is None and report.within_near_duplicates is None
    listed = audit(frames, id_column="id", text="text", within=True)
    assert report.within == listed.within  # the counts do not depend on listing the pairs


def test_exact_only_reports_exact_repetition(frames: dict[str, pl.DataFrame]) -> None:
    report = audit(frames, id_column="id", text="text", near_dup=None, within=True)
    for split, items in planted().items():
        record, exact_pairs, _ = brute_force(items)
        within = report.within[split]
        assert within.near_share is None and within.in_near_clusters is None
        assert within.exact_share == record["exact_share"]
        assert within.openings == report.within[split].openings
        assert {(p.a, p.b) for p in report.within_exact_duplicates or [] if p.a_split == split} == (
            exact_pairs
        )
    assert report.within_near_duplicates is None


def test_the_split_manifest_records_the_same_repetition(
    tmp_path: Path, run_cli: Callable[..., CliResult]
) -> None:
    rows = [
        {"id": item_id, "text": text, "group": item_id}
        for items in planted().values()
        for item_id, text in items
    ]
    source = tmp_path / "items.jsonl"
    pl.DataFrame(rows).write_ndjson(source)
    out = tmp_path / "split"
    made = run_cli(
        "split", source, "--out", out, "--group", "group", "--id", "id", "--text", "text",
        "--ratios", "0.7,0.15,0.15", "--near-dup", "0.8", "--null-group", "singleton",
    )  # fmt: skip
    assert made.exit_code == 0, made.stderr
    assert "repetition in train:" in made.stdout
    manifest = json.loads((out / "manifest.json").read_text())
    report = audit([out], id_column="id", text="text")
    for split in ("train", "val", "test"):
        assert manifest["within"][split] == report.within[split].model_dump()
        items = pl.read_parquet(out / f"{split}.parquet").select("id", "text").rows()
        assert manifest["within"][split] == brute_force(items)[0]
    assert max(c["size"] for s in manifest["within"].values() for c in s["clusters"]) == 90


def test_the_audit_prints_and_writes_the_repetition(
    frames: dict[str, pl.DataFrame], tmp_path: Path, run_cli: Callable[..., CliResult]
) -> None:
    files = []
    for split, frame in frames.items():
        frame.write_parquet(tmp_path / f"{split}.parquet")
        files.append(tmp_path / f"{split}.parquet")
    json_path = tmp_path / "audit.json"
    done = run_cli("audit", *files, "--id", "id", "--text", "text", "--within", "--json", json_path)
    assert done.exit_code == 1, done.stderr  # the planted cross-split copy is a leak
    assert "repetition within each split (not a leak):" in done.stdout
    assert '"hello, this is about my" x6' in done.stdout
    data = json.loads(json_path.read_text())
    assert set(data["within"]) == {"train", "val", "test"}
    assert data["options"]["within"] is True
    assert len(data["within_near_duplicates"]) > 4000


def test_within_needs_the_text_column(tmp_path: Path, run_cli: Callable[..., CliResult]) -> None:
    for split in ("train", "test"):
        pl.DataFrame({"id": ["a", "b"], "body": ["x y", "y z"]}).write_parquet(
            tmp_path / f"{split}.parquet"
        )
    refused = run_cli(
        "audit", tmp_path / "train.parquet", tmp_path / "test.parquet", "--id", "id",
        "--text", "text", "--within",
    )  # fmt: skip
    assert_one_line_error(refused, "train.parquet", "'text'")


def test_conversations_compare_the_chosen_roles(tmp_path: Path) -> None:
    """A shared system prompt makes no repetition; the user turns decide (evalkit.chat reads)."""
    rng = random.Random(9)
    system = "You are a helpful triage assistant. " + _text(rng, 300)
    frames = {}
    for split, size in (("train", 30), ("test", 10)):
        rows = []
        for index in range(size):
            user = _text(rng, 30)
            if split == "train" and index < 4:
                user = "please resend the invoice for my last order " + "thanks " * 25
            messages = [
                {"role": "system", "content": system},
                {"role": "user", "content": user},
                {"role": "assistant", "content": "billing"},
            ]
            rows.append({"id": f"{split}{index:02d}", "messages": messages})
        frames[split] = pl.DataFrame(rows)
    default = audit(frames, id_column="id", text="messages")
    assert default.within["train"].in_near_clusters == 4  # the four repeated user turns
    assert default.within["test"].in_near_clusters == 0
    with_system = audit(frames, id_column="id", text="messages", roles="system,user")
    assert with_system.within["train"].near_share == 1.0  # the shared prompt dominates
    assert with_system.within["train"].openings[0].text == "you are a helpful triage"
