"""``evalkit.audit`` and ``evalkit audit`` on planted leaks, edge cases and bad input."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pytest
from conftest import CliResult, assert_one_line_error

from evalkit import audit

RunCli = Callable[..., CliResult]


def shingle_set(text: str) -> set[tuple[str, ...]]:
    tokens = " ".join(text.lower().split()).split(" ")
    return {tuple(tokens[i : i + 3]) for i in range(max(len(tokens) - 2, 1))}


def planted(seed: int = 0, n_base: int = 1200, n_near: int = 120, n_exact: int = 120):
    """Texts of 50-70 words with planted near pairs (one word changed) and exact copies
    (differing only in case and spacing), in conversations, split 70/30 by row at random."""
    rng = random.Random(seed)
    vocabulary = [f"word{i}" for i in range(3000)]
    rows, pairs = [], []

    def add(text: str, conversation: str) -> str:
        item = f"T{len(rows):05d}"
        rows.append(
            {
                "ticket_id": item,
                "conversation_id": conversation,
                "text": text,
                "category": rng.choice(["billing", "shipping", "account"]),
            }
        )
        return item

    bases = [" ".join(rng.choices(vocabulary, k=rng.randint(50, 70))) for _ in range(n_base)]
    for index, text in enumerate(bases):
        add(text, f"C{index // 3:04d}")  # conversations of three items
    for index in rng.sample(range(n_base), n_near + n_exact):
        words = bases[index].split(" ")
        if len(pairs) < n_near:
            position = rng.randrange(len(words))
            words[position] = "replaced"
            copy = " ".join(words)
        else:
            copy = "  ".join(word.upper() if rng.random() < 0.5 else word for word in words)
        copy_id = add(copy, f"X{len(pairs):04d}")
        pairs.append((f"T{index:05d}", copy_id))
    frame = pl.DataFrame(rows)
    in_test = [rng.random() < 0.3 for _ in range(frame.height)]
    frame = frame.with_columns(pl.Series("in_test", in_test))
    train = frame.filter(~pl.col("in_test")).drop("in_test")
    test = frame.filter(pl.col("in_test")).drop("in_test")
    return train, test, pairs


def test_planted_pairs_and_conversations_are_found() -> None:
    train, test, pairs = planted()
    report = audit(
        {"train": train, "test": test},
        id_column="ticket_id",
        text="text",
        group=["conversation_id"],
        near_dup=0.8,
    )
    split_of = {i: "train" for i in train["ticket_id"]} | {i: "test" for i in test["ticket_id"]}
    crossing = {frozenset(pair) for pair in pairs if split_of[pair[0]] != split_of[pair[1]]}
    assert len(crossing) > 50
    found = {frozenset((p.a, p.b)) for p in [*report.exact_duplicates, *report.near_duplicates]}
    assert len(found & crossing) >= 0.95 * len(crossing)
    assert len(found - crossing) <= 2  # random 50-70 word texts share almost nothing
    # Exact copies are reported as exact, one-word changes as near (with J >= 0.8).
    exact = {frozenset((p.a, p.b)) for p in report.exact_duplicates}
    exact_planted = {frozenset(pair) for pair in pairs[120:]} & crossing
    assert exact == exact_planted
    for near in report.near_duplicates:
        assert near.a_split == "train" and near.b_split == "test"
        texts = dict(zip(train["ticket_id"], train["text"], strict=True))
        texts |= dict(zip(test["ticket_id"], test["text"], strict=True))
        a, b = shingle_set(texts[near.a]), shingle_set(texts[near.b])
        assert near.similarity == pytest.approx(len(a & b) / len(a | b))
        assert near.similarity >= 0.8
        assert abs(near.estimate - near.similarity) < 0.2
    # Conversations in both splits: exactly those computed directly.
    spans = (
        train.select("conversation_id")
        .unique()
        .join(test.select("conversation_id").unique(), on="conversation_id")
    )
    assert {leak.group for leak in report.group_leaks} == set(spans["conversation_id"])
    assert report.leak and report.counts.group_leaks == spans.height


def test_near_pairs_equal_brute_force_on_a_small_set() -> None:
    rng = random.Random(4)
    vocabulary = [f"v{i}" for i in range(40)]  # a small vocabulary: many partial overlaps
    texts = [" ".join(rng.choices(vocabulary, k=rng.randint(8, 14))) for _ in range(120)]
    for index in range(0, 120, 4):
        texts.append(texts[index] + " extra")
    frame = pl.DataFrame({"id": [f"i{n}" for n in range(len(texts))], "text": texts})
    left, right = frame[::2], frame[1::2]
    report = audit({"left": left, "right": right}, id_column="id", text="text", near_dup=0.6)
    expected = set()
    for a, ta in left.iter_rows():
        for b, tb in right.iter_rows():
            sa, sb = shingle_set(ta), shingle_set(tb)
            normal_a, normal_b = " ".join(ta.lower().split()), " ".join(tb.lower().split())
            if normal_a != normal_b and len(sa & sb) >= 0.6 * len(sa | sb):
                expected.add((a, b))
    assert expected
    assert {(p.a, p.b) for p in report.near_duplicates} == expected


def test_normalisation_makes_exact_duplicates() -> None:
    train = pl.DataFrame({"id": [1, 2], "text": ["Where is MY parcel?", "ｆｕｌｌ width"]})
    test = pl.DataFrame({"id": [3, 4], "text": ["where  is my\tparcel?", "full\u00a0WIDTH "]})
    report = audit({"train": train, "test": test}, id_column="id", text="text")
    assert [(p.a, p.b) for p in report.exact_duplicates] == [("1", "3"), ("2", "4")]
    assert report.near_duplicates == []


def test_empty_texts_are_never_duplicates() -> None:
    train = pl.DataFrame({"id": ["a", "b", "c"], "text": ["", None, "  "]})
    test = pl.DataFrame({"id": ["d", "e"], "text": ["", None]})
    report = audit({"train": train, "test": test}, id_column="id", text="text")
    assert not report.leak
    assert report.splits["train"].empty_texts == 3
    assert report.splits["test"].empty_texts == 2


def test_a_group_spanning_three_files(tmp_path: Path) -> None:
    pl.DataFrame({"id": ["a1", "a2"], "conv": ["C1", "C2"], "text": ["x one", "y"]}).write_ndjson(
        tmp_path / "train.jsonl"
    )
    pl.DataFrame({"id": [3], "conv": ["C1"], "text": ["x two"]}).write_csv(tmp_path / "val.csv")
    pl.DataFrame(
        {"id": ["a4", "a5"], "conv": ["C1", None], "text": ["x three", "z"]}
    ).write_parquet(tmp_path / "test.parquet")
    report = audit(
        [tmp_path / "train.jsonl", tmp_path / "val.csv", tmp_path / "test.parquet"],
        id_column="id",
        text="text",
        group=["conv"],
    )
    assert [leak.model_dump() for leak in report.group_leaks] == [
        {"group": "C1", "items": {"train": 1, "val": 1, "test": 1}}
    ]
    assert report.splits["test"].n_groups == 1  # a null group key is no group
    assert report.splits["val"].sha256 is not None


def test_composite_group_keys_and_ids_in_several_splits() -> None:
    train = pl.DataFrame({"id": [1, 2], "src": ["a", "a"], "doc": [1, 2], "text": ["p", "q"]})
    test = pl.DataFrame({"id": [2, 3], "src": ["a", "b"], "doc": [1, 2], "text": ["r", "s"]})
    report = audit(
        {"train": train, "test": test}, id_column="id", text="text", group=["src", "doc"]
    )
    assert [leak.group for leak in report.group_leaks] == ['["a", "1"]']
    assert [(o.id, o.splits) for o in report.id_overlaps] == [("2", ["train", "test"])]


def test_class_coverage_is_reported_but_is_no_leak() -> None:
    train = pl.DataFrame({"id": [1, 2, 3], "text": ["a", "b", "c"], "y": ["x", "y", "z"]})
    test = pl.DataFrame({"id": [4], "text": ["d"], "y": ["x"]})
    report = audit({"train": train, "test": test}, id_column="id", text="text", stratify="y")
    assert report.classes == ["x", "y", "z"]
    assert report.splits["test"].class_counts == {"x": 1, "y": 0, "z": 0}
    assert report.splits["test"].missing_classes == ["y", "z"]
    assert not report.leak


def test_report_does_not_depend_on_row_order() -> None:
    train, test, _ = planted(seed=1, n_base=400, n_near=40, n_exact=40)
    first = audit(
        {"train": train, "test": test},
        id_column="ticket_id",
        text="text",
        group=["conversation_id"],
        stratify="category",
    )
    shuffled = audit(
        {
            "train": train.sample(fraction=1.0, shuffle=True, seed=5),
            "test": test.sample(fraction=1.0, shuffle=True, seed=6),
        },
        id_column="ticket_id",
        text="text",
        group=["conversation_id"],
        stratify="category",
    )
    # Only the frames' content hashes differ: the rows are in another order.
    unhashed = {name: {"sha256": None} for name in ("train", "test")}
    assert first.splits["train"].sha256 != shuffled.splits["train"].sha256
    assert first.model_copy(update={"splits": {
        name: split.model_copy(update=unhashed[name]) for name, split in first.splits.items()
    }}).model_dump_json() == shuffled.model_copy(update={"splits": {
        name: split.model_copy(update=unhashed[name]) for name, split in shuffled.splits.items()
    }}).model_dump_json()  # fmt: skip


# --- the command line -------------------------------------------------------------------


@pytest.fixture
def split_files(tmp_path: Path) -> list[Path]:
    train, test, _ = planted(seed=2, n_base=300, n_near=20, n_exact=20)
    train.write_ndjson(tmp_path / "train.jsonl")
    test.write_csv(tmp_path / "test.csv")
    return [tmp_path / "train.jsonl", tmp_path / "test.csv"]


def test_cli_reports_leaks_with_exit_1_and_writes_json(
    run_cli: RunCli, split_files: list[Path], tmp_path: Path
) -> None:
    out = tmp_path / "audit.json"
    result = run_cli(
        "audit",
        *split_files,
        "--id",
        "ticket_id",
        "--text",
        "text",
        "--group",
        "conversation_id",
        "--stratify",
        "category",
        "--json",
        out,
    )
    assert result.exit_code == 1, result.stderr
    assert "LEAK" in result.stdout and "25 bands x 5 rows" in result.stdout
    data = json.loads(out.read_text())
    assert data["leak"] is True and data["format_version"] == 1
    assert data["counts"]["exact_duplicates"] == len(data["exact_duplicates"]) > 0
    assert data["lsh"]["false_negative_rate"] < 1e-3
    again = run_cli("audit", *split_files, "--id", "ticket_id", "--text", "text", "--json", out)
    assert_one_line_error(again, str(out), "--force")
    forced = run_cli(
        "audit",
        *split_files,
        "--id",
        "ticket_id",
        "--text",
        "text",
        "--json",
        out,
        "--force",
        "--quiet",
    )
    assert forced.exit_code == 1 and forced.stdout == f"{out}\n"  # --quiet: the path written


def test_cli_exit_0_without_leak(run_cli: RunCli, tmp_path: Path) -> None:
    pl.DataFrame({"id": [1], "text": ["alpha beta gamma"]}).write_ndjson(tmp_path / "a.jsonl")
    pl.DataFrame({"id": [2], "text": ["delta epsilon"]}).write_ndjson(tmp_path / "b.jsonl")
    result = run_cli(
        "audit", tmp_path / "a.jsonl", tmp_path / "b.jsonl", "--id", "id", "--text", "text"
    )
    assert result.exit_code == 0, result.stderr
    assert "no leak found" in result.stdout


def test_cli_missing_id_column_is_exit_2(run_cli: RunCli, split_files: list[Path]) -> None:
    result = run_cli("audit", *split_files, "--id", "item_id", "--text", "text")
    assert_one_line_error(result, str(split_files[0]), "'item_id'", "ticket_id", "text")


@pytest.mark.parametrize(
    ("arguments", "fragments"),
    [
        (["one"], ["at least two splits"]),
        (["missing"], ["no such file"]),
        (["dup"], ["two splits are named 'train'"]),
        (["folder"], ["without manifest.json"]),
    ],
)
def test_cli_bad_inputs_are_exit_2(
    run_cli: RunCli,
    split_files: list[Path],
    tmp_path: Path,
    arguments: list[str],
    fragments: list[str],
) -> None:
    kind = arguments[0]
    other = tmp_path / "other"
    other.mkdir()
    (other / "train.csv").write_text("ticket_id,text\nZ1,hello\n")
    files = {
        "one": [split_files[0]],
        "missing": [split_files[0], tmp_path / "nope.jsonl"],
        "dup": [split_files[0], other / "train.csv"],
        "folder": [other, split_files[0]],
    }[kind]
    result = run_cli("audit", *files, "--id", "ticket_id", "--text", "text")
    assert_one_line_error(result, *fragments)


def test_cli_reads_a_split_folder(run_cli: RunCli, tmp_path: Path) -> None:
    folder = tmp_path / "split"
    folder.mkdir()
    pl.DataFrame({"id": [1, 2], "text": ["same text here", "x"]}).write_parquet(
        folder / "train.parquet"
    )
    pl.DataFrame({"id": [3], "text": ["Same text  here"]}).write_parquet(folder / "val.parquet")
    pl.DataFrame({"id": [4], "text": ["y"]}).write_parquet(folder / "test.parquet")
    pl.DataFrame({"id": [9], "text": ["z"]}).write_parquet(folder / "assignments.parquet")
    manifest = {"splits": {"train": {}, "val": {}, "test": {}}}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    out = tmp_path / "a.json"
    result = run_cli("audit", folder, "--id", "id", "--text", "text", "--json", out)
    assert result.exit_code == 1, result.stderr
    data = json.loads(out.read_text())
    assert list(data["splits"]) == ["train", "val", "test"]
    assert data["exact_duplicates"] == [{"a": "1", "a_split": "train", "b": "3", "b_split": "val"}]


def test_cli_refuses_a_split_folder_of_a_newer_manifest_format(
    run_cli: RunCli, split_files: list[Path], tmp_path: Path
) -> None:
    """Only the split names are read, but a newer format may name them otherwise."""
    folder = tmp_path / "split"
    folder.mkdir()
    for path in split_files:
        (folder / path.name).write_bytes(path.read_bytes())
    manifest = {"format_version": 2, "splits": {path.stem: {} for path in split_files}}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    result = run_cli("audit", folder, "--id", "ticket_id", "--text", "text")
    assert_one_line_error(
        result, "manifest.json: format_version 2 is newer than this evalkit reads", "upgrade"
    )
    manifest["format_version"] = 1  # the current format reads as before
    (folder / "manifest.json").write_text(json.dumps(manifest))
    assert run_cli("audit", folder, "--id", "ticket_id", "--text", "text").exit_code == 1  # leaks


def test_cli_exact_only_skips_the_near_duplicate_search(
    run_cli: RunCli, split_files: list[Path], tmp_path: Path
) -> None:
    out = tmp_path / "a.json"
    run_cli(
        "audit", *split_files, "--id", "ticket_id", "--text", "text", "--exact-only", "--json", out
    )
    data = json.loads(out.read_text())
    assert data["lsh"] is None and data["near_duplicates"] == []
    assert data["options"]["near_dup"] is None


def test_summary_names_missing_classes_and_says_when_clean() -> None:
    from evalkit.report.audit_summary import render_audit_summary

    train = pl.DataFrame({"id": [1, 2], "text": ["alpha beta", "gamma"], "y": ["x", "y"]})
    test = pl.DataFrame({"id": [3], "text": ["delta"], "y": ["x"]})
    report = audit({"train": train, "test": test}, id_column="id", text="text", stratify="y")
    summary = render_audit_summary(report)
    assert "warning: split test has no item of class y" in summary
    assert summary.endswith("no leak found")
    assert "1/2" in summary  # classes present in test


def test_engine_ray_without_ray_installed_is_one_line(
    run_cli: RunCli, split_files: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "ray", None)  # import ray now raises ImportError
    result = run_cli("audit", *split_files, "--id", "ticket_id", "--text", "text",
                     "--engine", "ray")  # fmt: skip
    assert_one_line_error(result, "the Ray engine needs Ray", "pip install 'evalkit[ray]'")
    result = run_cli("audit", *split_files, "--id", "ticket_id", "--text", "text",
                     "--ray-address", "head:6379")  # fmt: skip
    assert_one_line_error(result, "--ray-address needs --engine ray")
