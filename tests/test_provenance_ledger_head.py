"""The ledger's head and the test set's identity by content, at the library level."""

from __future__ import annotations

import errno
import hashlib
import json
from pathlib import Path
from types import SimpleNamespace

import polars as pl
import pytest

from evalkit.errors import UnreadableFile, UsageError
from evalkit.provenance.gold_content import content_sha256
from evalkit.provenance.ledger import LEDGER_NAME, append_look
from evalkit.provenance.ledger_head import head_path
from evalkit.provenance.ledger_state import read_ledger

GOLD = "9" * 64


def summary(predictions: str, content: str | None = "c" * 64, gold: str = GOLD) -> SimpleNamespace:
    normalized = {"name": "c", "version": 1}
    return SimpleNamespace(
        gold=SimpleNamespace(sha256=gold, path="split/test.parquet", content_sha256=content),
        contract=SimpleNamespace(
            name="c", version=1, fingerprint="sha256:1", normalized=normalized
        ),
        name=predictions,
        predictions=SimpleNamespace(sha256=predictions),
        card=None,
        evalkit_version="0.1.0",
    )


def test_the_head_names_the_last_line_and_each_look_its_line(tmp_path) -> None:
    ledger = tmp_path / LEDGER_NAME
    looks = [append_look(ledger, summary(f"p{k}"), purpose="rescore") for k in range(3)]
    assert [look.line for look in looks] == [1, 2, 3]
    raw = ledger.read_bytes().splitlines()
    assert [json.loads(line)["sha256"] for line in raw] == [look.entry["sha256"] for look in looks]
    head = json.loads(head_path(ledger).read_text())
    assert head == {"format": 1, "lines": 3, "last_sha256": hashlib.sha256(raw[2]).hexdigest()}
    assert head_path(ledger).name == "evalkit-ledger.head"
    assert all(look.entry["purpose"] == "rescore" for look in looks)
    assert looks[0].entry["test_set_sha256"] == "c" * 64


def test_a_failed_head_write_cuts_the_line_back(tmp_path, monkeypatch) -> None:
    ledger = tmp_path / LEDGER_NAME
    append_look(ledger, summary("p0"))
    before = ledger.read_bytes(), head_path(ledger).read_bytes()

    def full(*args: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("evalkit.provenance.ledger.write_head", full)
    with pytest.raises(UnreadableFile, match=r"No space left on device.*left as they were"):
        append_look(ledger, summary("p1"))
    assert (ledger.read_bytes(), head_path(ledger).read_bytes()) == before


def test_lines_after_the_head_are_looks_not_damage(tmp_path, monkeypatch) -> None:
    # A crash after the line was written and before the head was: the head lags.
    ledger = tmp_path / LEDGER_NAME
    append_look(ledger, summary("p0"))
    monkeypatch.setattr("evalkit.provenance.ledger.write_head", lambda *args: None)
    append_look(ledger, summary("p1"))
    monkeypatch.undo()
    report = read_ledger(ledger)
    assert report.chain_intact and report.gold[GOLD].looks == 2
    assert report.head is not None and report.head.lines == 1
    third = append_look(ledger, summary("p2"))
    assert third.head_problem is None and read_ledger(ledger).head.lines == 3  # type: ignore[union-attr]


@pytest.mark.parametrize("content", [b"", b"{}\n", b'{"format": 1, "lines": "2"}\n', b"\xff"])
def test_an_edited_head_burns_every_test_set(tmp_path, content) -> None:
    ledger = tmp_path / LEDGER_NAME
    append_look(ledger, summary("p0"))
    head_path(ledger).write_bytes(content)
    report = read_ledger(ledger)
    assert not report.chain_intact and report.gold[GOLD].state == "burned"
    assert "evalkit-ledger.head is not a ledger head" in report.chain_problems[0]
    assert append_look(ledger, summary("p1")).head_problem is not None


def test_lines_written_before_heads_need_none(tmp_path) -> None:
    ledger = tmp_path / LEDGER_NAME
    append_look(ledger, summary("p0"))
    entry = json.loads(ledger.read_text())
    entry["format"] = 1  # as evalkit wrote lines before it kept a head
    from evalkit.provenance.ledger import line_sha256

    entry["sha256"] = line_sha256(entry)
    ledger.write_text(json.dumps(entry) + "\n")
    head_path(ledger).unlink()
    assert read_ledger(ledger).chain_intact
    first_new = append_look(ledger, summary("p1"))
    assert first_new.head_problem is None and head_path(ledger).is_file()


def test_a_re_encoding_joins_the_count_and_a_new_file_does_not(tmp_path) -> None:
    ledger = tmp_path / LEDGER_NAME
    append_look(ledger, summary("p0", gold="a" * 64))
    append_look(ledger, summary("p1", gold="b" * 64))  # the same rows, another file
    other = append_look(ledger, summary("p2", gold="d" * 64, content="e" * 64))
    assert other.looks == 1
    report = read_ledger(ledger)
    assert report.gold["a" * 64].looks == 2 and report.gold["a" * 64].same_rows == ["b" * 64]
    assert report.gold["d" * 64].looks == 1 and report.gold["d" * 64].same_rows == []
    again = append_look(ledger, summary("p0", gold="b" * 64))  # already looked at as a*64
    assert (again.looks, again.new_look) == (2, False)


def _gold(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.select(
        pl.col("ticket_id").cast(pl.String).alias("id"),
        *[pl.col(c).alias(f"gold:{c}") for c in frame.columns if c != "ticket_id"],
    )


def _through(frame: pl.DataFrame, tmp_path: Path, kind: str) -> pl.DataFrame:
    path = tmp_path / f"t.{kind}"
    getattr(frame, f"write_{'ndjson' if kind == 'jsonl' else kind}")(path)
    from evalkit.io import read_table

    return read_table(path).frame


def test_the_content_hash_keeps_through_encodings_and_row_orders(tmp_path) -> None:
    frame = pl.DataFrame({
        "ticket_id": ["T1", "T2", "T3"], "category": ["billing", "a,b", "x\ny"],
        "amount": [12.0, None, 0.1], "order_id": [None, None, None], "ok": [True, False, None],
        "tags": [["a"], [], None],
    }, schema_overrides={"order_id": pl.String})  # fmt: skip
    expected = content_sha256(_gold(frame))
    assert content_sha256(_gold(frame.reverse())) == expected
    for kind in ("parquet", "jsonl"):
        assert content_sha256(_gold(_through(frame, tmp_path, kind))) == expected, kind
    integers = frame.with_columns(pl.Series("amount", [12, 3, 0]))  # 12.0 written as 12
    floats = frame.with_columns(pl.Series("amount", [12.0, 3.0, 0.0]))
    assert content_sha256(_gold(integers)) == content_sha256(_gold(floats))
    assert content_sha256(_gold(integers)) != expected  # 3 is not null, 0 is not 0.1


@pytest.mark.parametrize(
    "change",
    [
        lambda f: f.with_columns(pl.Series("category", ["billing", "a,b", "x\nz"])),
        lambda f: f.with_columns(pl.Series("ticket_id", ["T1", "T2", "T4"])),
        lambda f: f.with_columns(pl.Series("category", ["billin", "ga,b", "x\ny"])),
        lambda f: f.with_columns(pl.Series("category", ["billing", "a,b", None])),
        lambda f: f.with_columns(pl.Series("category", ["billing", "a,b", ""])),
        lambda f: f.rename({"category": "label"}),
        lambda f: f.head(2),
    ],
)
def test_the_content_hash_changes_with_any_id_value_or_column(change) -> None:
    frame = pl.DataFrame({"ticket_id": ["T1", "T2", "T3"], "category": ["billing", "a,b", "x\ny"]})
    assert content_sha256(_gold(change(frame))) != content_sha256(_gold(frame))


def test_a_head_is_never_taken_for_a_ledger(tmp_path) -> None:
    with pytest.raises(UsageError, match="a ledger's head has this name"):
        append_look(tmp_path / "looks.head", summary("p0"))
    from evalkit.provenance.ledger import check_ledger_file

    with pytest.raises(UsageError, match="pass the ledger"):
        check_ledger_file(tmp_path / "evalkit-ledger.head")
