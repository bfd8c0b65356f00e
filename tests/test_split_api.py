"""``evalkit.split`` on the example tickets and on the options that change its job."""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from evalkit.splitting.api import split

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples" / "tickets"))

from generate import generate  # noqa: E402

TICKET_OPTIONS = {
    "group": ["conversation_id"],
    "stratify": "category",
    "id_column": "ticket_id",
    "text": "text",
    "sizes": [840, 180, 180],
}


def _share_deviation_pp(frame: pl.DataFrame, part: pl.DataFrame, label: str) -> float:
    whole = (frame["category"] == label).mean()
    return 100 * abs((part["category"] == label).mean() - whole)  # type: ignore[operator]


@pytest.mark.parametrize("data_seed", [7, 11, 23, 42, 99, 123])
def test_ticket_split_meets_the_issue_bar(data_seed: int) -> None:
    frame = pl.DataFrame(generate(1200, data_seed))
    result = split(frame, seed=data_seed, **TICKET_OPTIONS)
    # Exact counts, computed from the frames themselves.
    assert [result.frames[n].height for n in ("train", "val", "test")] == [840, 180, 180]
    # No conversation in two splits.
    owners = pl.concat(
        [
            result.frames[n].select("conversation_id").with_columns(split=pl.lit(n))
            for n in result.frames
        ]
    )
    assert owners.group_by("conversation_id").agg(pl.col("split").n_unique())["split"].max() == 1
    shares = frame["category"].value_counts(normalize=True)
    groups_per_class = frame.group_by("category").agg(pl.col("conversation_id").n_unique())
    for name, part in result.frames.items():
        # <= 1.0 pp for every class holding >= 5% of the items.
        for label, share in shares.iter_rows():
            if share >= 0.05:
                assert _share_deviation_pp(frame, part, label) <= 1.0, (name, label)
        # Every class found in >= 3 conversations appears in every split.
        present = set(part["category"].to_list())
        for label, n_groups in groups_per_class.iter_rows():
            if n_groups >= 3:
                assert label in present, (name, label)
    manifest = result.manifest
    assert manifest.quality.max_count_deviation == 0
    assert manifest.quality.leakage.groups_in_several_splits == 0
    assert manifest.quality.max_class_share_deviation_pp_major <= 1.0


def test_manifest_figures_match_an_independent_computation() -> None:
    frame = pl.DataFrame(generate(1200, 7))
    result = split(frame, seed=3, **TICKET_OPTIONS)
    worst = 0.0
    for name, part in result.frames.items():
        report = result.manifest.splits[name]
        assert report.n_items == part.height
        assert report.n_groups == part["conversation_id"].n_unique()
        for label, count in report.class_counts.items():
            assert count == int((part["category"] == label).sum())
            expected = 100 * (count / part.height - float((frame["category"] == label).mean()))
            assert report.class_share_deviation_pp[label] == pytest.approx(expected, abs=1e-4)
            worst = max(worst, abs(expected))
        lengths = [len(text) for text in part["text"].to_list()]
        cuts = statistics.quantiles(lengths, n=100, method="inclusive")
        assert report.length is not None
        assert report.length.p50 == pytest.approx(statistics.median(lengths))
        assert report.length.p95 == pytest.approx(cuts[94], abs=1e-3)
        assert (report.length.min, report.length.max) == (min(lengths), max(lengths))
    assert result.manifest.quality.max_class_share_deviation_pp == pytest.approx(worst, abs=1e-4)


def test_row_order_does_not_change_any_output_file(tmp_path: Path) -> None:
    frame = pl.DataFrame(generate(1200, 7))
    shuffled = frame.sample(fraction=1.0, shuffle=True, seed=1)
    paths = []
    for index, data in enumerate((frame, shuffled)):
        path = tmp_path / f"input{index}.jsonl"
        data.write_ndjson(path)
        out = tmp_path / f"out{index}"
        split(path, seed=5, **TICKET_OPTIONS).write(out)
        paths.append(out)
    for name in ("train.parquet", "val.parquet", "test.parquet", "assignments.parquet"):
        assert (paths[0] / name).read_bytes() == (paths[1] / name).read_bytes(), name
    manifests = [json.loads((p / "manifest.json").read_text()) for p in paths]
    for manifest in manifests:
        del manifest["input"]["path"], manifest["input"]["sha256"]
    assert manifests[0] == manifests[1]


def test_same_seed_same_bytes_other_seed_other_split(tmp_path: Path) -> None:
    frame = pl.DataFrame(generate(1200, 7))
    for name, seed in (("a", 1), ("b", 1), ("c", 2)):
        split(frame, seed=seed, **TICKET_OPTIONS).write(tmp_path / name)
    read = lambda run: (tmp_path / run / "assignments.parquet").read_bytes()  # noqa: E731
    assert read("a") == read("b")
    assert read("a") != read("c")


def test_ratios_round_by_largest_remainder() -> None:
    frame = pl.DataFrame(generate(1001, 3))
    options = {**TICKET_OPTIONS, "sizes": None, "ratios": [0.7, 0.15, 0.15]}
    result = split(frame, **options)
    # 700.7, 150.15, 150.15 -> 701, 150, 150 (the largest remainder gets the item).
    assert result.manifest.targets == {"train": 701, "val": 150, "test": 150}
    assert [p.height for p in result.frames.values()] == [701, 150, 150]


def test_sizes_below_the_total_leave_items_unused() -> None:
    frame = pl.DataFrame(generate(1200, 3))
    result = split(frame, **{**TICKET_OPTIONS, "sizes": [500, 100, 100]})
    assert [p.height for p in result.frames.values()] == [500, 100, 100]
    assert result.manifest.unused == 500
    assert result.assignments["split"].null_count() == 500


def test_composite_group_key_keeps_each_combination_whole() -> None:
    rng = np.random.default_rng(0)
    n = 600
    frame = pl.DataFrame(
        {
            "id": np.arange(n),
            "source": rng.choice(["web", "mail", "chat"], n),
            "customer": rng.integers(0, 60, n),
            "label": rng.choice(["x", "y"], n),
        }
    )
    result = split(
        frame,
        group=["source", "customer"],
        ratios=[0.8, 0.2],
        names=["a", "b"],
        stratify="label",
        id_column="id",
    )
    keys = [set(p.select("source", "customer").unique().rows()) for p in result.frames.values()]
    assert not keys[0] & keys[1]
    assert result.assignments.schema["group"] == pl.Struct(
        {"source": pl.String, "customer": pl.Int64}
    )


def test_null_group_singleton_makes_each_row_its_own_group() -> None:
    frame = pl.DataFrame(
        {"id": list(range(10)), "g": ["a", "a", None, None, "b", "b", None, "c", "c", None]}
    )
    result = split(
        frame, group=["g"], sizes=[6, 4], names=["x", "y"], id_column="id", null_group="singleton"
    )
    assert result.manifest.null_groups == 4
    assert result.manifest.input.n_groups == 3 + 4
    assert [p.height for p in result.frames.values()] == [6, 4]


def test_freeze_keeps_known_groups_and_places_new_ones(tmp_path: Path) -> None:
    first = pl.DataFrame(generate(1200, 7))
    split(first, seed=1, **TICKET_OPTIONS).write(tmp_path / "v1")
    before = pl.read_parquet(tmp_path / "v1" / "assignments.parquet")
    # The data grows: 300 new tickets in new conversations, plus the old ones.
    extra = pl.DataFrame(generate(300, 8)).with_columns(
        ("N" + pl.col("ticket_id")).alias("ticket_id"),
        ("N" + pl.col("conversation_id")).alias("conversation_id"),
    )
    grown = pl.concat([first, extra])
    result = split(
        grown,
        seed=1,
        freeze=tmp_path / "v1" / "assignments.parquet",
        **{**TICKET_OPTIONS, "sizes": [1050, 225, 225]},
    )
    after = result.assignments
    kept = before.join(after, on="id", suffix="_new")
    assert (kept["split"] == kept["split_new"]).all()
    assert result.manifest.freezing is not None
    assert result.manifest.freezing.frozen_groups == first["conversation_id"].n_unique()
    assert result.manifest.freezing.new_groups == extra["conversation_id"].n_unique()
    assert [p.height for p in result.frames.values()] == [1050, 225, 225]
    assert result.manifest.quality.leakage.groups_in_several_splits == 0


def test_freeze_with_unknown_split_name_is_refused(tmp_path: Path) -> None:
    from evalkit.errors import UsageError

    frame = pl.DataFrame(generate(200, 7))
    split(frame, **{**TICKET_OPTIONS, "sizes": [140, 30, 30]}).write(tmp_path / "v1")
    with pytest.raises(UsageError, match="'val' is not one of names"):
        split(
            frame,
            **{**TICKET_OPTIONS, "sizes": [140, 30, 30]},
            names=["train", "dev", "test"],
            freeze=tmp_path / "v1" / "assignments.parquet",
        )


def test_infeasible_counts_report_the_closest_and_tolerance_turns_it_into_an_error() -> None:
    from evalkit.errors import InfeasibleSplit

    # Six groups of 10: 35/25 cannot be met, 30/30 or 40/20 are the closest.
    frame = pl.DataFrame({"id": range(60), "g": [i // 10 for i in range(60)]})
    result = split(frame, group=["g"], sizes=[35, 25], names=["a", "b"], id_column="id")
    assert result.manifest.quality.max_count_deviation == 5
    with pytest.raises(InfeasibleSplit, match="off by"):
        split(frame, group=["g"], sizes=[35, 25], names=["a", "b"], id_column="id", tolerance=4)


def _planted_texts(n_pairs: int, n_plain: int, seed: int) -> tuple[pl.DataFrame, list[tuple]]:
    """Texts of 50-70 words; planted pairs (one word changed, or case/spacing only)."""
    rng = np.random.default_rng(seed)
    vocabulary = [f"word{i}" for i in range(5000)]

    def text() -> list[str]:
        return list(rng.choice(vocabulary, rng.integers(50, 71)))

    rows, pairs = [], []
    for index in range(n_pairs):
        words = text()
        twin = list(words)
        if index % 2:
            twin[int(rng.integers(len(twin)))] = "changed"
            second = " ".join(twin)
        else:
            second = "  ".join(w.upper() for w in twin)
        a, b = f"p{index}a", f"p{index}b"
        rows += [(a, f"g{a}", " ".join(words)), (b, f"g{b}", second)]
        pairs.append((a, b))
    rows += [(f"x{i}", f"gx{i // 3}", " ".join(text())) for i in range(n_plain)]
    frame = pl.DataFrame(rows, schema=["id", "group", "text"], orient="row")
    return frame.with_columns(label=pl.lit("all")), pairs


def test_near_dup_keeps_every_planted_pair_in_one_split() -> None:
    frame, pairs = _planted_texts(n_pairs=60, n_plain=480, seed=0)
    plain = split(frame, group=["group"], ratios=[0.5, 0.5], names=["a", "b"], id_column="id")
    where = dict(plain.assignments.select("id", "split").iter_rows())
    assert sum(where[a] != where[b] for a, b in pairs) > 10  # the pairs do leak without it
    result = split(
        frame,
        group=["group"],
        ratios=[0.5, 0.5],
        names=["a", "b"],
        id_column="id",
        text="text",
        near_dup=0.8,
    )
    where = dict(result.assignments.select("id", "split").iter_rows())
    assert all(where[a] == where[b] for a, b in pairs)
    assert [p.height for p in result.frames.values()] == [300, 300]
    merging = result.manifest.merging
    assert merging is not None
    assert merging.merged_groups == len(pairs)
    assert merging.largest_merged_group == 2


def test_tokenizer_lengths_count_tokens(tmp_path: Path) -> None:
    tokenizers = pytest.importorskip("tokenizers")
    vocabulary = {"[UNK]": 0, "refund": 1, "please": 2}
    tokenizer = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocabulary, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    folder = tmp_path / "model"
    folder.mkdir()
    tokenizer.save(str(folder / "tokenizer.json"))
    texts = ["refund please", "a b c d", "one", "x y z w v u", "refund"]
    frame = pl.DataFrame({"id": range(5), "g": range(5), "text": texts})
    result = split(
        frame,
        group=["g"],
        sizes=[5, 0],
        names=["all", "none"],
        id_column="id",
        text="text",
        tokenizer=folder,
    )
    length = result.manifest.splits["all"].length
    assert length is not None
    assert (length.unit, length.min, length.max, length.p50) == ("tokens", 1, 6, 2.0)
    chars = split(frame, group=["g"], sizes=[5, 0], names=["all", "none"], text="text")
    assert chars.manifest.splits["all"].length.max == max(map(len, texts))  # type: ignore[union-attr]


def test_tokenizer_must_be_a_local_file(tmp_path: Path) -> None:
    from evalkit.errors import UnreadableFile

    pytest.importorskip("tokenizers")
    frame = pl.DataFrame({"id": range(4), "g": range(4), "text": ["a"] * 4})
    with pytest.raises(UnreadableFile, match="never downloads"):
        split(
            frame,
            group=["g"],
            sizes=[2, 2],
            names=["a", "b"],
            text="text",
            tokenizer=tmp_path / "bert-base-uncased",
        )
