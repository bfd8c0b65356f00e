"""Every gold type with every matcher, each against a hand-worked case.

Gold types as the table readers give them: Boolean, integer, float, string,
null (a column with no value), list, and a Parquet category column.
Matchers: exact, normalized, number, set (docs/contracts.md), and the
``parse: label`` field. For each case the expected match of every row is
worked out by hand from the documented rules, written next to the row.
Combinations that cannot make sense are exit 2 naming the field, the column
and its type, before any output is judged.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from conftest import assert_one_line_error

from evalkit import score
from evalkit.errors import InvalidContract

ABSENT = object()


def _contract(tmp_path: Path, field: dict[str, Any], **extra: Any) -> Path:
    document = {"name": "types", "version": 1, "id": "id", "fields": {"value": field}, **extra}
    path = tmp_path / "contract.json"
    path.write_text(json.dumps(document))
    return path


def _gold(tmp_path: Path, values: list[Any], fmt: str = "jsonl") -> Path:
    ids = [f"r{i}" for i in range(len(values))]
    if fmt == "parquet":
        path = tmp_path / "gold.parquet"
        pl.DataFrame({"id": ids, "gold": values}).write_parquet(path)
        return path
    path = tmp_path / "gold.jsonl"
    rows = zip(ids, values, strict=True)
    path.write_text("".join(json.dumps({"id": i, "gold": v}) + "\n" for i, v in rows))
    return path


def _predictions(tmp_path: Path, answers: list[Any]) -> Path:
    lines = []
    for index, answer in enumerate(answers):
        output = answer if isinstance(answer, str) and answer.startswith("@") else None
        if output is not None:
            text = output[1:]  # a raw output (parse: label)
        else:
            text = json.dumps({} if answer is ABSENT else {"value": answer})
        lines.append(json.dumps({"id": f"r{index}", "output": text}))
    path = tmp_path / "pred.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def _matches(tmp_path: Path, field: dict[str, Any], rows: list[tuple[Any, Any, bool]],
             fmt: str = "jsonl", **extra: Any) -> None:  # fmt: skip
    gold = _gold(tmp_path, [row[0] for row in rows], fmt)
    pred = _predictions(tmp_path, [row[1] for row in rows])
    result = score(_contract(tmp_path, field, **extra), gold, pred)
    got = result.examples.sort("id")["match.value"].to_list()
    expected = [row[2] for row in rows]
    assert got == expected, list(zip(rows, got, strict=True))


# (gold value, predicted value, match?) - worked out from the rules by hand.
CASES: dict[str, tuple[dict[str, Any], list[tuple[Any, Any, bool]]]] = {
    "boolean-exact": (
        {"gold": "gold", "match": "exact"},
        [
            (True, True, True),
            (False, False, True),
            (True, False, False),
            (True, "true", False),  # a string never equals a Boolean
            (True, 1, False),  # nor a number
            (False, 0, False),
            (None, None, True),  # a null gold expects null or an absent key
            (None, ABSENT, True),
            (None, False, False),
        ],
    ),
    "boolean-normalized": (
        {"gold": "gold", "match": "normalized"},
        [
            (True, True, True),
            (False, True, False),
            (True, "True", False),  # other types: as exact
            (None, ABSENT, True),
        ],
    ),
    "integer-exact": (
        {"gold": "gold", "match": "exact"},
        [
            (1, 1, True),
            (1, 1.0, True),  # 1 == 1.0
            (2, "2", False),
            (9007199254740993, 9007199254740993, True),
            (9007199254740993, 9007199254740992, False),  # beyond float precision: still told apart
            (3, True, False),
            (None, ABSENT, True),
        ],
    ),
    "integer-normalized": (
        {"gold": "gold", "match": "normalized"},
        [
            (7, 7, True),
            (7, " 7", False),
        ],
    ),
    "integer-number": (
        {"gold": "gold", "match": "number", "tolerance": 0.5},
        [
            (1, 1.4, True),
            (1, 1.5, True),  # the tolerance is inclusive
            (2, 2.6, False),
            (3, "3", False),  # a string is not a number
            (None, ABSENT, True),
        ],
    ),
    "float-exact": (
        {"gold": "gold", "match": "exact"},
        [
            (0.5, 0.5, True),
            (2.0, 2, True),
            (2.5, 2.50, True),
            (0.1, 0.10000001, False),
            (None, 0, False),
        ],
    ),
    "float-number": (
        {"gold": "gold", "match": "number", "tolerance": 0.01},
        [
            (12.34, 12.33, True),  # 0.01 apart in decimal (binary floating point slack)
            (12.34, 12.32, False),
            (-1.0, -1, True),
        ],
    ),
    "string-exact": (
        {"gold": "gold", "match": "exact"},
        [
            ("a", "a", True),
            ("a", "A", False),
            ("1", 1, False),
            ("true", True, False),
            ("", "", True),
        ],
    ),
    "string-normalized": (
        {"gold": "gold", "match": "normalized"},
        [
            ("Hello  World", "hello world", True),
            ("ＡＢＣ", "abc", True),  # NFKC: full-width letters
            ("abc", "abd", False),
            ("1", 1, False),
        ],
    ),
    "string-number": (
        {"gold": "gold", "match": "number", "tolerance": 0},
        [
            ("1.5", 1.5, True),  # a text gold column of decimal numbers, as CSV files hold them
            ("2", 2.0, True),
            ("2", "2", False),
            (None, ABSENT, True),
        ],
    ),
    "string-set": (
        {"gold": "gold", "match": "set"},
        [
            ('["a", "b"]', ["b", "a"], True),  # JSON text of an array
            ('["a", "b"]', ["a"], False),
            ("[]", [], True),
        ],
    ),
    "null-exact": (
        {"gold": "gold", "match": "exact"},
        [
            (None, None, True),
            (None, ABSENT, True),
            (None, "x", False),
        ],
    ),
    "null-number": (
        {"gold": "gold", "match": "number", "tolerance": 1},
        [
            (None, ABSENT, True),
            (None, 0, False),
        ],
    ),
    "null-set": (
        {"gold": "gold", "match": "set"},
        [
            (None, None, True),
            (None, [], False),
        ],
    ),
    "list-exact": (
        {"gold": "gold", "match": "exact"},
        [
            ([1, 2], [1, 2], True),
            ([1, 2], [1.0, 2], True),  # 1 == 1.0 inside a list too
            ([1, 2], [2, 1], False),  # exact: order counts
            ([1, 2], ["1", 2], False),
            ([1, 2], 1, False),
            (None, ABSENT, True),
        ],
    ),
    "list-normalized": (
        {"gold": "gold", "match": "normalized"},
        [
            ([3], [3.0], True),
            ([3], [4], False),
        ],
    ),
    "list-set": (
        {"gold": "gold", "match": "set"},
        [
            ([1, 2], [2, 1, 1], True),
            ([1.0, 2.5], [1, 2.5], True),  # set members compare as numbers
            ([1, 2], [1], False),  # F1 = 2*1/(2+1) = 0.67 < 1
            ([], [], True),
            ([1], "1", False),
        ],
    ),
    "list-set-min-f1": (
        {"gold": "gold", "match": "set", "min_f1": 0.5},
        [
            (["a", "b"], ["a", "c"], True),  # F1 = 2*1/(2+2) = 0.5
            (["a", "b"], ["c"], False),  # F1 = 0
        ],
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_gold_type_with_matcher(tmp_path: Path, case: str) -> None:
    field, rows = CASES[case]
    _matches(tmp_path, field, rows)


def test_gold_read_from_parquet_keeps_its_types(tmp_path: Path) -> None:
    rows = [(True, True, True), (False, "false", False), (None, ABSENT, True)]
    _matches(tmp_path, {"gold": "gold", "match": "exact"}, rows, fmt="parquet")


def test_a_category_column_compares_as_text(tmp_path: Path) -> None:
    ids = ["r0", "r1", "r2"]
    gold = tmp_path / "gold.parquet"
    frame = pl.DataFrame({"id": ids, "gold": ["billing", "shipping", "billing"]})
    frame.with_columns(pl.col("gold").cast(pl.Categorical)).write_parquet(gold)
    pred = _predictions(tmp_path, ["billing", "billing", "Billing"])
    for match, expected in (("exact", [True, False, False]), ("normalized", [True, False, True])):
        result = score(_contract(tmp_path, {"gold": "gold", "match": match}), gold, pred)
        assert result.examples.sort("id")["match.value"].to_list() == expected, match


@pytest.mark.parametrize(
    ("labels", "values", "outputs", "expected"),
    [
        (["0", "1"], [0, 1, 1], ["@0", "@1", "@0"], [True, True, False]),
        (
            ["true", "false"],
            [True, False, None],
            ["@true", "@true", "@false"],
            [True, False, False],
        ),
        (["yes", "no"], ["yes", "no", None], ["@yes", "@YES.", "@maybe"], [True, False, False]),
    ],
)
def test_label_fields_compare_the_label_with_gold_as_text(
    tmp_path: Path, labels, values, outputs, expected
) -> None:
    output = {"parse": "label", "labels": labels}
    contract = _contract(tmp_path, {"gold": "gold", "match": "exact"}, output=output)
    gold, pred = _gold(tmp_path, values), _predictions(tmp_path, outputs)
    result = score(contract, gold, pred)
    assert result.examples.sort("id")["match.value"].to_list() == expected


@pytest.mark.parametrize(
    ("field", "values", "fragments"),
    [
        ({"match": "number"}, [True, False], ["match: number", "Boolean"]),
        ({"match": "number"}, [[1], [2]], ["match: number", "list"]),
        ({"match": "number"}, ["1.5", "about 2"], ["match: number", "'about 2'", "r1"]),
        ({"match": "set"}, [True, False], ["match: set", "Boolean"]),
        ({"match": "set"}, [1, 2], ["match: set", "integer"]),
        ({"match": "set"}, [0.5, 2.0], ["match: set", "float"]),
        ({"match": "set"}, ['["a"]', "a, b"],
         ["match: set", "'a, b'", "r1", "JSON text of an array"]),
    ],
)  # fmt: skip
def test_a_matcher_that_cannot_apply_is_one_line(
    run_cli, tmp_path: Path, field, values, fragments
) -> None:
    contract = _contract(tmp_path, {"gold": "gold", **field})
    gold, pred = _gold(tmp_path, values), _predictions(tmp_path, [1] * len(values))
    with pytest.raises(InvalidContract):
        score(contract, gold, pred)
    result = run_cli("score", "--contract", contract, "--gold", gold, "--pred", pred,
                     "--out", tmp_path / "out", "--no-ledger")  # fmt: skip
    assert_one_line_error(result, "fields.value", "'gold'", *fragments)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("values", "kind"), [([0.5, 1.5], "float"), ([[1], [2]], "list")])
def test_a_label_field_needs_text_like_gold(tmp_path: Path, values, kind) -> None:
    output = {"parse": "label", "labels": ["0.5", "1.5"]}
    contract = _contract(tmp_path, {"gold": "gold"}, output=output)
    with pytest.raises(InvalidContract, match=f"parse: label.*{kind}"):
        score(contract, _gold(tmp_path, values), _predictions(tmp_path, ["@0.5", "@1.5"]))


def test_boolean_class_column_and_slices(tmp_path: Path) -> None:
    contract = _contract(tmp_path, {"gold": "gold", "match": "exact"}, **{
        "class": "gold", "slices": [{"name": "yes", "where": {"gold": True}}]})  # fmt: skip
    gold = _gold(tmp_path, [True, True, False, False])
    pred = _predictions(tmp_path, [True, False, False, "false"])
    summary = score(contract, gold, pred).summary
    assert summary.classes["true"].content_accuracy == 0.5  # r0 right, r1 wrong
    assert summary.classes["false"].content_accuracy == 0.5  # r2 right, r3 a string
    assert summary.slices["yes"].n == 2
    assert summary.slices["yes"].content_accuracy == 0.5


def test_a_slice_that_matches_nothing_is_a_warning_everywhere(run_cli, tmp_path: Path) -> None:
    slices = [
        {"name": "typo", "where": {"gold": "Billing"}},
        {"name": "all", "where": {"gold": {"not": None}}},
    ]
    contract = _contract(tmp_path, {"gold": "gold"}, slices=slices)
    gold = _gold(tmp_path, ["billing", "shipping"])
    results = {}
    for name, answers in (("base", ["billing", "shipping"]), ("cand", ["billing", "billing"])):
        pred = _predictions(tmp_path, answers)
        out = tmp_path / name
        result = run_cli("score", "--contract", contract, "--gold", gold, "--pred", pred,
                         "--out", out, "--no-ledger", "--quiet", "--name", name)  # fmt: skip
        assert result.exit_code == 0
        assert result.stderr.splitlines() == [
            "evalkit: warning: slice 'typo' matches no gold item (where: "
            '{"gold":"Billing"}); check its columns and values'
        ]
        summary = json.loads((out / "summary.json").read_text())
        assert summary["slices"]["typo"]["n"] == 0 and summary["slices"]["all"]["n"] == 2
        assert summary["warnings"] == [result.stderr.removeprefix("evalkit: warning: ").strip()]
        results[name] = out
    report_md, report_json = tmp_path / "gate.md", tmp_path / "gate.json"
    gated = run_cli("gate", results["base"], results["cand"], "--markdown", report_md,
                    "--json", report_json)  # fmt: skip
    warning = ("slice 'typo' holds no paired example, so its figures are empty and its rules "
               "judge nothing; check the contract's slices")  # fmt: skip
    assert f"evalkit: warning: cand: {warning}" in gated.stderr
    assert json.loads(report_json.read_text())["warnings"] == [warning]
    assert f"> ⚠ {warning}" in report_md.read_text()
    compared = run_cli("compare", results["base"], results["cand"], "--out", tmp_path / "cmp")
    assert warning in compared.stderr
    page = html.unescape((tmp_path / "cmp" / "report.html").read_text())
    assert f"Warning: {warning}" in re.sub("<[^>]+>", "", page)


def test_no_warning_no_key(tmp_path: Path) -> None:
    from evalkit.records._summary import summary_json

    contract = _contract(tmp_path, {"gold": "gold"}, slices=[{"name": "s", "where": {"gold": "a"}}])
    result = score(contract, _gold(tmp_path, ["a"]), _predictions(tmp_path, ["a"]))
    assert result.summary.warnings == []
    assert b'"warnings"' not in summary_json(result.summary)


@pytest.mark.parametrize(
    ("values", "condition", "fragment"),
    [
        ([True, False], "true", "'true' is string, but gold column 'gold' holds Boolean"),
        (["1", "2"], {"not": [1]}, "1 is integer, but gold column 'gold' holds string"),
        ([1, 2], True, "True is Boolean, but gold column 'gold' holds integer"),
    ],
)
def test_a_slice_value_of_another_type_is_one_line(
    run_cli, tmp_path: Path, values, condition, fragment
) -> None:
    slices = [{"name": "s", "where": {"gold": condition}}]
    contract = _contract(tmp_path, {"gold": "gold"}, slices=slices)
    gold, pred = _gold(tmp_path, values), _predictions(tmp_path, values)
    result = run_cli("score", "--contract", contract, "--gold", gold, "--pred", pred,
                     "--out", tmp_path / "out", "--no-ledger")  # fmt: skip
    assert_one_line_error(result, "slices[0] (s): where.gold", fragment)


def test_numbers_of_either_kind_select_a_slice(tmp_path: Path) -> None:
    slices = [{"name": "two", "where": {"gold": 2.0}}, {"name": "half", "where": {"gold": [0.5]}}]
    contract = _contract(tmp_path, {"gold": "gold"}, slices=slices)
    summary = score(contract, _gold(tmp_path, [1, 2, 2]), _predictions(tmp_path, [1, 2, 3])).summary
    assert summary.slices["two"].n == 2 and summary.slices["two"].content_correct == 1
    assert summary.slices["half"].n == 0 and summary.warnings
