"""Each file evalkit writes has one reader and one writer: its records module.

The rule the scan enforces: a string constant equal to a persisted file's
name (``"summary.json"``, not a message or docstring that mentions it) occurs
in exactly one module under ``evalkit/``, the module that owns the file; every
other module reaches the file through that module's constant, reader and
writer. Docstrings are not constants of the program and are skipped; a
message naming the file (``f"{folder}: holds no {RUN_FILE}"``) uses the
constant or merely contains the name, and so is not a second spelling.
"""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import polars as pl
import pytest
from ticket_gold import gold_rows

from evalkit import split
from evalkit.records._card import read_card, write_card
from evalkit.records._manifest import read_manifest, write_manifest
from evalkit.records._summary import ScoreSummary, read_summary, write_summary

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "evalkit"

# Each persisted file's name and the one module that may spell it. The ledger's
# name is spelt by the input layer: checking an output refuses a folder holding
# a ledger, and io is below every package that reads or writes one.
OWNERS = {
    "manifest.json": "evalkit/records/_manifest.py",
    "assignments.parquet": "evalkit/records/_manifest.py",
    "summary.json": "evalkit/records/_summary.py",
    "examples.parquet": "evalkit/records/_summary.py",
    "run.json": "evalkit/records/_run.py",
    "predictions.jsonl": "evalkit/records/_run.py",
    "tokens.parquet": "evalkit/records/_run.py",
    "report.json": "evalkit/records/_compare_files.py",
    "report.md": "evalkit/records/_compare_files.py",
    "report.html": "evalkit/records/_compare_files.py",
    "junit.xml": "evalkit/records/_compare_files.py",
    "evalkit-ledger.jsonl": "evalkit/io/_outputs.py",
}


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the docstring nodes of a module, its classes and functions."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def spellings(source: str) -> set[str]:
    """The persisted file names a module's source spells as string constants (not docstrings)."""
    tree = ast.parse(source)
    skipped = _docstrings(tree)
    return {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and node.value in OWNERS
        and id(node) not in skipped
    }


def scan(package: Path) -> dict[str, list[str]]:
    """Per persisted file name, the modules of ``package`` that spell it (paths from its parent)."""
    found: dict[str, list[str]] = {name: [] for name in OWNERS}
    for path in sorted(package.rglob("*.py")):
        for name in spellings(path.read_text(encoding="utf-8")):
            found[name].append(path.relative_to(package.parent).as_posix())
    return found


def test_each_persisted_file_name_is_spelt_by_its_module_alone() -> None:
    found = scan(PACKAGE)
    assert found == {name: [owner] for name, owner in OWNERS.items()}


def test_the_scan_skips_docstrings_and_messages_but_not_a_constant() -> None:
    source = (
        '"""Reads summary.json."""\n'
        'def f(x):\n    """summary.json"""\n    return f"{x}/summary.json"\n'
    )
    assert spellings(source) == set()
    assert spellings('PATH = "summary.json"\n') == {"summary.json"}


def test_a_planted_second_reader_is_found(tmp_path: Path) -> None:
    copy = tmp_path / "evalkit"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    planted = copy / "comparison" / "planted.py"
    planted.write_text(
        "import json\n\n\ndef read(folder):\n"
        '    return json.loads((folder / "summary.json").read_text())\n',
        encoding="utf-8",
    )
    found = scan(copy)
    assert found["summary.json"] == ["evalkit/comparison/planted.py", OWNERS["summary.json"]]
    assert found != {name: [owner] for name, owner in OWNERS.items()}


CONTRACT = ROOT / "contracts" / "ticket-triage.yaml"
MODEL = ROOT / "examples" / "model"


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A result folder written by evalkit score (through the library), with a card."""
    import json

    import evalkit

    folder = tmp_path_factory.mktemp("scored")
    rows = gold_rows()
    gold = pl.DataFrame(rows, schema_overrides={"amount": pl.Float64})
    outputs = [json.dumps({"category": "billing", "priority": row["priority"]}) for row in rows]
    gold_path, pred_path = folder / "test.jsonl", folder / "pred.jsonl"
    gold.write_ndjson(gold_path)
    pl.DataFrame({"ticket_id": gold["ticket_id"], "output": outputs}).write_ndjson(pred_path)
    card = evalkit.adapter_card(MODEL / "adapter", base=MODEL / "base")
    result = evalkit.score(CONTRACT, gold_path, pred_path, name="run", ledger=False, card=card)
    return result.write(folder / "run")


def test_summary_round_trips(scored: Path, tmp_path: Path) -> None:
    summary = read_summary(scored)
    assert isinstance(summary, ScoreSummary)
    write_summary(tmp_path / "summary.json", summary)
    assert (tmp_path / "summary.json").read_bytes() == (scored / "summary.json").read_bytes()
    assert read_summary(tmp_path) == summary


def test_manifest_round_trips(tmp_path: Path) -> None:
    frame = pl.DataFrame({"id": [f"r{i}" for i in range(20)], "g": [i // 2 for i in range(20)]})
    result = split(frame, group="g", id_column="id", sizes=[10, 10], names=["train", "test"])
    result.write(tmp_path / "split")
    manifest = read_manifest(tmp_path / "split")
    assert manifest == result.manifest
    write_manifest(tmp_path / "again.json", manifest)
    assert (tmp_path / "again.json").read_bytes() == (
        tmp_path / "split" / "manifest.json"
    ).read_bytes()
    assert read_manifest(tmp_path / "again.json") == manifest


def test_a_writer_refuses_to_replace_without_force(scored: Path, tmp_path: Path) -> None:
    from evalkit.errors import OutputExists

    summary = read_summary(scored)
    target = tmp_path / "summary.json"
    write_summary(target, summary)
    with pytest.raises(OutputExists):
        write_summary(target, summary)
    write_summary(target, summary, force=True)
    assert read_summary(target) == summary


def test_card_round_trips(scored: Path, tmp_path: Path) -> None:
    card = read_summary(scored).card
    assert card is not None
    write_card(tmp_path / "card.json", card)
    assert read_card(tmp_path / "card.json") == card
