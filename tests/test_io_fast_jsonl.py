"""JSONL read with the types of its first lines gives what whole-file inference gives.

The reference is polars itself with ``infer_schema_length=None`` (or, for
types polars cannot unify, read_table's reading of each column on its own):
the same frame (values, types, the same columns) or, where it fails, a failure. Files are
built so that what matters shows only after the prefix: a late type, a late
key, a late value in a column or list that was all null, a late struct field.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import evalkit.io._json_rules
import evalkit.io._jsonl
import evalkit.io._prefix as fast_jsonl
from evalkit.errors import MalformedFile
from evalkit.io import json_lines, read_table
from evalkit.io._jsonl import _read_tolerant


@pytest.fixture(autouse=True, params=["small-file path", "mid-size path", "pyarrow path"])
def reader_path(request, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test three times: as a small file (polars with the first lines' types, checked
    by the reference reader), as a mid-size one (flat lines proven by polars, else pyarrow)
    and as a large one (pyarrow's parser reads and vouches)."""
    if request.param != "small-file path":
        monkeypatch.setattr(evalkit.io._json_rules, "REFERENCE_BYTES", 0)
    if request.param == "pyarrow path":
        monkeypatch.setattr(evalkit.io._jsonl, "FLAT_BYTES", 0)
    return request.param


def _write(path: Path, rows: list[object], raw_tail: str = "") -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows) + raw_tail)
    return path


def _whole_file(path: Path) -> pl.DataFrame | None:
    """What read_table promises without prefix types: polars' whole-file inference, or
    (types polars cannot unify) each column typed on its own; None: a read error."""
    try:
        return pl.read_ndjson(path, infer_schema_length=None)
    except pl.exceptions.SchemaError:
        return _read_tolerant(json_lines(path.read_bytes(), str(path)))
    except pl.exceptions.PolarsError:
        return None


def _assert_as_whole_file(path: Path, columns: list[str] | None = None) -> None:
    expected = _whole_file(path)
    if expected is None:
        with pytest.raises(MalformedFile):
            _ = read_table(path, columns=columns).frame
        return
    if columns is not None and all(name in expected.columns for name in columns):
        expected = expected.select(columns)
    got = read_table(path, columns=columns).frame
    # Column order is compared as a set: JSON objects are unordered (RFC 8259), and polars'
    # whole-file inference itself does not keep first appearance ({"b"} then {"a", "b"}
    # gives a, b), while pyarrow's parser does. Names, types and values must agree.
    assert dict(got.schema) == dict(expected.schema)
    if got.columns != expected.columns:
        got = got.select(expected.columns)
    assert got.equals(expected)


PREFIX = [{"id": i, "name": f"n{i}", "score": 0.5} for i in range(fast_jsonl.PREFIX_LINES + 20)]
LATE = {
    "string in an integer column": {"id": "x", "name": "n", "score": 0.5},
    "float in an integer column": {"id": 1.5, "name": "n", "score": 0.5},
    "number in a string column": {"id": 1, "name": 7, "score": 0.5},
    "object in a string column": {"id": 1, "name": {"a": 1}, "score": 0.5},
    "integer in a float column": {"id": 1, "name": "n", "score": 3},
    "new key": {"id": 1, "name": "n", "score": 0.5, "late": True},
    "new key only": {"late": "x"},
    "missing keys": {},
    "huge integer": {"id": 2**70, "name": "n", "score": 0.5},
}


@pytest.mark.parametrize("case", sorted(LATE))
def test_a_type_that_shows_only_at_the_last_line(tmp_path: Path, case: str) -> None:
    path = _write(tmp_path / "t.jsonl", [*PREFIX, LATE[case]])
    _assert_as_whole_file(path)
    _assert_as_whole_file(path, ["id", "name"])
    _assert_as_whole_file(path, ["late"])


def test_a_conflict_in_a_key_that_only_shows_late(tmp_path: Path) -> None:
    path = _write(tmp_path / "t.jsonl", [*PREFIX, {"id": 1, "d": [1]}, {"id": 2, "d": {"p": 1}}])
    _assert_as_whole_file(path)
    _assert_as_whole_file(path, ["id"])
    assert read_table(path, columns=["id"]).frame["id"].to_list()[-2:] == [1, 2]


def test_a_late_column_is_read_with_its_values(tmp_path: Path) -> None:
    path = _write(tmp_path / "t.jsonl", [*PREFIX, {"id": 0, "extra": [1, 2]}])
    frame = read_table(path).frame
    assert frame["extra"].to_list()[-1] == [1, 2]
    assert frame.columns == ["id", "name", "score", "extra"]


def test_late_values_in_all_null_and_nested_columns(tmp_path: Path) -> None:
    rows: list[object] = [
        {"id": i, "tags": [], "none": None, "meta": {"a": 1}} for i in range(1100)
    ]
    rows.append({"id": 1, "tags": [3], "none": "x", "meta": {"a": 1, "b": "new"}})
    path = _write(tmp_path / "t.jsonl", rows)
    _assert_as_whole_file(path)
    assert read_table(path).frame["meta"].to_list()[-1] == {"a": 1, "b": "new"}
    assert read_table(path, columns=["tags"]).frame["tags"].to_list()[-1] == [3]


def test_a_bad_last_line_is_named(tmp_path: Path) -> None:
    path = _write(tmp_path / "t.jsonl", PREFIX, raw_tail='{"id": 3, "name": \n')
    with pytest.raises(MalformedFile, match=rf"t.jsonl:{len(PREFIX) + 1}: not a JSON object"):
        _ = read_table(path).frame


def test_bom_and_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + b'{"id": 1}\n\n  \n{"id": 2, "t": "x"}\r\n')
    frame = read_table(path).frame
    assert frame.rows() == [(1, None), (2, "x")]


def test_columns_missing_from_the_file_give_every_column(tmp_path: Path) -> None:
    path = _write(tmp_path / "t.jsonl", [{"a": 1, "b": 2}])
    assert read_table(path, columns=["a", "nope"]).frame.columns == ["a", "b"]
    assert read_table(path, columns=["b", "b"]).frame.columns == ["b"]


def test_the_key_pattern_rejects_what_it_cannot_vouch_for() -> None:
    pattern = fast_jsonl.known_keys_pattern(["a", "b"])
    lines = pl.Series(
        [
            '{"a": 1, "b": "x, \\"c\\": 2"}',  # a key-like text inside a string
            '{"a": [1, "]"], "b": null}',
            "   ",
            '{"a": 1, "c": 2}',  # an unknown key
            '{"a": {"b": 1}}',  # a nested object
            '{"\\u0061": 1}',  # an escaped key
            '{"a": [[1]]}',
        ]
    )
    assert lines.str.contains(pattern).to_list() == [True, True, True, False, False, False, False]


VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=4),
    st.lists(st.one_of(st.none(), st.integers(-5, 5), st.text(max_size=2)), max_size=2),
    st.dictionaries(st.sampled_from(["p", "q"]), st.integers(-5, 5), max_size=2),
)
ROWS = st.lists(
    st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), VALUES, max_size=4),
    min_size=1,
    max_size=12,
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(head=ROWS, tail=ROWS, columns=st.sampled_from([None, ["a"], ["a", "b"], ["d", "c"]]))
def test_random_files_read_as_whole_file_inference_reads_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, head: list[object], tail: list[object],
    columns: list[str] | None,
) -> None:  # fmt: skip
    # A short prefix, so that the tail is what the prefix types never saw.
    monkeypatch.setattr(fast_jsonl, "PREFIX_LINES", len(head))
    path = _write(tmp_path / "random.jsonl", [*head, *tail])
    _assert_as_whole_file(path, columns)
