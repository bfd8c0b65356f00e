"""Every fast reader path against the reference path, over one hostile corpus.

The reference reading of a JSONL file is :func:`evalkit.io._json_rules.reference_records`
(Python's json, record by record, every rule checked) with the values polars
gives over every line. Each fast path (the first-lines types with the flat key
check, pyarrow's parser, the prediction reader in pieces, the audit's exact
reader) must give the same verdict on every file here: the same error, or the
same table. The corpus holds the cases issue 20 found (ids 001 / 1.0 /
int-vs-float, a key given twice, a \\u0000 anywhere) and the usual suspects
(BOM, CRLF, blank lines, huge integers, unicode escapes, NaN, deep nesting,
a type or a key that appears only on the last line).
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

import evalkit.io._json_rules as jsonl
import evalkit.io._jsonl as _jsonl_module
from evalkit.errors import EvalkitError, MalformedFile
from evalkit.io import check_id_types, json_lines, read_table
from evalkit.io._jsonl import _read_tolerant, read_json_frame
from evalkit.io._prefix import PREFIX_LINES
from evalkit.scoring import predictions

PREFIX = [
    json.dumps({"id": f"r{i}", "output": f"text {i}", "n": i}) for i in range(PREFIX_LINES + 5)
]
INT_PREFIX = [json.dumps({"id": i, "output": f"text {i}", "n": i}) for i in range(PREFIX_LINES + 5)]
DEEP = 150


def _lines(*lines: str, prefix: list[str] | None = None) -> bytes:
    return "".join(line + "\n" for line in [*(prefix or []), *lines]).encode()


CORPUS: dict[str, bytes] = {
    "plain": _lines('{"id": "a", "output": "x", "n": 1}', '{"id": "b", "output": "y", "n": 2}'),
    "compact": _lines('{"id":"a","output":"x","n":1}', '{"id":"b","output":"y","n":2}'),
    "ids written 001": _lines('{"id": "001", "output": "x"}', '{"id": "002", "output": "y"}'),
    "integer ids": _lines('{"id": 1, "output": "x"}', '{"id": 2, "output": "y"}'),
    "ids written 1.0": _lines('{"id": 1.0, "output": "x"}', '{"id": 2.0, "output": "y"}'),
    "int then float ids": _lines('{"id": 1, "output": "x"}', '{"id": 2.0, "output": "y"}'),
    "float id on the last line": _lines('{"id": 7.5, "output": "x"}', prefix=INT_PREFIX),
    "text then number id": _lines('{"id": "a", "output": "x"}', '{"id": 2, "output": "y"}'),
    "number id on the last line": _lines('{"id": 3, "output": "x"}', prefix=PREFIX),
    "boolean id": _lines('{"id": "a", "output": "x"}', '{"id": true, "output": "y"}'),
    "object id": _lines('{"id": {"k": 1}, "output": "x"}'),
    "array id": _lines('{"id": [1], "output": "x"}'),
    "exponent id": _lines('{"id": 1e2, "output": "x"}'),
    "minus zero id": _lines('{"id": -0, "output": "x"}'),
    "huge integer id": _lines('{"id": 123456789012345678901234567890, "output": "x"}'),
    "huge integer value": _lines('{"id": "a", "output": "x", "n": 99999999999999999999999}'),
    "ISO date ids": _lines(
        '{"id": "2024-01-01", "output": "x"}', '{"id": "2024-01-02", "output": "y"}'
    ),
    "duplicate key": _lines('{"id": "a", "output": "GOOD", "output": "garbage"}'),
    "duplicate key, second null": _lines('{"id": "a", "output": "GOOD", "output": null}'),
    "duplicate id key": _lines('{"id": "a", "id": "b", "output": "x"}'),
    "duplicate nested key": _lines('{"id": "a", "output": "x", "meta": {"k": 1, "k": 2}}'),
    "duplicate key in a list": _lines('{"id": "a", "output": "x", "m": [{"r": 1, "r": 2}]}'),
    "duplicate escaped key": _lines('{"id": "a", "output": "x", "\\u006futput": "y"}'),
    "duplicate key and a NUL": _lines('{"id": "a", "output": "G", "output": "x", "z": "\\u0000"}'),
    "duplicate key on the last line": _lines(
        '{"id": "z", "output": "x", "output": "y", "n": 1}', prefix=PREFIX
    ),
    "NUL in a value": _lines('{"id": "a", "output": "x\\u0000y"}'),
    "NUL in a key": _lines('{"id": "a", "output": "x", "k\\u0000": 1}'),
    "lone surrogate": _lines('{"id": "a", "output": "x\\ud800y"}'),
    "unicode escapes": _lines(
        '{"id": "\\u00e9", "output": "\\u00e9t\\u00e9"}', '{"id": "é", "output": "été"}'
    ),
    "BOM": b"\xef\xbb\xbf" + _lines('{"id": "a", "output": "x"}'),
    "CRLF": b'{"id": "a", "output": "x"}\r\n{"id": "b", "output": "y"}\r\n',
    "blank lines": _lines(
        '{"id": "a", "output": "x"}', "", "   ", "\t", '{"id": "b", "output": "y"}'
    ),
    "no final newline": b'{"id": "a", "output": "x"}\n{"id": "b", "output": "y"}',
    "space before a colon": _lines('{"id" : "a", "output" : "x"}'),
    "escaped key": _lines('{"\\u0069d": "a", "output": "x"}'),
    "NaN": _lines('{"id": "a", "output": "x", "n": NaN}'),
    "Infinity": _lines('{"id": "a", "output": "x", "n": -Infinity}'),
    "number too large for a float": _lines('{"id": "a", "output": "x", "n": 1e400}'),
    "nested 150 deep": _lines('{"id": "a", "output": "x", "d": ' + "[" * DEEP + "]" * DEEP + "}"),
    "nested 99 deep": _lines('{"id": "a", "output": "x", "d": ' + "[" * 99 + "]" * 99 + "}"),
    "nested 5000 deep": _lines('{"id": "a", "output": "x", "d": ' + "[" * 5000 + "]" * 5000 + "}"),
    # pyarrow's parser crashes the process on such a line: it must never see it.
    "nested 100000 deep": _lines(
        '{"id": "a", "output": "x", "d": ' + "[" * 100_000 + "]" * 100_000 + "}"
    ),
    "not an object": _lines('{"id": "a", "output": "x"}', "[1, 2]"),
    "a string line": _lines('"just text"'),
    "trailing garbage": _lines('{"id": "a", "output": "x"} x'),
    "invalid UTF-8": b'{"id": "a", "output": "bad \xff byte"}\n',
    "type only on the last line": _lines('{"id": "z", "output": "x", "n": "seven"}', prefix=PREFIX),
    "key only on the last line": _lines('{"id": "z", "output": "x", "late": 1}', prefix=PREFIX),
    "object output": _lines('{"id": "a", "output": {"k": 1}}'),
    "object output on the last line": _lines('{"id": "z", "output": {"k": 1}}', prefix=PREFIX),
    "number output": _lines('{"id": "a", "output": 5}'),
    "null output": _lines('{"id": "a", "output": null}', '{"id": "b", "output": "y"}'),
    "no output key": _lines('{"id": "a", "text": "x"}'),
    "missing id": _lines('{"id": "a", "output": "x"}', '{"output": "y"}'),
    "null id": _lines('{"id": null, "output": "y"}'),
    "empty object line": _lines('{"id": "a", "output": "x"}', "{}"),
    "mixed struct fields": _lines(
        '{"id": "a", "output": "x", "m": {"p": 1}}', '{"id": "b", "output": "y", "m": {"q": "s"}}'
    ),
    "long line": _lines('{"id": "a", "output": "' + "w " * 5000 + '", "l": [1]}'),
    "long line, many brackets": _lines(
        '{"id": "a", "output": "x", "l": [' + ",".join(["[1]"] * 3000) + "]}"
    ),
}
EMPTY = {"empty": b"", "only blank lines": b"\n  \n\r\n"}


def _outcome(function, *args, **kwargs):
    """("ok", value) or ("error", exit code, message) — a verdict to compare."""
    try:
        return ("ok", function(*args, **kwargs))
    except EvalkitError as error:
        return ("error", error.exit_code, error.message)


def _reference_table(path: Path, ids: list[str]) -> pl.DataFrame:
    """The reference reading of a table: every rule, then polars over every line."""
    data = path.read_bytes()
    jsonl.check_records(data, str(path), ids, force_reference=True)
    body = data.removeprefix(jsonl.UTF8_BOM)
    if not body.strip():
        return pl.DataFrame()
    try:
        frame = pl.read_ndjson(body, infer_schema_length=None)
    except pl.exceptions.SchemaError:
        frame = _read_tolerant(json_lines(body, str(path)))
    except pl.exceptions.PolarsError as error:
        raise MalformedFile(
            f"{path}: cannot read as jsonl: {str(error).splitlines()[0]}"
        ) from error
    check_id_types(frame, ids, str(path))
    return frame


def _same(expected, got, case: str) -> None:
    assert expected[0] == got[0], (case, expected, got)
    if expected[0] == "error":
        assert expected[1:] == got[1:], case
        return
    left, right = expected[1], got[1]
    if isinstance(left, pl.DataFrame):
        assert left.schema == right.schema, case
        assert left.equals(right), case
    else:
        assert left == right, case


@pytest.fixture(params=sorted({**CORPUS, **EMPTY}))
def corpus_file(request, tmp_path: Path) -> tuple[str, Path]:
    case = request.param
    path = tmp_path / "data.jsonl"
    path.write_bytes({**CORPUS, **EMPTY}[case])
    return case, path


@pytest.mark.parametrize("ids", [[], ["id"]], ids=["no id column", "id column"])
def test_table_readers_agree(corpus_file, ids, monkeypatch: pytest.MonkeyPatch) -> None:
    case, path = corpus_file
    expected = _outcome(_reference_table, path, ids)
    read = lambda **options: read_table(path, **options).frame  # noqa: E731
    _same(expected, _outcome(read, ids=ids), f"{case} (small-file path)")
    monkeypatch.setattr(jsonl, "REFERENCE_BYTES", 0)  # flat lines proven by polars, or pyarrow
    _same(expected, _outcome(read, ids=ids), f"{case} (mid-size path)")
    monkeypatch.setattr(_jsonl_module, "FLAT_BYTES", 0)  # pyarrow vouches when it can
    _same(expected, _outcome(read, ids=ids), f"{case} (pyarrow path)")
    if expected[0] == "ok" and {"id", "output"} <= set(expected[1].columns):
        want = ("ok", expected[1].select("id", "output"))
        _same(want, _outcome(read, columns=["id", "output"], ids=ids), case)


def _reference_predictions(path: Path) -> pl.DataFrame:
    data = path.read_bytes()
    return predictions._read_json_records(data, str(path), "id", "output")


@pytest.mark.parametrize("piece_bytes", [64 << 20, 300], ids=["whole", "pieces"])
def test_prediction_readers_agree(
    corpus_file, piece_bytes: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    case, path = corpus_file
    expected = _outcome(_reference_predictions, path)
    if expected[0] == "ok" and expected[1].height == 0:
        return  # no records: read_predictions' caller refuses it (tested elsewhere)
    monkeypatch.setattr(jsonl, "REFERENCE_BYTES", 0)
    monkeypatch.setattr(predictions, "PIECE_BYTES", piece_bytes)
    got = _outcome(lambda: predictions.read_predictions(path, default_id="id").frame)
    _same(expected, got, case)


def test_the_pyarrow_reader_never_takes_what_the_reference_refuses(
    corpus_file, monkeypatch: pytest.MonkeyPatch
) -> None:
    case, path = corpus_file
    reference = _outcome(_reference_table, path, [])
    if reference[0] == "error":
        monkeypatch.setattr(jsonl, "REFERENCE_BYTES", 0)
        lines = json_lines(path.read_bytes(), str(path))
        assert _outcome(lambda: read_json_frame(lines).arrow)[0] == "error", case


def test_the_corpus_holds_each_verdict() -> None:
    """The corpus is not all-pass or all-fail: each kind of verdict occurs (so it can fail)."""
    verdicts = {}
    for case, data in CORPUS.items():
        try:
            jsonl.check_records(data, case, ["id"], force_reference=True)
            verdicts[case] = "ok"
        except EvalkitError as error:
            verdicts[case] = error.message
    assert verdicts["plain"] == verdicts["integer ids"] == verdicts["ids written 001"] == "ok"
    assert "twice" in verdicts["duplicate key"] and "twice" in verdicts["duplicate escaped key"]
    assert "data:" not in verdicts["duplicate key"]  # named as case:line
    assert verdicts["duplicate key on the last line"].startswith(
        f"duplicate key on the last line:{PREFIX_LINES + 6}:"
    )
    assert "written 1.0" in verdicts["ids written 1.0"]
    assert "written 7.5" in verdicts["float id on the last line"]
    assert "boolean" in verdicts["boolean id"]
    assert "nested deeper than 100" in verdicts["nested 150 deep"]
    assert verdicts["nested 99 deep"] == "ok"
    assert "NaN" in verdicts["NaN"]
    assert verdicts["huge integer id"] == "ok"
