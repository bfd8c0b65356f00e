"""A look is what was judged: attacks on the look count, through the command line and the library.

Each test reproduces a finding of the second trust review (issue 32) as a
user makes it, once with ``evalkit …`` and once with ``evalkit.score`` /
``evalkit.rescore`` / ``evalkit.gate``, since both are one run path:

* C1: several candidates in one predictions file (``--output-col``) were one
  look, keyed on the file; the same answers in another file another look.
* C2: a re-score (or score) under changed rules without a ledger left the
  test "reused" at the gate, though the ledger never saw those rules.

Every candidate's outputs are equally good (they differ in trailing
whitespace only), so only the test set's state decides the gate.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import polars as pl
import pytest
import yaml
from conftest import assert_one_line_error

import evalkit
from evalkit.errors import OutputExists
from evalkit.provenance.ledger import LEDGER_NAME
from evalkit.provenance.ledger_state import read_ledger

ROOT = Path(__file__).resolve().parents[1]
TRIAGE = ROOT / "contracts" / "ticket-triage.yaml"
GOOD = {"category": "billing", "priority": "low", "order_id": None, "amount": None}
COLUMNS = 5


def _output(i: int, k: int) -> str:
    return json.dumps({**GOOD, "amount": 12.0 + i}) + " " * k


@pytest.fixture
def data(tmp_path: Path) -> Path:
    """A gold split; one predictions file with five candidates' outputs; v1 and v2 contracts."""
    folder = tmp_path / "split"
    folder.mkdir()
    pl.DataFrame({
        "ticket_id": [f"T{i}" for i in range(12)], "category": ["billing"] * 12,
        "priority": ["low"] * 12, "order_id": [None] * 12, "amount": [12.0 + i for i in range(12)],
    }, schema_overrides={"order_id": pl.String}).write_parquet(folder / "test.parquet")  # fmt: skip
    rows = [
        {"ticket_id": f"T{i}", **{f"out{k}": _output(i, k) for k in range(COLUMNS)}}
        for i in range(12)
    ]
    (folder / "wide.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    v1 = yaml.safe_load(TRIAGE.read_text())
    v1["gate"]["require_fresh_test"] = True
    (tmp_path / "v1.yaml").write_text(yaml.safe_dump(v1))
    v2 = {**v1, "version": 2, "gate": {**v1["gate"], "min_format_validity": 0.5}}
    (tmp_path / "v2.yaml").write_text(yaml.safe_dump(v2))
    return folder


def _score(run_cli, data: Path, out: str, *extra: object, contract: str = "v1.yaml") -> Path:
    folder = data.parent / "runs" / out
    done = run_cli("score", "--contract", data.parent / contract, "--gold", data / "test.parquet",
                   "--out", folder, "--name", out, *extra)  # fmt: skip
    assert done.exit_code == 0, done.stderr
    return folder


def _looks(data: Path) -> tuple[int, str]:
    state = next(iter(read_ledger(data / LEDGER_NAME).gold.values()))
    return state.looks, state.state


# C1 — several candidates in one file are several looks.


def test_each_output_column_of_one_file_is_a_look(run_cli, data) -> None:
    runs = []
    for k in range(COLUMNS):
        runs.append(_score(run_cli, data, f"c{k}", "--pred", data / "wide.jsonl",
                           "--output-col", f"out{k}"))  # fmt: skip
        assert _looks(data)[0] == k + 1
    assert _looks(data) == (COLUMNS, "burned")
    report = run_cli("ledger", data / "test.parquet")
    assert "state      burned: 5 looks (5 candidates, 5 scores)" in report.stdout, report.stdout
    gate = run_cli("gate", runs[0], runs[1])
    assert gate.exit_code == 1, gate.stdout
    assert "the test set is burned (5 looks" in gate.stdout


def test_each_output_column_of_one_file_is_a_look_from_python(data) -> None:
    for k in range(COLUMNS):
        result = evalkit.score(
            data.parent / "v1.yaml", data / "test.parquet", data / "wide.jsonl",
            output_column=f"out{k}", name=f"c{k}",
        )  # fmt: skip
        assert result.look is not None and result.look.new_look
        assert result.look.looks == k + 1
    verdict = evalkit.gate(result, result)
    assert verdict.test_set is not None and verdict.test_set.state == "burned"
    assert "require_fresh_test" in [check.rule for check in verdict.failures]


def _narrow(data: Path, k: int, name: str) -> Path:
    """Column ``out{k}`` of the wide file alone, as ``output``, in another file and encoding."""
    frame = pl.read_ndjson(data / "wide.jsonl").select(
        "ticket_id", pl.col(f"out{k}").alias("output")
    )
    path = data / name
    if path.suffix == ".csv":
        frame.reverse().write_csv(path)  # another encoding and row order
    else:
        frame.write_parquet(path)
    return path


def test_the_same_answers_in_another_file_or_column_are_one_look(run_cli, data) -> None:
    _score(run_cli, data, "wide", "--pred", data / "wide.jsonl", "--output-col", "out2")
    for name in ("copy.csv", "copy.parquet"):
        again = run_cli("score", "--contract", data.parent / "v1.yaml", "--gold",
                        data / "test.parquet", "--pred", _narrow(data, 2, name),
                        "--out", data.parent / "runs" / name)  # fmt: skip
        assert again.exit_code == 0, again.stderr
        assert "so no new look (1 at this gold file" in again.stdout, again.stdout
    assert _looks(data) == (1, "seen")
    # Other answers in the same copy's shape are another look.
    _score(run_cli, data, "other", "--pred", _narrow(data, 3, "other.csv"))
    assert _looks(data) == (2, "reused")


def test_the_same_answers_in_another_file_are_one_look_from_python(data) -> None:
    contract = data.parent / "v1.yaml"
    first = evalkit.score(
        contract, data / "test.parquet", data / "wide.jsonl", output_column="out2"
    )
    copy = evalkit.score(contract, data / "test.parquet", _narrow(data, 2, "copy.csv"))
    assert first.look is not None and copy.look is not None
    assert not copy.look.new_look and copy.look.looks == 1
    # A frame of the same answers is the same look too: what was judged, not where it was.
    frame = pl.read_csv(data / "copy.csv")
    again = evalkit.score(contract, data / "test.parquet", frame)
    assert again.look is not None and not again.look.new_look
    assert first.summary.predictions.answers_sha256 == copy.summary.predictions.answers_sha256
    assert first.summary.predictions.sha256 != copy.summary.predictions.sha256


def test_on_duplicate_choosing_other_answers_is_another_look(run_cli, data) -> None:
    lines = (data / "wide.jsonl").read_text().splitlines()
    doubled = [json.loads(line) for line in lines]
    doubled += [{**row, "out0": row["out1"]} for row in doubled]  # each id twice
    (data / "doubled.jsonl").write_text("".join(json.dumps(row) + "\n" for row in doubled))
    common = ("--pred", data / "doubled.jsonl", "--output-col", "out0")
    _score(run_cli, data, "first", *common, "--on-duplicate", "first")
    _score(run_cli, data, "last", *common, "--on-duplicate", "last")
    assert _looks(data) == (2, "reused")


# C2 — rules the ledger never recorded are unrecorded, not seen.


def _two_recorded(run_cli, data: Path) -> tuple[Path, Path]:
    """A baseline and a candidate in files of their own, each look recorded under v1."""
    base = _score(run_cli, data, "base", "--pred", _narrow(data, 0, "p0.parquet"))
    cand = _score(run_cli, data, "cand", "--pred", _narrow(data, 1, "p1.parquet"))
    assert _looks(data) == (2, "reused")
    return base, cand


def test_a_rescore_without_a_ledger_under_new_rules_is_unrecorded(run_cli, data) -> None:
    base, cand = _two_recorded(run_cli, data)
    out = data.parent / "v2"
    done = run_cli("rescore", base, cand, "--contract", data.parent / "v2.yaml", "--out", out,
                   "--no-ledger")  # fmt: skip
    assert done.exit_code == 0, done.stderr
    gate = run_cli("gate", out / "base", out / "cand")
    assert gate.exit_code == 1, gate.stdout  # before: PASS, "reused (2 looks)"
    assert "the looks at this test set cannot be counted" in gate.stdout
    assert "no look of base, cand under these rules" in gate.stdout
    said = [line for line in done.stdout.splitlines() if line.startswith("ledger:")]
    assert said == ["ledger: not recorded (--no-ledger): gate counts this result as unrecorded"] * 2
    assert "was scored with --no-ledger" not in done.stdout  # it was not
    # With the ledger the same re-score burns the test, as it should.
    recorded = run_cli("rescore", base, cand, "--contract", data.parent / "v2.yaml", "--out",
                       data.parent / "v2-recorded")  # fmt: skip
    assert recorded.exit_code == 0, recorded.stderr
    assert "the rules changed after the test was seen" in run_cli("gate", data.parent /
        "v2-recorded" / "base", data.parent / "v2-recorded" / "cand").stdout  # fmt: skip


def test_a_score_without_a_ledger_under_new_rules_is_unrecorded(run_cli, data) -> None:
    _two_recorded(run_cli, data)
    runs = [
        _score(run_cli, data, f"v2-{k}", "--pred", data / f"p{k}.parquet", "--no-ledger",
               contract="v2.yaml")
        for k in (0, 1)
    ]  # fmt: skip
    gate = run_cli("gate", *runs)
    assert gate.exit_code == 1, gate.stdout
    assert "cannot be counted" in gate.stdout and "under these rules" in gate.stdout
    # The v1 results themselves are still recorded: the same answers under the same rules.
    v1 = [data.parent / "runs" / name for name in ("base", "cand")]
    assert run_cli("gate", *v1).exit_code == 0


def test_a_rescore_without_a_ledger_is_unrecorded_from_python(run_cli, data) -> None:
    base, cand = _two_recorded(run_cli, data)
    v2 = data.parent / "v2.yaml"
    scored = [
        evalkit.score(v2, data / "test.parquet", data / f"p{k}.parquet", no_ledger=True)
        for k in (0, 1)
    ]
    assert evalkit.gate(*scored).verdict == "fail"
    done = [evalkit.rescore(folder, v2, no_ledger=True) for folder in (base, cand)]
    verdict = evalkit.gate(*done)
    assert verdict.verdict == "fail" and verdict.test_set is not None
    assert not verdict.test_set.recorded
    assert [check.rule for check in verdict.failures] == ["require_fresh_test"]
    assert [result.unrecorded for result in done] == ["no_ledger", "no_ledger"]
    assert all(result.look is None and not result.same_rules for result in done)
    assert evalkit.rescore([base, cand], v2, no_ledger=True)[1].summary == done[1].summary


def test_a_rescore_of_a_result_without_a_ledger_says_so(run_cli, data) -> None:
    base = _score(run_cli, data, "base", "--pred", _narrow(data, 0, "p0.parquet"), "--no-ledger")
    done = run_cli(
        "rescore", base, "--contract", data.parent / "v2.yaml", "--out", data.parent / "v2"
    )
    assert done.exit_code == 0, done.stderr
    assert "ledger: not recorded: the result it replaces recorded no ledger" in done.stdout
    (result,) = evalkit.rescore([base], data.parent / "v2.yaml")
    assert result.unrecorded == "replaced_unrecorded" and result.look is None


# One run path: the command line writes what its library call writes.


def _files(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir())}


def _without_look(data: bytes) -> dict:
    summary = json.loads(data)
    return {**summary, "look": None}


def test_score_on_the_command_line_is_evalkit_score(run_cli, data) -> None:
    from evalkit.report.score_files import score_report_files

    common = ("--pred", data / "wide.jsonl", "--output-col", "out0")
    cli = _score(run_cli, data, "cli", *common, "--no-ledger")
    library = data.parent / "runs" / "library"
    evalkit.score(
        data.parent / "v1.yaml", data / "test.parquet", data / "wide.jsonl", output_column="out0",
        name="cli", no_ledger=True, out=library, extra_files=score_report_files,
    )  # fmt: skip
    assert _files(cli) == _files(library)  # byte for byte
    # With the ledger: the same files, but for the look (its own line), and lines alike.
    cli = _score(run_cli, data, "cli-look", *common, "--purpose", "p")
    evalkit.score(
        data.parent / "v1.yaml", data / "test.parquet", data / "wide.jsonl", output_column="out0",
        name="cli-look", purpose="p", out=library.with_name("lib-look"),
        extra_files=score_report_files,
    )  # fmt: skip
    first, second = _files(cli), _files(library.with_name("lib-look"))
    assert first.keys() == second.keys() == {"examples.parquet", "report.html", "summary.json"}
    assert first["examples.parquet"] == second["examples.parquet"]
    assert first["report.html"] == second["report.html"]
    assert _without_look(first["summary.json"]) == _without_look(second["summary.json"])
    lines = [json.loads(raw) for raw in (data / LEDGER_NAME).read_text().splitlines()]
    moving = ("time", "sha256", "prev_sha256")
    assert [{k: v for k, v in line.items() if k not in moving} for line in lines] == [
        {k: v for k, v in lines[0].items() if k not in moving}
    ] * 2


def test_rescore_on_the_command_line_is_evalkit_rescore(run_cli, data) -> None:
    from evalkit.report.score_files import score_report_files

    base, cand = _two_recorded(run_cli, data)
    v2 = data.parent / "v2.yaml"
    done = run_cli("rescore", base, cand, "--contract", v2, "--out", data.parent / "cli",
                   "--no-ledger")  # fmt: skip
    assert done.exit_code == 0, done.stderr
    results = evalkit.rescore([base, cand], v2, no_ledger=True, out=data.parent / "library",
                              extra_files=score_report_files)  # fmt: skip
    assert [result.folder for result in results] == [
        data.parent / "library" / n for n in ("base", "cand")
    ]
    for name in ("base", "cand"):
        assert _files(data.parent / "cli" / name) == _files(data.parent / "library" / name)
    # The same checks before anything is written: an existing folder without force.
    with pytest.raises(OutputExists) as refused:
        evalkit.rescore([base], v2, out=data.parent / "library")
    assert "pass force=True" in str(refused.value)
    assert_one_line_error(run_cli("rescore", base, "--contract", v2, "--out", data.parent / "cli"),
                          "folder exists already; pass --force")  # fmt: skip


def test_a_score_refused_by_its_output_reads_nothing_and_records_no_look(run_cli, data) -> None:
    shutil.copytree(data, data.parent / "taken")  # a folder evalkit did not write
    with pytest.raises(OutputExists) as refused:
        evalkit.score(
            data.parent / "v1.yaml", data / "test.parquet", data / "wide.jsonl",
            output_column="out0", out=data.parent / "taken",
        )  # fmt: skip
    assert "exists already" in str(refused.value)
    assert not (data / LEDGER_NAME).exists()


# The ledger file format: format 3 adds answers_sha256; older lines still read and count.


def _summary(answers: str | None, version: int = 1) -> SimpleNamespace:
    normalized = {"name": "c", "version": version}
    return SimpleNamespace(
        gold=SimpleNamespace(sha256="9" * 64, path="split/test.parquet", content_sha256=None),
        contract=SimpleNamespace(
            name="c", version=version, fingerprint=f"sha256:{version}", normalized=normalized
        ),
        name="r",
        predictions=SimpleNamespace(sha256="f" * 64, answers_sha256=answers),
        card=None,
        evalkit_version="0.1.0",
    )


def test_a_format_2_ledger_still_reads_and_its_lines_keep_their_looks(tmp_path: Path) -> None:
    from evalkit.provenance.ledger import append_look, holds_look, line_sha256
    from evalkit.provenance.ledger_head import Head, line_hash, write_head

    ledger = tmp_path / LEDGER_NAME
    append_look(ledger, _summary(None))
    # The line as evalkit wrote it before answers were hashed: format 2, no answers key.
    line = json.loads(ledger.read_text())
    del line["answers_sha256"]
    line.update(format=2, sha256=None)
    line["sha256"] = line_sha256({k: v for k, v in line.items() if k != "sha256"})
    body = json.dumps(line, separators=(",", ":")).encode()
    ledger.write_bytes(body + b"\n")
    write_head(ledger, Head(1, line_hash(body)))
    report = read_ledger(ledger)
    assert report.chain_intact, report.chain_problems
    assert (report.gold["9" * 64].looks, report.gold["9" * 64].state) == (1, "seen")
    # A format 3 line of the same file is keyed on its answers: a look of its own (the old
    # line cannot say which answers it judged), then the same answers again are none.
    first = append_look(ledger, _summary("a" * 64))
    again = append_look(ledger, _summary("a" * 64))
    assert (first.looks, first.new_look, again.looks, again.new_look) == (2, True, 2, False)
    assert first.entry["format"] == 3 and first.entry["answers_sha256"] == "a" * 64
    report = read_ledger(ledger)
    assert report.chain_intact and report.gold["9" * 64].looks == 2
    assert report.gold["9" * 64].candidates == 2
    # Which lines are a result's look: its gold, its answers and its rules.
    entries = [json.loads(raw) for raw in ledger.read_text().splitlines()]
    assert holds_look(entries, _summary("a" * 64))
    assert holds_look(entries[:1], _summary(None))  # a result from before answers: its file
    assert not holds_look(entries, _summary("b" * 64))  # other answers of the same file
    assert not holds_look(entries, _summary("a" * 64, version=2))  # rules never recorded


def test_the_answers_hash_is_the_documented_bytes() -> None:
    """``answers_sha256`` against the bytes docs/formats.md describes, built by hand."""
    import hashlib

    from evalkit.scoring.judged import answers_sha256

    # Gold ids out of order; T2 has no prediction; T1's output is null (a failed request);
    # outputs sit in another order than the gold ids (rows say where) and hold UTF-8.
    ids = pl.Series(["T3", "T1", "T2", "T0"])
    outputs = pl.Series(["ü{}", None, "x", "unused"], dtype=pl.String)
    rows = pl.Series([0, 1, None, 2], dtype=pl.UInt32)
    invalid = pl.Series([True, False, False, False])
    judged = [("T0", "x", False), ("T1", None, False), ("T3", "ü{}", True)]  # in id order

    def lengths(values: list[str | None]) -> bytes:
        return b"".join(len((v or "").encode()).to_bytes(4, "little") for v in values)

    def bits(flags: list[bool]) -> bytes:
        return bytes([sum(128 >> i for i, flag in enumerate(flags) if flag)])

    expected = hashlib.sha256(b"evalkit judged answers 1\x00" + (3).to_bytes(8, "little"))
    texts = [row[1] for row in judged]
    expected.update(lengths([row[0] for row in judged]) + b"T0T1T3")
    expected.update(bits([text is None for text in texts]))
    expected.update(lengths(texts) + "xü{}".encode())
    expected.update(bits([row[2] for row in judged]))
    assert answers_sha256(ids, outputs, rows, invalid) == expected.hexdigest()
    # Nothing judged is a hash too (no prediction matched: refused before scoring anyway).
    none = pl.Series([None] * 4, dtype=pl.UInt32)
    empty = hashlib.sha256(b"evalkit judged answers 1\x00" + (0).to_bytes(8, "little"))
    assert answers_sha256(ids, outputs, none) == empty.hexdigest()
