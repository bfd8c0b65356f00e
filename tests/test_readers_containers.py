"""The containers people use: ``.json`` files and Hugging Face ``save_to_disk`` folders.

Folders are written by the real ``datasets`` library (a dev dependency only:
evalkit reads the Arrow files with pyarrow), and every command that reads a
table must give the same figures on them as on the same data in JSONL.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest
from conftest import ROOT, TICKETS, assert_one_line_error

datasets = pytest.importorskip("datasets")

CHAT = ROOT / "examples" / "tickets" / "tickets_chat.jsonl"
TOKENIZER = ROOT / "examples" / "tokenizer"
CONTRACT = ROOT / "contracts" / "ticket-triage.yaml"
ROWS = 300


def _records(path: Path, rows: int = ROWS) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()[:rows]]


def _jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path


def _hf(folder: Path, records: list[dict]) -> Path:
    datasets.Dataset.from_list(records).save_to_disk(str(folder))
    return folder


def _hf_dict(folder: Path, splits: dict[str, list[dict]]) -> Path:
    parts = {name: datasets.Dataset.from_list(rows) for name, rows in splits.items()}
    datasets.DatasetDict(parts).save_to_disk(str(folder))
    return folder


@pytest.fixture(scope="module")
def tickets(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The same tickets as JSONL, a .json array, JSON Lines in a .json file and a Dataset."""
    folder = tmp_path_factory.mktemp("containers")
    records = _records(TICKETS)
    (folder / "array.json").write_text(json.dumps(records, indent=2))
    return {
        "jsonl": _jsonl(folder / "tickets.jsonl", records),
        "json array": folder / "array.json",
        "json lines": _jsonl(folder / "lines.json", records),
        "hf": _hf(folder / "hf", records),
    }


def _manifest_figures(out: Path) -> dict:
    manifest = json.loads((out / "manifest.json").read_text())
    return {key: manifest[key] for key in ("targets", "splits", "quality", "unused")} | {
        "n_items": manifest["input"]["n_items"]
    }


@pytest.mark.parametrize("kind", ["json array", "json lines", "hf"])
def test_split_reads_every_container_as_jsonl(tickets, kind: str, tmp_path: Path, run_cli) -> None:
    args = ["--group", "conversation_id", "--stratify", "category", "--id", "ticket_id",
            "--text", "text", "--ratios", "0.7,0.15,0.15", "--seed", "3", "--quiet"]  # fmt: skip
    assert run_cli("split", tickets["jsonl"], "--out", tmp_path / "a", *args).exit_code == 0
    result = run_cli("split", tickets[kind], "--out", tmp_path / "b", *args)
    assert result.exit_code == 0, result.stderr
    assert _manifest_figures(tmp_path / "a") == _manifest_figures(tmp_path / "b")
    for name in ("train", "val", "test"):
        left = pl.read_parquet(tmp_path / "a" / f"{name}.parquet")
        right = pl.read_parquet(tmp_path / "b" / f"{name}.parquet")
        assert left.equals(right), name
    manifest = json.loads((tmp_path / "b" / "manifest.json").read_text())
    assert len(manifest["input"]["sha256"]) == 64


def _split_folders(tmp_path: Path, source: Path) -> tuple[Path, Path]:
    """An evalkit split of ``source`` (JSONL files) and the same splits as a DatasetDict."""
    split = tmp_path / "split"
    from evalkit import split as run_split

    run_split(source, group=["conversation_id"], ratios=[0.7, 0.15, 0.15], seed=5,
              id_column="ticket_id", stratify="category").write(split, fmt="jsonl")  # fmt: skip
    parts = {name: _records(split / f"{name}.jsonl", 10**6) for name in ("train", "val", "test")}
    return split, _hf_dict(tmp_path / "dd", parts)


def test_audit_reads_a_dataset_dict_as_one_table_per_split(tickets, tmp_path: Path, run_cli):
    split, dd = _split_folders(tmp_path, tickets["jsonl"])
    args = ["--id", "ticket_id", "--text", "text", "--group", "conversation_id",
            "--stratify", "category"]  # fmt: skip
    first = run_cli("audit", split, *args, "--json", tmp_path / "a.json")
    second = run_cli("audit", dd, *args, "--json", tmp_path / "b.json")
    assert first.exit_code == second.exit_code, second.stderr
    a, b = (json.loads((tmp_path / f"{n}.json").read_text()) for n in "ab")
    for key in ("counts", "classes", "group_leaks", "exact_duplicates", "near_duplicates"):
        assert a[key] == b[key], key
    assert list(b["splits"]) == ["train", "val", "test"]


def test_score_reads_gold_and_predictions_in_every_container(tmp_path: Path, run_cli) -> None:
    gold = _records(TICKETS)
    predictions = [
        {"ticket_id": r["ticket_id"],
         "output": json.dumps({"category": r["category"] if i % 5 else "billing",
                               "priority": r["priority"], "order_id": r["order_id"],
                               "amount": r["amount"]})}
        for i, r in enumerate(gold)
    ]  # fmt: skip
    gold_jsonl = _jsonl(tmp_path / "gold.jsonl", gold)
    pred_jsonl = _jsonl(tmp_path / "pred.jsonl", predictions)
    (tmp_path / "gold.json").write_text(json.dumps(gold))
    (tmp_path / "pred.json").write_text(json.dumps(predictions))
    dd = _hf_dict(tmp_path / "gold-dd", {"test": gold, "train": gold[:10]})
    pred_hf = _hf(tmp_path / "pred-hf", predictions)

    def figures(gold_path: Path, pred_path: Path, *extra: str) -> dict:
        out = tmp_path / f"out-{len(list(tmp_path.iterdir()))}"
        result = run_cli("score", "--contract", CONTRACT, "--gold", gold_path, "--pred",
                         pred_path, "--out", out, "--no-ledger", "-q", *extra)  # fmt: skip
        assert result.exit_code == 0, result.stderr
        summary = json.loads((out / "summary.json").read_text())
        return {key: summary[key] for key in ("overall", "fields", "classes", "errors")}

    reference = figures(gold_jsonl, pred_jsonl)
    assert reference["overall"]["content_correct"] < reference["overall"]["n"] == ROWS
    assert figures(tmp_path / "gold.json", tmp_path / "pred.json") == reference
    assert figures(dd, pred_hf, "--hf-split", "test") == reference
    import evalkit  # the library reads the split as the command line does

    scored = evalkit.score(CONTRACT, dd, pred_hf, hf_split="test", no_ledger=True)
    data = scored.summary.model_dump(mode="json")
    assert {key: data[key] for key in ("overall", "fields", "classes", "errors")} == reference
    missing = run_cli("score", "--contract", CONTRACT, "--gold", dd, "--pred", pred_jsonl,
                      "--out", tmp_path / "x", "--no-ledger")  # fmt: skip
    assert_one_line_error(missing, "DatasetDict with splits test, train", "--hf-split")
    wrong = run_cli("score", "--contract", CONTRACT, "--gold", dd, "--pred", pred_jsonl,
                    "--out", tmp_path / "x", "--no-ledger", "--hf-split", "val")  # fmt: skip
    assert_one_line_error(wrong, "no split 'val'", "test, train")


def test_prompts_from_a_dataset_equal_prompts_from_jsonl(tmp_path: Path, run_cli) -> None:
    records = _records(CHAT, 40)
    source = _jsonl(tmp_path / "chat.jsonl", records)
    dd = _hf_dict(tmp_path / "dd", {"test": records})
    args = ["--id", "ticket_id", "--text", "messages", "--model", "m", "--quiet"]
    assert run_cli("prompts", source, "--out", tmp_path / "a.jsonl", *args).exit_code == 0
    result = run_cli("prompts", dd, "--hf-split", "test", "--out", tmp_path / "b.jsonl", *args)
    assert result.exit_code == 0, result.stderr
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()


def test_tokens_reads_a_dataset_dict_as_one_table_per_split(tmp_path: Path, run_cli) -> None:
    pytest.importorskip("transformers")
    records = _records(CHAT, 60)
    parts = {"train": records[:40], "test": records[40:]}
    files = [_jsonl(tmp_path / f"{name}.jsonl", rows) for name, rows in parts.items()]
    dd = _hf_dict(tmp_path / "dd", parts)
    args = ["--tokenizer", TOKENIZER, "--text", "messages", "--id", "ticket_id",
            "--seq-len", "512", "--quiet"]  # fmt: skip
    first = run_cli("tokens", *files, *args, "--json", tmp_path / "a.json")
    second = run_cli("tokens", dd, *args, "--json", tmp_path / "b.json")
    assert first.exit_code == second.exit_code == 0, second.stderr
    a, b = (json.loads((tmp_path / f"{n}.json").read_text()) for n in "ab")
    assert list(a["splits"]) == list(b["splits"]) == ["train", "test"]
    for name in ("train", "test"):
        for key in ("n", "tokens", "supervised_ratio", "truncation"):
            assert a["splits"][name][key] == b["splits"][name][key], key
    assert a["checks"] == b["checks"]


def test_a_state_json_naming_data_outside_its_folder_is_refused(tmp_path: Path, run_cli) -> None:
    """Before: such a folder was read, and hashed without the data outside it."""
    folder = _hf(tmp_path / "hf", _records(TICKETS, 20))
    outside = tmp_path / "elsewhere.arrow"
    shutil.move(next(folder.glob("*.arrow")), outside)
    state = json.loads((folder / "state.json").read_text())
    state["_data_files"] = [{"filename": "../elsewhere.arrow"}]
    (folder / "state.json").write_text(json.dumps(state))
    for command in (
        ["split", folder, "--out", tmp_path / "out", "--group", "conversation_id",
         "--sizes", "10,5,5"],
        ["audit", folder, folder, "--id", "ticket_id", "--text", "text"],
        ["score", "--contract", CONTRACT, "--gold", folder, "--pred", folder,
         "--out", tmp_path / "s"],
    ):  # fmt: skip
        assert_one_line_error(run_cli(*command), "state.json", "outside")


def test_a_json_file_that_is_neither_array_nor_lines_is_one_line(tmp_path: Path, run_cli) -> None:
    path = tmp_path / "data.json"
    path.write_text('{\n  "ticket_id": "T1"\n}\n')
    result = run_cli("split", path, "--out", tmp_path / "out", "--group", "ticket_id",
                     "--sizes", "1")  # fmt: skip
    assert_one_line_error(result, f"{path}:1", "not a JSON object")
    path.write_text('[{"ticket_id": "T1"}, 5]')
    result = run_cli("split", path, "--out", tmp_path / "out", "--group", "ticket_id",
                     "--sizes", "1")  # fmt: skip
    assert_one_line_error(result, "element 2", "array of objects")
