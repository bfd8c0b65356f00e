"""The split manifest's one definition: what split writes is what it reads back and documents.

``evalkit.records._manifest`` defines manifest.json once, as frozen
dataclasses: a split builds and writes them without pydantic, and pydantic
reads the same classes for the JSON Schema in docs/schemas and for a
manifest read back. These tests hold the three together: written, then read
back, a manifest is equal to the one split returned and writes the same
bytes again; the committed schema accepts what split writes and refuses what
the reader refuses; and a manifest of a newer format is refused in one line.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import numpy as np
import polars as pl
import pytest

from evalkit.errors import MalformedFile, UsageError
from evalkit.records._manifest import (
    MANIFEST_FORMAT_VERSION,
    SplitManifest,
    manifest_schema,
    manifest_text,
    read_manifest,
)
from evalkit.splitting.api import SplitResult, split

ROOT = Path(__file__).resolve().parents[1]
TICKETS = ROOT / "examples" / "tickets"
SCHEMA = json.loads((ROOT / "docs" / "schemas" / "split-manifest.schema.json").read_text())


def _check(result: SplitResult, out: Path) -> dict[str, object]:
    """Write, read back, compare; the written manifest as JSON."""
    written = result.write(out)
    text = (out / "manifest.json").read_text(encoding="utf-8")
    assert text == manifest_text(written)
    back = read_manifest(out)
    assert isinstance(back, SplitManifest)
    assert back == written
    assert manifest_text(back) == text  # what is read is written back byte for byte
    data = json.loads(text)
    jsonschema.validate(data, SCHEMA)
    return data


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
    assert result.manifest.unused == 100
    assert result.record is result.manifest  # the name of earlier versions
    data = _check(result, tmp_path / "out")
    assert data["format_version"] == MANIFEST_FORMAT_VERSION
    assert "source" not in data["input"]  # type: ignore[operator]


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
    assert result.manifest.merging is not None and result.manifest.text is not None
    assert result.manifest.within is not None
    _check(result, tmp_path / "out")
    # `within` is read as the plain data split holds, checked against the audit's model.
    within = read_manifest(tmp_path / "out").within
    assert within == result.manifest.within
    assert isinstance(within, dict) and isinstance(within["train"], dict)


def test_a_frame_records_its_source(tmp_path: Path) -> None:
    frame = pl.read_ndjson(TICKETS / "tickets.jsonl")
    result = split(frame, group=["conversation_id"], ratios=[0.8, 0.2], names=["a", "b"])
    data = _check(result, tmp_path / "out")
    assert data["input"]["path"] is None and data["input"]["source"] == "frame"  # type: ignore[index]


def test_frozen_split_and_numbers_given_as_other_types(tmp_path: Path) -> None:
    """numpy integers, a whole float and ints where a float is meant: written as JSON
    reads them back (sizes 70, ratios 1.0, near_dup 1.0)."""
    groups = [i // 4 for i in range(100)]
    texts = [f"ticket {group} about order {group * 7919}" for group in groups]
    frame = pl.DataFrame({"id": range(100), "g": groups, "text": texts})
    first_groups = frame.head(40)  # ten groups, frozen in split a
    first = _check(
        split(first_groups, group=["g"], ratios=[1, 0], names=["a", "b"], id_column="id"),
        tmp_path / "v1",
    )
    again = _check(
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
            freeze=tmp_path / "v1" / "assignments.parquet",
        ),
        tmp_path / "v2",
    )
    assert first["options"]["ratios"] == [1.0, 0.0]  # type: ignore[index]
    options, merging = again["options"], again["merging"]
    assert options["sizes"] == [60, 40]  # type: ignore[index]
    assert (options["seed"], options["tolerance"]) == (3, 2)  # type: ignore[index]
    assert options["near_dup"] == 1.0 and merging["threshold"] == 1.0  # type: ignore[index]
    assert again["freezing"]["frozen_groups"] == 10  # type: ignore[index]


def test_a_fractional_size_is_refused() -> None:
    frame = pl.DataFrame({"id": range(10), "g": range(10)})
    with pytest.raises(
        UsageError, match=r"^sizes must be each of its values a whole number, got 5\.5"
    ):
        split(frame, group=["g"], sizes=[5.5, 4.5], names=["a", "b"])  # type: ignore[list-item]


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    out = tmp_path_factory.mktemp("manifest") / "out"
    split(TICKETS / "tickets.jsonl", group=["conversation_id"], sizes=[840, 180, 180]).write(out)
    return json.loads((out / "manifest.json").read_text(encoding="utf-8"))


def _edited(written: dict[str, object], tmp_path: Path, **changes: object) -> Path:
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps({**written, **changes}), encoding="utf-8")
    return path


def test_a_newer_format_is_refused_in_one_line(written: dict[str, object], tmp_path: Path) -> None:
    path = _edited(written, tmp_path, format_version=MANIFEST_FORMAT_VERSION + 1)
    with pytest.raises(MalformedFile) as refused:
        read_manifest(path)
    message = str(refused.value)
    assert message == (
        f"{path}: format_version {MANIFEST_FORMAT_VERSION + 1} is newer than this evalkit "
        f"reads (split manifest {MANIFEST_FORMAT_VERSION}); upgrade evalkit"
    )
    assert "\n" not in message


@pytest.mark.parametrize(
    ("change", "key"),
    [
        ({"unused": "none"}, "unused"),
        ({"seed": None}, "seed"),
        ({"extra_key": 1}, "extra_key"),
        ({"quality": {"leakage": {}}}, "quality.max_count_deviation"),
    ],
    ids=["wrong type", "null", "unknown key", "missing key"],
)
def test_what_the_reader_refuses_the_schema_refuses(
    written: dict[str, object], tmp_path: Path, change: dict[str, object], key: str
) -> None:
    path = _edited(written, tmp_path, **change)
    refused = rf"^{re.escape(str(path))}: key {key}: .*; pass the manifest"
    with pytest.raises(MalformedFile, match=refused):
        read_manifest(path)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(json.loads(path.read_text()), SCHEMA)


def test_the_committed_schema_is_the_definitions(written: dict[str, object]) -> None:
    """Each field's docstring is its description; the sync test holds the file itself."""
    schema = manifest_schema()
    assert schema == SCHEMA
    described = schema["$defs"]["SplitOptions"]["properties"]["near_dup"]
    assert described["description"] == "Jaccard threshold for merging near-duplicate texts."
    assert schema["$defs"]["WithinSplit"]["additionalProperties"] is False


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
    assert manifest_text(read_manifest(tmp_path / "out")) == written
