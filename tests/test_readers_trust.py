"""Issue 20, item 1 and the reading side of item 6: each failure the attack review found.

Every test here failed before the fix (the old behaviour is in its docstring)
and now passes: ids are text as written, a duplicate key is refused on every
reader path, a prediction file that matches no gold id is refused, pipes are
read once, FIFOs never hang, and hostile documents (alias bombs, deep
nesting) end in one line with exit 2.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import polars as pl
import pytest
from conftest import ROOT, assert_one_line_error

CONTRACT = {
    "name": "trust",
    "version": 1,
    "id": "qid",
    "class": "category",
    "fields": {"category": {"gold": "category"}},
}
ANSWER = '{"category": "billing"}'


@pytest.fixture
def case(tmp_path: Path) -> Path:
    (tmp_path / "c.json").write_text(json.dumps(CONTRACT))
    return tmp_path


def _jsonl(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def _summary(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text())


def test_csv_ids_with_leading_zeros_match_predictions(case: Path, run_cli) -> None:
    """Before: CSV ids 001 read as the integer 1, predictions "001" matched nothing (0/10)."""
    ids = [f"{i:03d}" for i in range(1, 11)]
    (case / "gold.csv").write_text("qid,category\n" + "".join(f"{i},billing\n" for i in ids))
    _jsonl(case / "pred.jsonl", [json.dumps({"qid": i, "output": ANSWER}) for i in ids])
    result = run_cli(
        "score",
        "--contract",
        case / "c.json",
        "--gold",
        case / "gold.csv",
        "--pred",
        case / "pred.jsonl",
        "--out",
        case / "out",
        "-q",
    )
    assert result.exit_code == 0, result.stderr
    overall = _summary(case / "out")["overall"]
    assert (overall["n"], overall["content_correct"]) == (10, 10)


def test_split_csv_keeps_ids_as_written(tmp_path: Path, run_cli) -> None:
    """Before: split --format csv rewrote the id 00008 as 8 in every output."""
    rows = "".join(f"{i:05d},g{i % 4},{'ab'[i % 2]},{i:03d}.50\n" for i in range(1, 41))
    (tmp_path / "items.csv").write_text("id,group,label,amount\n" + rows)
    result = run_cli(
        "split",
        tmp_path / "items.csv",
        "--out",
        tmp_path / "out",
        "--group",
        "group",
        "--id",
        "id",
        "--sizes",
        "20,10,10",
        "--format",
        "csv",
        "--quiet",
    )
    assert result.exit_code == 0, result.stderr
    written = "".join((tmp_path / "out" / f"{n}.csv").read_text() for n in ("train", "val", "test"))
    assert "00008," in written and "\n8," not in written
    assert "008.50" in written  # no other value rewritten either
    assignments = pl.read_parquet(tmp_path / "out" / "assignments.parquet")
    assert "00008" in assignments["id"].to_list()


def test_gold_ids_written_as_floats_are_refused(case: Path, run_cli) -> None:
    """Before: gold ids written 1.0 were read as "1.0" and matched nothing (exit 0)."""
    gold = _jsonl(
        case / "gold.jsonl",
        [json.dumps({"qid": 1, "category": "billing"}), '{"qid": 2.0, "category": "billing"}'],
    )
    pred = _jsonl(case / "pred.jsonl", [json.dumps({"qid": i, "output": ANSWER}) for i in (1, 2)])
    result = run_cli(
        "score",
        "--contract",
        case / "c.json",
        "--gold",
        gold,
        "--pred",
        pred,
        "--out",
        case / "out",
        "-q",
    )
    assert_one_line_error(result, f"{gold}:2", "qid", "2.0")


@pytest.mark.parametrize("nul", [False, True], ids=["fast", "line-by-line"])
def test_float_prediction_ids_are_refused_on_every_reader(case: Path, run_cli, nul: bool) -> None:
    """Before: integer gold with float prediction ids gave 10/10 on the fast reader and
    0/10 on the line-by-line reader (a \\u0000 in an output switches readers)."""
    gold = _jsonl(
        case / "gold.jsonl", [json.dumps({"qid": i, "category": "billing"}) for i in range(1, 11)]
    )
    output = json.dumps(ANSWER + ("\u0000" if nul else ""))
    pred = _jsonl(
        case / "pred.jsonl", [f'{{"qid": {i}.0, "output": {output}}}' for i in range(1, 11)]
    )
    result = run_cli(
        "score",
        "--contract",
        case / "c.json",
        "--gold",
        gold,
        "--pred",
        pred,
        "--out",
        case / "out",
        "-q",
    )
    assert_one_line_error(result, f"{pred}:1", "qid", "1.0")


@pytest.mark.parametrize("nul", [False, True], ids=["fast", "line-by-line"])
def test_duplicate_key_in_a_prediction_is_refused(case: Path, run_cli, nul: bool) -> None:
    """Before: "output": GOOD, "output": "garbage" scored 0.906 on one reader, 0 on the other."""
    gold = _jsonl(
        case / "gold.jsonl", [json.dumps({"qid": f"q{i}", "category": "billing"}) for i in range(5)]
    )
    tail = ' "note": "\\u0000"' if nul else ' "note": ""'
    lines = [json.dumps({"qid": f"q{i}", "output": ANSWER}) for i in range(5)]
    lines[3] = f'{{"qid": "q3", "output": {json.dumps(ANSWER)}, "output": "garbage",{tail}}}'
    pred = _jsonl(case / "pred.jsonl", lines)
    result = run_cli(
        "score",
        "--contract",
        case / "c.json",
        "--gold",
        gold,
        "--pred",
        pred,
        "--out",
        case / "out",
        "-q",
    )
    assert_one_line_error(result, f"{pred}:4", "'output'", "twice")


def test_duplicate_key_in_gold_is_refused(case: Path, run_cli) -> None:
    gold = _jsonl(
        case / "gold.jsonl",
        [
            '{"qid": "q1", "category": "billing"}',
            '{"qid": "q2", "category": "billing", "category": "x"}',
        ],
    )
    pred = _jsonl(case / "pred.jsonl", [json.dumps({"qid": "q1", "output": ANSWER})])
    result = run_cli(
        "score",
        "--contract",
        case / "c.json",
        "--gold",
        gold,
        "--pred",
        pred,
        "--out",
        case / "out",
        "-q",
    )
    assert_one_line_error(result, f"{gold}:2", "'category'", "twice")


def test_predictions_matching_no_gold_id_are_refused(case: Path, run_cli) -> None:
    """Before: a prediction file none of whose ids are in the gold scored 0% with exit 0."""
    gold = _jsonl(
        case / "gold.jsonl", [json.dumps({"qid": f"q{i}", "category": "billing"}) for i in range(5)]
    )
    pred = _jsonl(
        case / "pred.jsonl", [json.dumps({"qid": f"other-{i}", "output": ANSWER}) for i in range(5)]
    )
    result = run_cli(
        "score",
        "--contract",
        case / "c.json",
        "--gold",
        gold,
        "--pred",
        pred,
        "--out",
        case / "out",
        "-q",
    )
    assert_one_line_error(result, str(pred), "none of its 5 ids", "q0")


def _score_from_pipe(case: Path, data: bytes, *extra: str) -> subprocess.CompletedProcess:
    command = [
        sys.executable,
        "-m",
        "evalkit",
        "score",
        "--contract",
        str(case / "c.json"),
        "--gold",
        str(case / "gold.jsonl"),
        "--pred",
        "/dev/stdin",
        *extra,
    ]
    return subprocess.run(command, input=data, capture_output=True, cwd=ROOT, timeout=120)


def _openai_line(custom_id: str, content: str) -> str:
    body = {"choices": [{"index": 0, "message": {"role": "assistant", "content": content}}]}
    return json.dumps({"custom_id": custom_id, "response": {"status_code": 200, "body": body}})


def test_predictions_from_a_pipe_are_read_once_and_hashed(case: Path) -> None:
    """Before: --pred /dev/stdin (a pipe) was read as empty (180/180 missing, exit 0), and
    three different openai-batch candidates hashed to the same look."""
    _jsonl(
        case / "gold.jsonl", [json.dumps({"qid": f"q{i}", "category": "billing"}) for i in range(6)]
    )
    plain = "".join(json.dumps({"qid": f"q{i}", "output": ANSWER}) + "\n" for i in range(6))
    done = _score_from_pipe(case, plain.encode(), "--out", str(case / "plain"), "-q")
    assert done.returncode == 0, done.stderr
    summary = _summary(case / "plain")
    assert summary["overall"]["content_correct"] == 6
    assert summary["predictions"]["path"] == "/dev/stdin"
    hashes = set()
    for k, content in enumerate([ANSWER, '{"category": "x"}', "no json"]):
        batch = "".join(_openai_line(f"q{i}", content) + "\n" for i in range(6))
        out = case / f"batch{k}"
        done = _score_from_pipe(
            case, batch.encode(), "--pred-format", "openai-batch", "--out", str(out), "-q"
        )
        assert done.returncode == 0, done.stderr
        summary = _summary(out)
        assert summary["overall"]["missing"] == 0
        assert summary["predictions"]["sha256"] == hashlib.sha256(batch.encode()).hexdigest()
        hashes.add(summary["predictions"]["sha256"])
    assert len(hashes) == 3


@pytest.mark.parametrize("role", ["gold", "pred"])
def test_a_fifo_as_gold_or_predictions_does_not_hang(case: Path, role: str) -> None:
    """Before: a named pipe (FIFO) with no writer as gold or predictions hung forever."""
    _jsonl(case / "gold.jsonl", [json.dumps({"qid": "q1", "category": "billing"})])
    _jsonl(case / "pred.jsonl", [json.dumps({"qid": "q1", "output": ANSWER})])
    fifo = case / f"{role}.fifo.jsonl"
    os.mkfifo(fifo)
    files = {"gold": case / "gold.jsonl", "pred": case / "pred.jsonl", role: fifo}
    command = [
        sys.executable,
        "-m",
        "evalkit",
        "score",
        "--contract",
        str(case / "c.json"),
        "--gold",
        str(files["gold"]),
        "--pred",
        str(files["pred"]),
        "--out",
        str(case / "out"),
    ]
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 2, done.stderr
    assert "named pipe" in done.stderr and str(fifo) in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


BILLION_LAUGHS = """\
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
"""


def _in_time(function, seconds: float = 20.0):
    """Run ``function`` in a thread and fail the test (not hang it) past ``seconds``."""
    result: dict = {}

    def target() -> None:
        try:
            result["value"] = function()
        except BaseException as error:  # handed back to the test
            result["error"] = error

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still running after {seconds} s"
    if "error" in result:
        raise result["error"]
    return result["value"]


def test_yaml_alias_bomb_in_a_contract_schema(tmp_path: Path, run_cli) -> None:
    """Before: billion laughs in a contract's schema grew to 5.8 GB and aborted after 43 s."""
    contract = tmp_path / "c.yaml"
    bomb = "".join("      " + line + "\n" for line in BILLION_LAUGHS.splitlines())
    contract.write_text(
        "name: bomb\nversion: 1\nid: qid\nfields:\n  category: {gold: category}\n"
        "output:\n  parse: json\n"
        "  schema:\n    type: object\n    x-bomb:\n" + bomb
    )
    result = _in_time(lambda: run_cli("contract", "check", contract))
    assert_one_line_error(result, str(contract), "alias")


def test_yaml_alias_bomb_in_card_training(tmp_path: Path, run_cli, peft_adapters) -> None:
    """Before: billion laughs in card --training took 3.8 GB and timed out."""
    training = tmp_path / "training.yaml"
    training.write_text(BILLION_LAUGHS)
    adapter = next(iter(peft_adapters.values())).path
    result = _in_time(
        lambda: run_cli("card", adapter, "--training", training, "--json", tmp_path / "card.json")
    )
    assert_one_line_error(result, str(training), "alias")


DEEP = 100_000


def _deep_json() -> str:
    return "[" * DEEP + "]" * DEEP


def test_deep_json_contract_is_exit_2(tmp_path: Path, run_cli) -> None:
    """Before: 100k-deep JSON in a contract was exit 3 (RecursionError)."""
    contract = tmp_path / "c.json"
    contract.write_text(
        '{"name": "deep", "version": 1, "id": "q", "fields": {"c": {"gold": "c"}}, "x": '
        + _deep_json()
        + "}"
    )
    assert_one_line_error(run_cli("contract", "check", contract), str(contract), "nested")


def test_deep_json_manifest_is_exit_2(tmp_path: Path, run_cli) -> None:
    folder = tmp_path / "split"
    folder.mkdir()
    (folder / "manifest.json").write_text('{"splits": ' + _deep_json() + "}")
    result = run_cli("audit", folder, "--id", "id", "--text", "text")
    assert_one_line_error(result, str(folder / "manifest.json"), "nested")


def test_deep_json_model_config_is_exit_2(tmp_path: Path, run_cli) -> None:
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text('{"hidden_size": ' + _deep_json() + "}")
    result = run_cli("plan", "--config", folder, "--method", "lora", "--seq-len", "128")
    assert_one_line_error(result, "config.json", "nested")


@pytest.mark.parametrize("nul", [False, True], ids=["fast", "line-by-line"])
def test_deep_json_prediction_is_exit_2(case: Path, run_cli, nul: bool) -> None:
    gold = _jsonl(case / "gold.jsonl", [json.dumps({"qid": "q1", "category": "billing"})])
    extra = ', "n": "\\u0000"' if nul else ""
    pred = _jsonl(
        case / "pred.jsonl",
        [
            json.dumps({"qid": "q0", "output": ANSWER}),
            '{"qid": "q1", "output": "x", "deep": ' + _deep_json() + extra + "}",
        ],
    )
    result = run_cli(
        "score",
        "--contract",
        case / "c.json",
        "--gold",
        gold,
        "--pred",
        pred,
        "--out",
        case / "out",
        "-q",
    )
    assert_one_line_error(result, f"{pred}:2", "nested")


def test_a_deep_line_in_an_audited_split_is_exit_2_not_a_crash(tmp_path: Path) -> None:
    """Before: the audit's pyarrow reader was handed a 100,000-deep line: SIGSEGV (exit 139)."""
    _jsonl(tmp_path / "a.jsonl", ['{"id": "a1", "text": "x"}'])
    deep = tmp_path / "b.jsonl"
    _jsonl(deep, ['{"id": "b1", "text": "z", "d": ' + _deep_json() + "}"])
    command = [sys.executable, "-m", "evalkit", "audit", str(tmp_path / "a.jsonl"), str(deep),
               "--id", "id", "--text", "text", "--quiet"]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert f"{deep}:1: nested deeper than 100 levels" in done.stderr


def test_a_lone_surrogate_is_refused_not_rewritten(tmp_path: Path, run_cli) -> None:
    """Before: split read "x\\ud800y" as "x\\u0000y" and wrote that back."""
    rows = [f'{{"id": "i{i}", "g": "g{i}", "text": "x\\ud800y"}}' for i in range(6)]
    data = _jsonl(tmp_path / "s.jsonl", rows)
    result = run_cli("split", data, "--out", tmp_path / "out", "--group", "g", "--sizes",
                     "3,2,1", "--format", "jsonl")  # fmt: skip
    assert_one_line_error(result, f"{data}:1", "lone surrogate")
