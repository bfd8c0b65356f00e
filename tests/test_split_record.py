"""The manifest a split writes from plain data is the one its pydantic model defines.

``evalkit split`` builds and writes manifest.json from the dataclasses of
``evalkit.splitting.record`` and never imports the models of
``evalkit.splitting.manifest`` (the format's definition, its JSON Schema, and
``SplitResult.manifest``). These tests hold the two together: the same fields
in the same order, and a written manifest that the model validates and, dumped
again, writes byte for byte.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from pydantic import BaseModel

from evalkit.splitting import manifest as models
from evalkit.splitting import record
from evalkit.splitting.api import SplitResult, split

ROOT = Path(__file__).resolve().parents[1]
TICKETS = ROOT / "examples" / "tickets"

PAIRS = [
    (record.InputInfo, models.InputInfo),
    (record.SplitOptions, models.SplitOptions),
    (record.TextInfo, models.TextInfo),
    (record.LengthStats, models.LengthStats),
    (record.SplitReport, models.SplitReport),
    (record.Leakage, models.Leakage),
    (record.Quality, models.Quality),
    (record.Merging, models.Merging),
    (record.Freezing, models.Freezing),
    (record.ManifestRecord, models.SplitManifest),
]


@pytest.mark.parametrize(("plain", "model"), PAIRS, ids=[model.__name__ for _, model in PAIRS])
def test_plain_fields_are_the_models_fields_in_order(plain: type, model: type[BaseModel]) -> None:
    assert [field.name for field in dataclasses.fields(plain)] == list(model.model_fields)


def _as_the_model_writes(text: str) -> str:
    """The manifest read by the model and written as the model writes it."""
    manifest = models.SplitManifest.model_validate_json(text)
    return json.dumps(manifest.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n"


def _check(result: SplitResult, out: Path) -> None:
    result.write(out)
    text = (out / "manifest.json").read_text(encoding="utf-8")
    assert text == _as_the_model_writes(text)
    assert result.manifest == models.SplitManifest.model_validate_json(text)
    assert result.manifest.model_dump(mode="json") == json.loads(text)


def test_ticket_split_with_text_and_unused_items(tmp_path: Path) -> None:
    result = split(
        TICKETS / "tickets.jsonl",
        group=["conversation_id"],
        stratify="category",
        id_column="ticket_id",
        text="text",
        sizes=[800, 150, 150],
        seed=7,
    )
    assert result.record.unused == 100
    _check(result, tmp_path / "out")


def test_conversations_merged_by_near_duplicates(tmp_path: Path) -> None:
    result = split(
        TICKETS / "tickets_chat.jsonl",
        group=["conversation_id"],
        stratify="category",
        id_column="ticket_id",
        text="messages",
        roles="user,assistant",
        near_dup=0.8,
        ratios=[0.7, 0.15, 0.15],
        seed=7,
    )
    assert result.record.merging is not None and result.record.text is not None
    _check(result, tmp_path / "out")


def test_frozen_split_and_numbers_given_as_other_types(tmp_path: Path) -> None:
    """numpy integers, a whole float and ints where the model wants floats: written as
    the model coerces them (sizes 70, ratios 1.0, near_dup 1.0)."""
    groups = [i // 4 for i in range(100)]
    texts = [f"ticket {group} about order {group * 7919}" for group in groups]
    frame = pl.DataFrame({"id": range(100), "g": groups, "text": texts})
    first_groups = frame.head(40)  # ten groups, frozen in split a
    split(first_groups, group=["g"], ratios=[1, 0], names=["a", "b"], id_column="id").write(
        tmp_path / "v1"
    )
    assignments = tmp_path / "v1" / "assignments.parquet"
    _check(
        split(
            frame,
            group=["g"],
            sizes=list(np.array([60, 40])),
            names=["a", "b"],
            id_column="id",
            seed=np.int64(3),  # type: ignore[arg-type]
            tolerance=2.0,  # type: ignore[arg-type]
            text="text",
            near_dup=1,
            freeze=assignments,
        ),
        tmp_path / "v2",
    )
    first = json.loads((tmp_path / "v1" / "manifest.json").read_text())
    assert first["options"]["ratios"] == [1.0, 0.0]
    again = json.loads((tmp_path / "v2" / "manifest.json").read_text())
    assert again["options"]["sizes"] == [60, 40]
    assert (again["options"]["seed"], again["options"]["tolerance"]) == (3, 2)
    assert again["options"]["near_dup"] == 1.0 and again["merging"]["threshold"] == 1.0
    assert again["freezing"]["frozen_groups"] == 10


def test_a_fractional_size_is_refused() -> None:
    from evalkit.errors import UsageError

    frame = pl.DataFrame({"id": range(10), "g": range(10)})
    with pytest.raises(UsageError, match=r"^sizes: a whole number, got 5\.5"):
        split(frame, group=["g"], sizes=[5.5, 4.5], names=["a", "b"])  # type: ignore[list-item]


def test_the_command_does_not_import_pydantic(tmp_path: Path) -> None:
    """What keeps a split of 100k items fast: the CLI writes the manifest without it."""
    code = (
        "import sys; from evalkit.cli import main\n"
        "try:\n"
        f"    main(['split', {str(TICKETS / 'tickets.jsonl')!r}, '--out', "
        f"{str(tmp_path / 'out')!r}, '--group', 'conversation_id', '--stratify', 'category',"
        " '--sizes', '840,180,180'])\n"
        "except SystemExit as done:\n"
        "    assert done.code == 0, done.code\n"
        "print(sorted(name for name in sys.modules if name.split('.')[0] == 'pydantic'))\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert run.stdout.splitlines()[-1] == "[]"
    written = (tmp_path / "out" / "manifest.json").read_text(encoding="utf-8")
    assert written == _as_the_model_writes(written)
