"""Reading result folders: every bad input is one line naming the file and key or column."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from scored_results import fingerprint, write_result

from evalkit import gate, load_result
from evalkit.errors import (
    EvalkitError,
    InvalidTable,
    MalformedFile,
    UnknownColumn,
    UnreadableFile,
)

IDS = ["T3", "T1", "T2", "T4"]
CLASSES = ["billing", "billing", "shipping", None]


def make(folder: Path, **changes) -> Path:
    outcome = {"ids": IDS, "classes": CLASSES, "correct": [True, False, True, True]}
    return write_result(folder, **(outcome | changes))


def edit_summary(folder: Path, change) -> None:
    path = folder / "summary.json"
    summary = json.loads(path.read_text())
    change(summary)
    path.write_text(json.dumps(summary))


def test_a_result_folder_loads_sorted_by_id(tmp_path: Path) -> None:
    result = load_result(make(tmp_path / "run"))
    assert result.examples["id"].to_list() == ["T1", "T2", "T3", "T4"]
    assert result.name == "run"
    assert result.summary.contract.normalized["gate"]["max_missing"] == 0


def test_rows_written_out_of_order_are_sorted_by_id(tmp_path: Path) -> None:
    folder = make(tmp_path / "run")
    frame = pl.read_parquet(folder / "examples.parquet")
    frame.reverse().write_parquet(folder / "examples.parquet")
    assert load_result(folder).examples["id"].to_list() == ["T1", "T2", "T3", "T4"]


def test_integer_ids_pair_with_string_ids(tmp_path: Path) -> None:
    folder = make(tmp_path / "run")
    frame = pl.read_parquet(folder / "examples.parquet")
    frame.with_columns(pl.col("id").str.slice(1).cast(pl.Int64)).write_parquet(
        folder / "examples.parquet"
    )
    assert load_result(folder).examples["id"].to_list() == ["1", "2", "3", "4"]


@pytest.mark.parametrize(
    ("breakage", "error", "pattern"),
    [
        (lambda f: (f / "summary.json").unlink(), UnreadableFile, r"summary\.json: no such file"),
        (
            lambda f: (f / "examples.parquet").unlink(),
            UnreadableFile,
            r"examples\.parquet: no such",
        ),
        (
            lambda f: (f / "summary.json").write_text('{"format_version": 1,\n  oops}'),
            MalformedFile,
            r"summary\.json:2: not valid JSON",
        ),
        (
            lambda f: (f / "summary.json").write_text("[1, 2]"),
            MalformedFile,
            r"expected a JSON object",
        ),
        (
            lambda f: edit_summary(f, lambda s: s["contract"].pop("fingerprint")),
            MalformedFile,
            r"summary\.json: missing key 'contract\.fingerprint'; re-run evalkit score",
        ),
        (
            lambda f: edit_summary(f, lambda s: s["gold"].update(n="many")),
            MalformedFile,
            r"key 'gold\.n'",
        ),
        (
            lambda f: edit_summary(f, lambda s: s.update(format_version=7)),
            MalformedFile,
            r"format_version 7 is newer .* upgrade evalkit",
        ),
        (
            lambda f: edit_summary(f, lambda s: s["overall"].update(n=5)),
            InvalidTable,
            r"4 rows but summary\.json says overall\.n = 5",
        ),
        (
            lambda f: (
                pl.read_parquet(f / "examples.parquet")
                .drop("content_correct")
                .write_parquet(f / "examples.parquet")
            ),
            UnknownColumn,
            r"examples\.parquet: no column 'content_correct'",
        ),
        (
            lambda f: (
                pl.read_parquet(f / "examples.parquet")
                .with_columns(pl.lit("T1").alias("id"))
                .write_parquet(f / "examples.parquet")
            ),
            InvalidTable,
            r"id 'T1' occurs more than once",
        ),
        (
            lambda f: (
                pl.read_parquet(f / "examples.parquet")
                .with_columns(pl.col("content_correct").cast(pl.Int8))
                .write_parquet(f / "examples.parquet")
            ),
            InvalidTable,
            r"'content_correct' is Int8, expected Boolean",
        ),
        (
            lambda f: (
                pl.read_parquet(f / "examples.parquet")
                .with_columns(pl.when(pl.col("id") == "T2").then(None).otherwise("id").alias("id"))
                .write_parquet(f / "examples.parquet")
            ),
            InvalidTable,
            r"column 'id' has 1 null values",
        ),
        (
            lambda f: (f / "examples.parquet").write_text("not parquet"),
            MalformedFile,
            r"examples\.parquet: cannot read as parquet",
        ),
    ],
)
def test_bad_results_get_one_line_naming_the_file(
    tmp_path: Path, breakage, error: type[EvalkitError], pattern: str
) -> None:
    folder = make(tmp_path / "run")
    breakage(folder)
    with pytest.raises(error, match=pattern) as caught:
        load_result(folder)
    assert "\n" not in str(caught.value)
    assert caught.value.exit_code == 2


def test_a_missing_folder_or_a_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(UnreadableFile, match="no such folder"):
        load_result(tmp_path / "nope")
    (tmp_path / "file.json").write_text("{}")
    with pytest.raises(UnreadableFile, match="is a file; pass the folder"):
        load_result(tmp_path / "file.json")


def test_a_wrongly_typed_gate_rule_names_the_key(tmp_path: Path) -> None:
    base = make(tmp_path / "b")

    def loosen(summary: dict) -> None:
        contract = summary["contract"]
        contract["normalized"]["gate"]["max_missing"] = -1
        # A consistent (re-fingerprinted) block, so the rule check itself is reached.
        contract["fingerprint"] = fingerprint(contract["normalized"])

    edit_summary(base, loosen)
    with pytest.raises(EvalkitError, match=r"contract\.normalized\.gate\.max_missing"):
        gate(base, base)


def test_extra_columns_are_accepted_and_an_unknown_key_is_named(tmp_path: Path) -> None:
    folder = make(tmp_path / "run")
    frame = pl.read_parquet(folder / "examples.parquet").with_columns(pl.lit(1).alias("tokens"))
    frame.write_parquet(folder / "examples.parquet")
    assert gate(folder, folder).verdict == "pass"
    # summary.json is read with the model score writes it with: a key it does not
    # know is an edit or another format (a newer one says so by format_version).
    edit_summary(folder, lambda s: s.update(something_new={"x": 1}))
    with pytest.raises(MalformedFile, match=r"summary\.json: unknown key 'something_new'") as e:
        load_result(folder)
    assert "\n" not in str(e.value)


def test_a_summary_written_before_the_later_keys_still_reads(tmp_path: Path) -> None:
    """Every key added since format 1 has a default: an early result reads, as it was."""
    folder = make(tmp_path / "run")
    later = ("confusion", "base", "card", "ledger", "rescored_from", "look", "examples_sha256")

    def early(summary: dict) -> None:
        for key in later:
            summary.pop(key, None)
        summary["predictions"].pop("id_col", None)
        summary["predictions"].pop("output_col", None)

    edit_summary(folder, early)
    result = load_result(folder)
    assert (result.summary.card, result.summary.look, result.summary.examples_sha256) == (
        None,
        None,
        None,
    )
    assert gate(folder, folder).verdict == "pass"
