"""Bounds on what ``audit`` does with the counts it is given and with a huge cluster.

- ``--opening-words`` is bounded before anything is read (100000 was exit 3 from
  the regex engine, 1000000000 a MemoryError).
- ``--within`` lists at most ``LIMIT`` pairs per split and list, chosen by the
  documented order (checked against a brute force at the real limit), and says
  which splits had more.
- One template repeated 20,000 times (exact copies, and 20,000 variants of it)
  completes under a 4 GiB address-space limit (it aborted in Rust's allocator,
  or asked numpy for 17.9 GiB).
"""

from __future__ import annotations

import itertools
import json
import random
import resource
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import polars as pl
import pytest

from evalkit import audit
from evalkit.errors import ParameterError
from evalkit.leakage.distributed.session import RayOptions
from evalkit.records._audit import DuplicatePair

THRESHOLD = 0.8
LIMIT = 100_000  # pairs per split and list: the bound docs/security.md states
WORDS = [f"word{i}" for i in range(3000)]


def _text(rng: random.Random, head: str, n: int) -> str:
    return " ".join([head, *(rng.choice(WORDS) for _ in range(n))])


def shingles(text: str) -> set[str]:
    words = text.split(" ")
    return {" ".join(words[i : i + 3]) for i in range(len(words) - 2)}


def planted() -> dict[str, list[tuple[str, str]]]:
    """(id, normalised text) per split; train has more than LIMIT pairs of each kind.

    Exact: 'alpha' x5 (10 pairs), then 'bravo' x452 (101,926 pairs: cut inside it),
    then 'charlie' x3 (never reached). Near: 460 variants of one 60-word template
    (J = 55/61 between any two: 105,570 pairs of texts), the first variants given
    two and three times, so that a pair of texts is several pairs of items.
    """
    rng = random.Random(17)
    items: dict[str, list[str]] = {"train": [], "val": []}
    for head, copies in (("alpha", 5), ("bravo", 452), ("charlie", 3)):
        text = _text(rng, head, 30)
        items["train"] += [text] * copies
    template = _text(rng, "delta", 59).split(" ")
    for k in range(460):
        words = list(template)
        words[30] = f"slot{k}"
        items["train"] += [" ".join(words)] * (3 if k == 1 else 2 if k == 3 else 1)
    items["train"] += [_text(rng, "echo", 25) for _ in range(50)]
    items["val"] += [_text(rng, "foxtrot", 25) for _ in range(30)]
    items["val"] += [items["val"][0], items["val"][1]]
    result = {}
    for split, texts in items.items():
        order = list(range(len(texts)))
        rng.shuffle(order)  # ids in another order than the texts
        result[split] = [(f"{split[0]}{order[i]:05d}", text) for i, text in enumerate(texts)]
    return result


def expected(
    splits: dict[str, list[tuple[str, str]]],
) -> tuple[dict[str, set], dict[str, set], dict[str, list[str]]]:
    """The listed exact and near pairs per split, and the truncated splits, pair by pair."""
    rank = {text: r for r, text in enumerate(sorted({t for s in splits.values() for _, t in s}))}
    exact, near, cut = {}, {}, {"exact": [], "near": []}
    for split, items in splits.items():
        by_text: dict[str, list[str]] = {}
        for item_id, text in items:
            by_text.setdefault(text, []).append(item_id)
        texts = sorted(by_text, key=rank.__getitem__)
        exact_keys = [
            ((rank[t], a, b), (a, b))
            for t in texts
            for a, b in itertools.combinations(sorted(by_text[t]), 2)
        ]
        sets = {t: shingles(t) for t in texts}
        near_keys = []
        for first, second in itertools.combinations(texts, 2):  # first < second by rank
            a_set, b_set = sets[first], sets[second]
            if len(a_set & b_set) / len(a_set | b_set) < THRESHOLD:
                continue
            for i, a in enumerate(sorted(by_text[first])):
                for j, b in enumerate(sorted(by_text[second])):
                    near_keys.append(((rank[first], rank[second], i, j), tuple(sorted((a, b)))))
        for kind, keys, into in (("exact", exact_keys, exact), ("near", near_keys, near)):
            keys.sort()
            into[split] = {pair for _, pair in keys[:LIMIT]}
            if len(keys) > LIMIT:
                cut[kind].append(split)
    return exact, near, cut


def listed(pairs: Sequence[DuplicatePair] | None, split: str) -> set[tuple[str, str]]:
    return {(pair.a, pair.b) for pair in pairs or [] if pair.a_split == split}


@pytest.fixture(scope="module")
def splits() -> dict[str, list[tuple[str, str]]]:
    return planted()


@pytest.mark.slow
def test_within_lists_the_first_pairs_up_to_the_limit(
    splits: dict[str, list[tuple[str, str]]],
) -> None:
    frames = {
        name: pl.DataFrame({"id": [i for i, _ in items], "text": [t for _, t in items]})
        for name, items in splits.items()
    }
    report = audit(frames, id_column="id", text="text", within=True)
    exact, near, cut = expected(splits)
    assert len(exact["train"]) == len(near["train"]) == LIMIT and cut == {
        "exact": ["train"],
        "near": ["train"],
    }
    assert report.within_pairs_limit == LIMIT
    assert report.within_truncated == cut
    for split in splits:
        listed_exact = {
            (p.a, p.b) for p in report.within_exact_duplicates or [] if p.a_split == split
        }
        listed_near = {
            (p.a, p.b) for p in report.within_near_duplicates or [] if p.a_split == split
        }
        assert listed_exact == exact[split], split
        assert listed_near == near[split], split
    # The clusters count every item, listed or not.
    train = report.within["train"]
    assert [c.size for c in train.clusters[:2]] == [463, 452]  # variants (with copies), bravo
    assert train.n_clusters == 4 and report.within["val"].in_exact_clusters == 4
    # Without --within: no listing, no limit named.
    plain = audit(frames, id_column="id", text="text")
    assert plain.within_pairs_limit is None and plain.within_truncated is None
    assert plain.within == report.within


CAP_BYTES = 4 << 30  # the fixed code needs about 3 GiB of address space here; main, 7 to 18


def _capped() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (CAP_BYTES, CAP_BYTES))


def _env() -> dict[str, str]:
    """A plain environment with few threads: their stacks count against the limit too."""
    return {"PATH": "/usr/bin:/bin", "POLARS_MAX_THREADS": "2"}


@pytest.mark.parametrize("words", [0, 101, 100_000, 10**9])
def test_opening_words_is_bounded_before_work_starts(tmp_path: Path, words: int) -> None:
    """100000 was exit 3 (the regex outgrew its engine), 10**9 a MemoryError (a 6 GB
    pattern): under a 4 GiB address-space limit, so that an unbounded build fails small."""
    files = []
    for name in ("train", "test"):
        files.append(tmp_path / f"{name}.jsonl")
        files[-1].write_text(json.dumps({"id": name, "text": "a b c d e f"}) + "\n")
    command = [sys.executable, "-m", "evalkit", "audit", *map(str, files), "--id", "id",
               "--text", "text", "--opening-words", str(words)]  # fmt: skip
    done = subprocess.run(command, env=_env(), preexec_fn=_capped, capture_output=True,
                          text=True, timeout=300)  # fmt: skip
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr[-2000:]
    assert "--opening-words" in lines[0] and "must be 1 to 100 words" in lines[0], lines
    if words <= 100_000:  # in this process too, for the library's error
        with pytest.raises(ParameterError, match="opening_words must be 1 to 100 words"):
            audit(files, id_column="id", text="text", opening_words=words)


def test_the_largest_opening_is_counted(tmp_path: Path) -> None:
    text = " ".join(f"w{i}" for i in range(120))
    frames = {
        "train": pl.DataFrame({"id": ["a", "b", "c"], "text": [text, text + " x", "short"]}),
        "test": pl.DataFrame({"id": ["d"], "text": ["other"]}),
    }
    report = audit(frames, id_column="id", text="text", opening_words=100)
    assert [(o.text, o.n) for o in report.within["train"].openings] == [
        (" ".join(text.split()[:100]), 2)
    ]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("partitions", 10**9),
        ("partitions", 1),
        ("bands_per_round", 0),
        ("bands_per_round", 10**6),
        ("block_bytes", 10),
        ("block_bytes", 1 << 40),
        ("num_cpus", 0),
        ("num_cpus", 10**7),
        ("partitions", "3"),
    ],
)
def test_ray_options_are_bounded(field: str, value: object) -> None:
    with pytest.raises(ParameterError, match=f"ray.{field}"):
        RayOptions(**{field: value})  # type: ignore[arg-type]


@pytest.mark.slow
def test_a_template_repeated_twenty_thousand_times_fits_in_4_gib(tmp_path: Path) -> None:
    """Exact copies aborted in Rust's allocator (a join of 200M pairs); variants asked
    numpy for 17.9 GiB of candidate pairs."""
    rng = random.Random(3)
    copy, template = _text(rng, "hello", 40), _text(rng, "hi", 40).split(" ")
    copies, variants = tmp_path / "copies.jsonl", tmp_path / "variants.jsonl"
    copies.write_text(
        "".join(json.dumps({"id": f"c{i}", "text": copy}) + "\n" for i in range(20_000))
    )
    lines = []
    for i in range(20_000):
        words = list(template)
        words[5] = f"slot{i}"
        lines.append(json.dumps({"id": f"v{i}", "text": " ".join(words)}) + "\n")
    variants.write_text("".join(lines))
    out = tmp_path / "audit.json"
    command = [sys.executable, "-m", "evalkit", "audit", copies, variants, "--id", "id",
               "--text", "text", "--within", "-q", "--json", out]  # fmt: skip
    done = subprocess.run(
        [str(part) for part in command], env=_env(), preexec_fn=_capped, capture_output=True,
        text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]  # two templates: no leak
    report = json.loads(out.read_text())
    assert report["within_truncated"] == {"exact": ["copies"], "near": ["variants"]}
    assert len(report["within_exact_duplicates"]) == len(report["within_near_duplicates"]) == LIMIT
    assert report["within"]["copies"]["clusters"] == [{"size": 20_000, "example_id": "c0"}]
    assert report["within"]["variants"]["clusters"][0]["size"] == 20_000
