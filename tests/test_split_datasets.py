"""``SplitResult.to_datasets()``: the split as a ``datasets.DatasetDict``.

The rows are checked against the split files written by ``SplitResult.write``
and read back by other readers (``json`` for JSONL, pyarrow for Parquet):
same splits, same rows in the same order, same values, nested conversations
included.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow.parquet as pq
import pytest

from evalkit.errors import UsageError
from evalkit.splitting.api import split

ROOT = Path(__file__).resolve().parents[1]
TICKETS = ROOT / "examples" / "tickets" / "tickets.jsonl"
TICKETS_CHAT = ROOT / "examples" / "tickets" / "tickets_chat.jsonl"
OPTIONS = {"group": ["conversation_id"], "stratify": "category", "id_column": "ticket_id"}


@pytest.mark.parametrize("source", [TICKETS, TICKETS_CHAT], ids=["text", "chat"])
def test_same_rows_as_the_split_files(tmp_path: Path, source: Path) -> None:
    result = split(source, sizes=[840, 180, 180], **OPTIONS)
    ds = result.to_datasets()
    assert list(ds) == ["train", "validation", "test"]
    result.write(tmp_path / "jsonl", fmt="jsonl")
    result.write(tmp_path / "parquet", fmt="parquet")
    for name, key in (("train", "train"), ("val", "validation"), ("test", "test")):
        rows = ds[key].to_list()
        lines = (tmp_path / "jsonl" / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
        assert rows == [json.loads(line) for line in lines], name
        table = pq.read_table(tmp_path / "parquet" / f"{name}.parquet")
        assert rows == table.to_pylist(), name
        assert ds[key].column_names == table.column_names
        assert ds[key].split == key
    # Every input row is in exactly one dataset.
    ids = [i for key in ds for i in ds[key]["ticket_id"]]
    assert sorted(ids) == sorted(pl.read_ndjson(source)["ticket_id"].to_list())


def test_numeric_columns_are_not_copied() -> None:
    rng = np.random.default_rng(0)
    frame = pl.DataFrame({"g": rng.integers(0, 50, 400), "x": rng.normal(size=400)})
    result = split(frame, group=["g"], ratios=[0.5, 0.5], names=["train", "test"])
    ds = result.to_datasets()
    for name in ("train", "test"):
        ours = result.frames[name]["x"].to_numpy(allow_copy=False)
        theirs = ds[name].data.table.column("x").chunks[0].buffers()[1]
        assert ours.__array_interface__["data"][0] == theirs.address


def test_split_names_other_than_val_are_kept_and_clashes_refused() -> None:
    frame = pl.DataFrame({"g": list(range(30)), "t": [str(i) for i in range(30)]})
    names = ["train", "dev", "held-out"]
    ds = split(frame, group=["g"], sizes=[10, 10, 10], names=names).to_datasets()
    assert list(ds) == names and ds["held-out"].num_rows == 10
    clash = split(frame, group=["g"], sizes=[10, 10, 10], names=["train", "val", "validation"])
    with pytest.raises(UsageError, match="two datasets named 'validation'"):
        clash.to_datasets()


def test_without_datasets_installed_the_error_names_the_extra(monkeypatch) -> None:
    result = split(pl.DataFrame({"g": [1, 2, 3, 4]}), group=["g"], sizes=[2, 2], names=["a", "b"])
    monkeypatch.setitem(sys.modules, "datasets", None)  # import datasets -> ImportError
    with pytest.raises(UsageError) as caught:
        result.to_datasets()
    assert "pip install 'evalkit[datasets]'" in str(caught.value)


def test_content_polars_cannot_hold_reaches_the_trainer_as_written(tmp_path: Path) -> None:
    # Text content in some messages and a list of parts in others (OpenAI vision files).
    rows = []
    for index in range(6):
        parts = [{"type": "text", "text": f"picture {index}"}]
        messages = [
            {"role": "user", "content": parts},
            {"role": "assistant", "content": f"a cat {index}"},
        ]
        rows.append({"id": f"i{index}", "g": str(index // 2), "messages": messages})
    path = tmp_path / "mixed.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    result = split(
        path, group=["g"], id_column="id", text="messages", sizes=[4, 2], names=["train", "test"]
    )
    datasets = result.to_datasets()
    written = {row["id"]: row["messages"] for row in rows}
    assert result.manifest.json_text_columns == ["messages"]
    for name in ("train", "test"):
        assert len(datasets[name]) == {"train": 4, "test": 2}[name]
        for row in datasets[name]:
            assert row["messages"] == written[row["id"]]  # no key added, no type changed


def test_datasets_and_sklearn_load_only_when_used() -> None:
    code = (
        "import sys, evalkit\n"
        "evalkit.split\n"
        "print('datasets' in sys.modules, 'sklearn' in sys.modules)\n"
        "evalkit.ExactStratifiedGroupKFold\n"
        "print('sklearn' in sys.modules)\n"
    )
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert completed.stdout.split() == ["False", "False", "True"], completed.stderr


def test_the_splitters_are_exported_from_evalkit() -> None:
    import evalkit
    from evalkit.model_selection import ExactGroupShuffleSplit, ExactStratifiedGroupKFold

    assert evalkit.ExactStratifiedGroupKFold is ExactStratifiedGroupKFold
    assert evalkit.ExactGroupShuffleSplit is ExactGroupShuffleSplit
    assert {"ExactStratifiedGroupKFold", "ExactGroupShuffleSplit"} <= set(dir(evalkit))
