"""The one loader of JSON and YAML documents: bounds a hostile document meets everywhere."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from evalkit.errors import UnreadableFile
from evalkit.io import (
    MAX_DEPTH,
    DocumentError,
    load_json,
    load_yaml,
    parse_json,
    parse_yaml,
)


def test_yaml_aliases_within_bounds_are_read() -> None:
    text = "base: &b {k: [1, 2, 3]}\ncopy: *b\nagain: *b\n"
    assert parse_yaml(text, "f.yaml") == {"base": {"k": [1, 2, 3]}} | {
        "copy": {"k": [1, 2, 3]},
        "again": {"k": [1, 2, 3]},
    }


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("a: &a [*a]\n", "refers to the node that contains it"),
        ("a: 1\nb: 2\na: 3\n", "f.yaml:3: key 'a' is given twice"),
        ("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), f"nested deeper than {MAX_DEPTH}"),
        ("!!python/object/apply:os.system [echo hi]", "not valid YAML"),
        ("a: [1, 2\n", "not valid YAML"),
    ],
)
def test_hostile_yaml_is_one_error(text: str, fragment: str) -> None:
    with pytest.raises(DocumentError, match=fragment.replace("[", r"\[")):
        parse_yaml(text, "f.yaml")


def test_alias_expansion_is_bounded_by_the_written_size() -> None:
    """Ten levels of ten aliases: 10**10 nodes from 200 written ones, refused at once."""
    lines = ['l0: &l0 ["x","x","x","x","x","x","x","x","x","x"]']
    for level in range(1, 10):
        lines.append(f"l{level}: &l{level} [" + ",".join([f"*l{level - 1}"] * 10) + "]")
    with pytest.raises(DocumentError, match="aliases expand"):
        parse_yaml("\n".join(lines), "bomb.yaml")
    # Three levels (1,000 strings from ~40 written nodes) stay under the floor: fine.
    assert len(parse_yaml("\n".join(lines[:3]), "ok.yaml")["l2"]) == 10


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ('{"a": 1,\n "a": 2}', "f.json:2: key 'a' is given twice"),
        ("[" * 100_000 + "]" * 100_000, f"nested deeper than {MAX_DEPTH}"),
        ("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), f"nested deeper than {MAX_DEPTH}"),
        ('{"a": NaN}', "NaN is not a JSON value"),
        ('{"a": 1', "not valid JSON"),
    ],
)
def test_hostile_json_is_one_error(text: str, fragment: str) -> None:
    with pytest.raises(DocumentError, match=fragment):
        parse_json(text, "f.json")


def test_json_at_the_depth_limit_is_read() -> None:
    assert parse_json("[" * MAX_DEPTH + "]" * MAX_DEPTH, "f.json") == parse_json(
        "[" * MAX_DEPTH + "]" * MAX_DEPTH, "g.json"
    )


def test_a_fifo_is_refused_without_opening_it(tmp_path: Path) -> None:
    fifo = tmp_path / "contract.yaml"
    os.mkfifo(fifo)
    for load in (load_json, load_yaml):
        with pytest.raises(UnreadableFile, match="named pipe"):
            load(fifo)  # opening it would block: nothing writes to it
