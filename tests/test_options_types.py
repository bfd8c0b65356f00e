"""Options objects check each value's type when made (issue 32, M2), naming the parameter.

Python would take ``exact_only="no"`` as true (and skip the near-duplicate
search), ``no_ledger="false"`` as true (and record no look): a value of another
type than the field's is refused where the object is made, as the command line
refuses it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import assert_one_line_error

import evalkit
from evalkit import AuditParams, CompareParams, ScoreParams, SplitParams
from evalkit.errors import ParameterError


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: AuditParams(id_column="id", text="t", exact_only="no"),
         "exact_only must be true or false, got 'no' (str)"),
        (lambda: ScoreParams(no_ledger="false"),
         "no_ledger must be true or false, got 'false' (str)"),
        (lambda: CompareParams(allow_base_change="false"),
         "allow_base_change must be true or false, got 'false' (str)"),
        (lambda: SplitParams(group=b"x"), "group must be a list of values (text each), got b'x'"),
        (lambda: SplitParams(group=["g", 3]), "group must be each of its values text, got 3"),
        (lambda: AuditParams(id_column=None, text="t"), "id_column is required"),
    ],
)  # fmt: skip
def test_a_value_of_another_type_is_refused_naming_the_parameter(make, message: str) -> None:
    with pytest.raises(ParameterError) as raised:
        make()
    assert str(raised.value).startswith(message), str(raised.value)


def _splits(tmp_path: Path) -> list[Path]:
    train, test = tmp_path / "train.jsonl", tmp_path / "test.jsonl"
    train.write_text(json.dumps({"id": "a", "t": "one two three four"}) + "\n")
    test.write_text(json.dumps({"id": "b", "t": "one two three four"}) + "\n")
    return [train, test]


def test_audit_with_a_text_flag_still_searches(tmp_path: Path) -> None:
    """The refusal can fail: the same call with a real boolean runs and finds the pair."""
    report = evalkit.audit(_splits(tmp_path), id_column="id", text="t", exact_only=False)
    assert report.counts.exact_duplicates == 1
    with pytest.raises(ParameterError, match="exact_only must be true or false"):
        evalkit.audit(_splits(tmp_path), id_column="id", text="t", exact_only="no")


def test_audit_without_an_id_is_a_usage_error_naming_the_flag(run_cli, tmp_path: Path) -> None:
    result = run_cli("audit", *_splits(tmp_path), "--text", "t")
    assert_one_line_error(result, "--id is required")


def test_audit_of_one_folder_given_as_text_reads_the_folder(tmp_path: Path) -> None:
    """A string is a sequence of letters: audit("split-out", ...) once read files 's', 'p'..."""
    import polars as pl

    frame = pl.DataFrame({"id": [f"i{n}" for n in range(8)], "g": list(range(8)),
                          "t": [f"text number {n % 4} here" for n in range(8)]})  # fmt: skip
    out = tmp_path / "split-out"
    evalkit.split(frame, group="g", id_column="id", sizes=[4, 4], names=["a", "b"]).write(out)
    as_text = evalkit.audit(str(out), id_column="id", text="t")
    as_list = evalkit.audit([out], id_column="id", text="t")
    assert as_text.model_dump() == as_list.model_dump()
    assert set(as_text.splits) == {"a", "b"}
