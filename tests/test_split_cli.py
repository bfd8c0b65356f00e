"""``evalkit split`` on the command line: the report, the files, and every bad input."""

from __future__ import annotations

import json
import os
from pathlib import Path

import polars as pl
import pytest
from conftest import TICKETS, assert_one_line_error

GOLDEN = Path(__file__).parent / "golden" / "split_manifest.json"
TICKET_ARGS = [
    "--group", "conversation_id", "--stratify", "category", "--id", "ticket_id",
    "--text", "text",
]  # fmt: skip


def _write_jsonl(path: Path, rows: list[dict]) -> Path:
    pl.DataFrame(rows).write_ndjson(path)
    return path


def test_split_prints_the_report_and_writes_every_file(run_cli, tmp_path: Path) -> None:
    out = tmp_path / "split"
    result = run_cli("split", TICKETS, "--out", out, *TICKET_ARGS, "--sizes", "840,180,180",
                     "--seed", "7")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert "counts: exact" in result.stdout
    assert "leakage: 0 groups in several splits" in result.stdout
    for line in ("train", "val", "test"):
        assert any(row.startswith(line) for row in result.stdout.splitlines())
    assert sorted(p.name for p in out.iterdir()) == [
        "assignments.parquet", "manifest.json", "test.parquet", "train.parquet", "val.parquet",
    ]  # fmt: skip
    assert pl.read_parquet(out / "test.parquet").height == 180


def test_golden_manifest(run_cli, tmp_path: Path) -> None:
    """The manifest of the example split, pinned (regenerate with EVALKIT_UPDATE_GOLDEN=1)."""
    out = tmp_path / "split"
    result = run_cli("split", TICKETS, "--out", out, *TICKET_ARGS, "--sizes", "840,180,180",
                     "--seed", "7", "--quiet")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert result.stdout == f"{out}\n"  # --quiet: the path written, nothing else
    manifest = json.loads((out / "manifest.json").read_text())
    manifest.pop("evalkit_version")
    manifest["input"]["path"] = "examples/tickets/tickets.jsonl"
    if os.environ.get("EVALKIT_UPDATE_GOLDEN"):
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(json.dumps(manifest, indent=2) + "\n")
    assert manifest == json.loads(GOLDEN.read_text())


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_other_output_formats(run_cli, tmp_path: Path, fmt: str) -> None:
    out = tmp_path / "split"
    result = run_cli("split", TICKETS, "--out", out, *TICKET_ARGS, "--ratios", "0.8,0.2",
                     "--names", "train,test", "--format", fmt, "--quiet")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    reader = pl.read_ndjson if fmt == "jsonl" else pl.read_csv
    assert reader(out / f"test.{fmt}").height == 240


def test_force_replaces_an_existing_output(run_cli, tmp_path: Path) -> None:
    out = tmp_path / "split"
    out.mkdir()
    (out / "stale.txt").write_text("old")
    args = ["split", TICKETS, "--out", out, *TICKET_ARGS, "--sizes", "840,180,180", "--quiet"]
    assert_one_line_error(run_cli(*args), str(out), "exists already", "--force")
    assert (out / "stale.txt").exists()  # nothing lost
    # Not a folder evalkit wrote: refused even with --force.
    assert_one_line_error(run_cli(*args, "--force"), "no manifest.json", "refusing to replace")
    (out / "stale.txt").unlink()
    assert run_cli(*args).exit_code == 0  # an empty folder holds nothing to lose
    (out / "stale.txt").write_text("old")
    assert run_cli(*args, "--force").exit_code == 0
    assert not (out / "stale.txt").exists()
    assert (out / "manifest.json").exists()


def test_output_never_replaces_the_input(run_cli, tmp_path: Path) -> None:
    folder = tmp_path / "data"
    folder.mkdir()
    data = _write_jsonl(folder / "d.jsonl", [{"id": i, "g": i % 5} for i in range(20)])
    (folder / "manifest.json").write_text("{}")  # even a folder that looks like an output
    for out in (folder, data):
        result = run_cli("split", data, "--out", out, "--group", "g", "--sizes", "10,10",
                         "--names", "a,b", "--force")  # fmt: skip
        assert_one_line_error(result, "would replace the input")
    assert data.exists()


def test_unknown_column_names_the_columns(run_cli, tmp_path: Path) -> None:
    result = run_cli("split", TICKETS, "--out", tmp_path / "o", "--group", "thread",
                     "--sizes", "840,180,180")  # fmt: skip
    assert_one_line_error(result, "tickets.jsonl", "no column 'thread'", "conversation_id")


def test_null_groups_say_how_many_where_and_what_to_do(run_cli, tmp_path: Path) -> None:
    data = _write_jsonl(
        tmp_path / "d.jsonl",
        [{"id": i, "g": None if i in (3, 5) else f"g{i % 4}"} for i in range(20)],
    )
    result = run_cli("split", data, "--out", tmp_path / "o", "--group", "g", "--id", "id",
                     "--sizes", "10,10", "--names", "a,b")  # fmt: skip
    assert_one_line_error(result, "d.jsonl", "2 row(s)", "first at row 4", "--null-group singleton")
    result = run_cli("split", data, "--out", tmp_path / "o", "--group", "g", "--id", "id",
                     "--sizes", "10,10", "--names", "a,b", "--null-group", "singleton",
                     "--quiet")  # fmt: skip
    assert result.exit_code == 0, result.stderr


def test_duplicate_ids(run_cli, tmp_path: Path) -> None:
    data = _write_jsonl(tmp_path / "d.jsonl", [{"id": i % 7, "g": i} for i in range(10)])
    result = run_cli("split", data, "--out", tmp_path / "o", "--group", "g", "--id", "id",
                     "--sizes", "5,5", "--names", "a,b")  # fmt: skip
    assert_one_line_error(result, "d.jsonl", "more than once", "'id'", "first at row")


def test_sizes_larger_than_the_data(run_cli, tmp_path: Path) -> None:
    result = run_cli("split", TICKETS, "--out", tmp_path / "o", *TICKET_ARGS,
                     "--sizes", "900,200,200")  # fmt: skip
    assert_one_line_error(result, "--sizes", "1300 items", "only 1200")


@pytest.mark.parametrize(
    ("ratios", "fragment"), [("0.7,0.2,0.2", "sum to 1.1, not 1"), ("70,15,15", "sum to 100")]
)
def test_ratios_must_sum_to_one(run_cli, tmp_path: Path, ratios: str, fragment: str) -> None:
    result = run_cli("split", TICKETS, "--out", tmp_path / "o", *TICKET_ARGS, "--ratios", ratios)
    assert_one_line_error(result, "--ratios", fragment)


def test_sizes_and_ratios_are_exclusive(run_cli, tmp_path: Path) -> None:
    result = run_cli("split", TICKETS, "--out", tmp_path / "o", *TICKET_ARGS)
    assert_one_line_error(result, "--sizes", "--ratios")


def test_wrong_number_of_sizes(run_cli, tmp_path: Path) -> None:
    result = run_cli("split", TICKETS, "--out", tmp_path / "o", *TICKET_ARGS, "--sizes", "1000,200")
    assert_one_line_error(result, "2 values for 3 splits")


def test_malformed_sizes_option(run_cli, tmp_path: Path) -> None:
    result = run_cli("split", TICKETS, "--out", tmp_path / "o", *TICKET_ARGS, "--sizes", "840,x")
    assert_one_line_error(result, "--sizes", "not a comma-separated list")


def test_missing_file(run_cli, tmp_path: Path) -> None:
    result = run_cli("split", tmp_path / "nope.jsonl", "--out", tmp_path / "o", "--group", "g",
                     "--sizes", "1,1")  # fmt: skip
    assert_one_line_error(result, "nope.jsonl", "no such file")


def test_malformed_jsonl_names_the_line(run_cli, tmp_path: Path) -> None:
    data = tmp_path / "bad.jsonl"
    data.write_text('{"id": 1, "g": "a"}\n{"id": 2, "g": "b"}\n{"id": 3, "g": \n{"id": 4}\n')
    result = run_cli("split", data, "--out", tmp_path / "o", "--group", "g", "--sizes", "2,2")
    assert_one_line_error(result, "bad.jsonl:3", "not a JSON object")


def test_unknown_extension(run_cli, tmp_path: Path) -> None:
    data = tmp_path / "data.xlsx"
    data.write_text("x")
    result = run_cli("split", data, "--out", tmp_path / "o", "--group", "g", "--sizes", "1,1")
    assert_one_line_error(result, "data.xlsx", "unknown table format", ".jsonl")


def test_corrupt_parquet(run_cli, tmp_path: Path) -> None:
    data = tmp_path / "data.parquet"
    data.write_bytes(b"PAR1 this is not parquet")
    result = run_cli("split", data, "--out", tmp_path / "o", "--group", "g", "--sizes", "1,1")
    assert_one_line_error(result, "data.parquet", "cannot read as parquet")


def test_tolerance_exceeded(run_cli, tmp_path: Path) -> None:
    data = _write_jsonl(tmp_path / "d.jsonl", [{"id": i, "g": i // 10} for i in range(60)])
    result = run_cli("split", data, "--out", tmp_path / "o", "--group", "g", "--id", "id",
                     "--sizes", "35,25", "--names", "a,b", "--tolerance", "2")  # fmt: skip
    assert_one_line_error(result, "off by", "--tolerance 2", "change --sizes")
    assert not (tmp_path / "o").exists()


def test_text_column_must_hold_text(run_cli, tmp_path: Path) -> None:
    data = _write_jsonl(tmp_path / "d.jsonl", [{"id": i, "g": i, "t": i} for i in range(6)])
    result = run_cli("split", data, "--out", tmp_path / "o", "--group", "g", "--text", "t",
                     "--sizes", "3,3", "--names", "a,b")  # fmt: skip
    assert_one_line_error(result, "'t'", "holds Int64 values", "needs text, or conversations")


def test_near_dup_needs_text(run_cli, tmp_path: Path) -> None:
    result = run_cli("split", TICKETS, "--out", tmp_path / "o", "--group", "conversation_id",
                     "--sizes", "840,180,180", "--near-dup", "0.8")  # fmt: skip
    assert_one_line_error(result, "--near-dup needs --text")


def test_bad_split_names(run_cli, tmp_path: Path) -> None:
    result = run_cli("split", TICKETS, "--out", tmp_path / "o", *TICKET_ARGS,
                     "--sizes", "840,360", "--names", "train,manifest")  # fmt: skip
    assert_one_line_error(result, "'manifest' cannot name a split")


def test_debug_shows_the_traceback(run_cli, tmp_path: Path) -> None:
    result = run_cli("--debug", "split", TICKETS, "--out", tmp_path / "o", "--group", "nope",
                     "--sizes", "1,1")  # fmt: skip
    assert result.exit_code == 2
    assert "Traceback" in result.stderr


def test_debug_works_after_the_command_too(run_cli, tmp_path: Path) -> None:
    result = run_cli("split", TICKETS, "--out", tmp_path / "o", "--group", "nope",
                     "--sizes", "1,1", "--debug")  # fmt: skip
    assert result.exit_code == 2
    assert "Traceback" in result.stderr


def test_null_group_singleton_needs_an_id(run_cli, tmp_path: Path) -> None:
    data = _write_jsonl(tmp_path / "d.jsonl", [{"g": None if i % 3 else "a"} for i in range(9)])
    result = run_cli("split", data, "--out", tmp_path / "o", "--group", "g", "--sizes", "5,4",
                     "--names", "a,b", "--null-group", "singleton")  # fmt: skip
    assert_one_line_error(result, "6 row(s) have no group", "needs --id")


def test_negative_seed_is_a_usage_error(run_cli, tmp_path: Path) -> None:
    result = run_cli("split", TICKETS, "--out", tmp_path / "o", *TICKET_ARGS,
                     "--sizes", "840,180,180", "--seed", "-1")  # fmt: skip
    assert_one_line_error(result, "--seed", "-1")


def test_a_split_with_no_target_is_not_reported_as_missing_classes(run_cli, tmp_path) -> None:
    out = tmp_path / "o"
    result = run_cli("split", TICKETS, "--out", out, *TICKET_ARGS, "--sizes", "1000,200,0",
                     "--format", "jsonl")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert "are in every split" in result.stdout
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["quality"]["required_classes_missing"] == {"train": [], "val": [], "test": []}
    assert manifest["splits"]["test"]["classes_missing"]  # all, truthfully listed
    # The empty JSONL split reads back: audit treats it as an empty split.
    audit = run_cli("audit", out, "--id", "ticket_id", "--text", "text", "--exact-only")
    assert audit.exit_code in (0, 1), audit.stderr


def test_csv_refuses_nested_columns_and_jsonl_refuses_nan(run_cli, tmp_path: Path) -> None:
    data = tmp_path / "d.parquet"
    pl.DataFrame(
        {"id": range(6), "g": range(6), "meta": [[1, 2]] * 6, "v": [1.0, float("nan")] * 3}
    ).write_parquet(data)
    common = ["split", data, "--group", "g", "--id", "id", "--sizes", "3,3", "--names", "a,b"]
    result = run_cli(*common, "--out", tmp_path / "csv", "--format", "csv")
    assert_one_line_error(result, "'meta'", "CSV cannot hold", "--format parquet")
    result = run_cli(*common, "--out", tmp_path / "jsonl", "--format", "jsonl")
    assert_one_line_error(result, "'v'", "NaN or infinite", "--format parquet")
    assert not (tmp_path / "csv").exists() and not (tmp_path / "jsonl").exists()
    assert run_cli(*common, "--out", tmp_path / "pq", "--quiet").exit_code == 0


def test_jsonl_with_a_byte_order_mark_is_read(run_cli, tmp_path: Path) -> None:
    data = tmp_path / "bom.jsonl"
    lines = "\n".join(json.dumps({"id": i, "g": i % 4}) for i in range(8))
    data.write_bytes(b"\xef\xbb\xbf" + lines.encode())
    result = run_cli("split", data, "--out", tmp_path / "o", "--group", "g", "--id", "id",
                     "--sizes", "4,4", "--names", "a,b", "--quiet")  # fmt: skip
    assert result.exit_code == 0, result.stderr
