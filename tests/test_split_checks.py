"""The polars checks of a split's input agree with the pandera schema they stand in for.

``passes_checks`` decides valid tables without importing pandera; pandera still
words every failure. The reference is pandera itself: a table passes the polars
checks exactly when it passes the schema (for the column types the polars
checks cover; for any other type they defer to pandera, which is then run).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from evalkit.errors import InvalidTable
from evalkit.splitting.inputs import _table_schema, check_table, passes_checks

NAN = float("nan")
TABLES = {
    "int ids": pl.DataFrame({"id": [1, 2, 3], "g": [1, 1, 2], "t": ["a", "b", None]}),
    "repeated int ids": pl.DataFrame({"id": [1, 2, 2], "g": [1, 1, 2], "t": ["a", "b", "c"]}),
    "missing int id": pl.DataFrame({"id": [1, None, 3], "g": [1, 1, 2], "t": ["a", "b", "c"]}),
    "string ids": pl.DataFrame({"id": ["a", "b", "c"], "g": [1, 1, 2], "t": ["x", "y", "z"]}),
    "repeated string ids": pl.DataFrame({"id": ["a", "b", "a"], "g": [1, 1, 2], "t": ["x"] * 3}),
    "float ids": pl.DataFrame({"id": [1.0, 2.5, -0.5], "g": [1, 1, 2], "t": ["x"] * 3}),
    "NaN float id": pl.DataFrame({"id": [1.0, NAN, 3.0], "g": [1, 1, 2], "t": ["x"] * 3}),
    "two NaN float ids": pl.DataFrame({"id": [NAN, NAN, 3.0], "g": [1, 1, 2], "t": ["x"] * 3}),
    "null float id": pl.DataFrame({"id": [1.0, None, 3.0], "g": [1, 1, 2], "t": ["x"] * 3}),
    "numeric column": pl.DataFrame({"id": [1, 2, 3], "g": [1, 1, 2], "t": [1, 2, 2]}),
    "null text": pl.DataFrame({"id": [1, 2, 3], "g": [1, 1, 2], "t": [None, None, None]}),
    "categorical text": pl.DataFrame(
        {"id": [1, 2, 3], "g": [1, 1, 2], "t": pl.Series(["a", "b", "a"], dtype=pl.Categorical)}
    ),
    "bool ids": pl.DataFrame({"id": [True, False, None], "g": [1, 1, 2], "t": ["x"] * 3}),
}


def _pandera_passes(frame: pl.DataFrame, id_column: str | None) -> bool:
    import pandera.polars as pa

    try:
        _table_schema(id_column).validate(frame, lazy=True)
    except pa.errors.SchemaErrors:
        return False
    return True


@pytest.mark.parametrize("name", sorted(TABLES))
@pytest.mark.parametrize("id_column", ["id", "t", None])
def test_polars_checks_agree_with_pandera(name: str, id_column: str | None) -> None:
    frame = TABLES[name]
    assert passes_checks(frame, id_column=id_column) == _pandera_passes(frame, id_column)


def test_a_column_type_the_checks_do_not_cover_is_left_to_pandera(tmp_path: Path) -> None:
    frame = pl.DataFrame({"id": [[1], [2], [1]], "g": [1, 2, 3]})
    assert not passes_checks(frame, id_column="id")
    with pytest.raises(InvalidTable, match="appears more than once"):
        check_table(frame, source="t", group=["g"], id_column="id", stratify=None)


def test_a_valid_split_never_imports_pandera(tmp_path: Path) -> None:
    """The happy path pays for polars checks only; a failing table still gets pandera."""
    data = tmp_path / "d.jsonl"
    pl.DataFrame({"id": range(30), "g": [i % 7 for i in range(30)]}).write_ndjson(data)
    code = (
        "import sys, evalkit\n"
        f"evalkit.split({str(data)!r}, group=['g'], id_column='id', sizes=[20, 10],"
        " names=['a', 'b'])\n"
        "print('pandera' in sys.modules)\n"
        "try:\n"
        f"    evalkit.split({str(data)!r}, group=['g'], id_column='g', sizes=[20, 10],"
        " names=['a', 'b'])\n"
        "except evalkit.errors.InvalidTable as error:\n"
        "    print('pandera' in sys.modules, error.message)\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    happy, failed = completed.stdout.strip().splitlines()
    assert happy == "False"
    assert failed.startswith("True ") and "appears more than once in column 'g'" in failed
