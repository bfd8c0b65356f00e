"""Acceptance: a long shared system prompt and planted near-duplicate user turns.

Every conversation starts with the same 400-word system prompt; user turns are
40 words drawn at random from a 5,000-word vocabulary (so unplanted pairs share
next to nothing), assistant turns a short JSON answer. Planted: 60 user turns
copied into another group with one word replaced (a near duplicate by the
definition, which the test checks with Python sets). The audit must find at
least 95% of the planted pairs that cross splits and no other pair, in the
messages and the ShareGPT shape; ``split --near-dup 0.8`` must keep every
planted pair in one split and still hit its counts.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from evalkit import audit, split

N_GROUPS, N_PLANTED = 240, 60
SYSTEM = " ".join(f"policy{i}" for i in range(400))
VOCABULARY = [f"w{i}" for i in range(5000)]
ANSWERS = [json.dumps({"category": c}) for c in ("billing", "shipping", "account", "returns")]


def shingles(text: str) -> set[tuple[str, ...]]:
    words = text.lower().split()
    return {tuple(words[i : i + 3]) for i in range(len(words) - 2)}


def jaccard(a: str, b: str) -> float:
    left, right = shingles(a), shingles(b)
    return len(left & right) / len(left | right)


def make_items(seed: int = 5) -> tuple[list[dict[str, Any]], list[tuple[str, str]]]:
    """Items (id, group, user, assistant) and the planted (source id, copy id) pairs."""
    rng = np.random.default_rng(seed)
    items: list[dict[str, Any]] = []
    for group in range(N_GROUPS):
        for _ in range(int(rng.integers(1, 4))):
            items.append(
                {
                    "id": f"i{len(items):04d}",
                    "group": f"g{group:03d}",
                    "user": " ".join(rng.choice(VOCABULARY, size=40)),
                    "assistant": ANSWERS[int(rng.integers(len(ANSWERS)))],
                }
            )
    sources = rng.choice(len(items), size=N_PLANTED, replace=False)
    planted = []
    for number, source in enumerate(sources):
        original = items[int(source)]
        words = original["user"].split()
        words[20] = f"changed{number}"  # one word: 3 of 38 shingles differ
        copy = {
            "id": f"p{number:03d}",
            "group": f"copy{number:03d}",  # a group of its own: only the text links them
            "user": " ".join(words),
            "assistant": original["assistant"],
        }
        items.append(copy)
        planted.append((original["id"], copy["id"]))
    return items, planted


def as_record(item: dict[str, Any], shape: str) -> dict[str, Any]:
    turns = [("system", SYSTEM), ("user", item["user"]), ("assistant", item["assistant"])]
    if shape == "sharegpt":
        names = {"system": "system", "user": "human", "assistant": "gpt"}
        chat = [{"from": names[role], "value": text} for role, text in turns]
        return {"id": item["id"], "group": item["group"], "conversations": chat}
    chat = [{"role": role, "content": text} for role, text in turns]
    return {"id": item["id"], "group": item["group"], "messages": chat}


def write(path: Path, items: list[dict[str, Any]], shape: str) -> Path:
    lines = "".join(json.dumps(as_record(item, shape)) + "\n" for item in items)
    path.write_text(lines, encoding="utf-8")
    return path


COLUMN = {"messages": "messages", "sharegpt": "conversations"}


def test_planted_pairs_are_near_duplicates_by_definition() -> None:
    items, planted = make_items()
    by_id = {item["id"]: item for item in items}
    compared = {key: f"{item['user']}\n{item['assistant']}" for key, item in by_id.items()}
    assert all(jaccard(compared[a], compared[b]) >= 0.8 for a, b in planted)
    # while the system prompt, were it compared, would make unrelated items look alike
    a, b = items[0], items[1]
    with_system = [f"{SYSTEM}\n{item['user']}" for item in (a, b)]
    assert jaccard(*with_system) >= 0.8 > jaccard(a["user"], b["user"])


@pytest.mark.parametrize("shape", ["messages", "sharegpt"])
def test_audit_finds_the_planted_pairs_and_nothing_else(tmp_path: Path, shape: str) -> None:
    items, planted = make_items()
    copies = {copy for _, copy in planted}
    # Sources and unrelated items in train; copies in test (so every planted pair crosses).
    train = write(tmp_path / "train.jsonl", [i for i in items if i["id"] not in copies], shape)
    test = write(tmp_path / "test.jsonl", [i for i in items if i["id"] in copies], shape)
    report = audit([train, test], id_column="id", text=COLUMN[shape], group=["group"])
    found = {(p.a, p.b) for p in [*report.near_duplicates, *report.exact_duplicates]}
    assert found <= set(planted), sorted(found - set(planted))[:5]
    assert len(found) >= 0.95 * len(planted)
    assert report.splits["train"].shape == shape
    # the counterfactual: comparing the shared system prompt floods the report
    flooded = audit([train, test], id_column="id", text=COLUMN[shape],
                    roles=["system", "user"], near_dup=0.8)  # fmt: skip
    assert len(flooded.near_duplicates) > 10 * len(planted)


@pytest.mark.parametrize("shape", ["messages", "sharegpt"])
def test_split_near_dup_keeps_planted_pairs_together(tmp_path: Path, shape: str) -> None:
    items, planted = make_items()
    data = write(tmp_path / "all.jsonl", items, shape)
    n = len(items)
    sizes = [n - 2 * (n // 5), n // 5, n // 5]
    result = split(data, group=["group"], id_column="id", text=COLUMN[shape], near_dup=0.8,
                   sizes=sizes, seed=3)  # fmt: skip
    split_of = dict(
        zip(result.assignments["id"].to_list(), result.assignments["split"].to_list(), strict=True)
    )
    assert all(split_of[a] == split_of[b] for a, b in planted)
    assert result.manifest.quality.max_count_deviation == 0
    assert result.manifest.merging is not None
    assert result.manifest.merging.merged_groups >= 0.95 * N_PLANTED
    # without the duplicate merge, the same seed puts planted pairs in two splits
    plain = split(data, group=["group"], id_column="id", text=COLUMN[shape], sizes=sizes, seed=3)
    plain_split = dict(
        zip(plain.assignments["id"].to_list(), plain.assignments["split"].to_list(), strict=True)
    )
    assert any(plain_split[a] != plain_split[b] for a, b in planted)
