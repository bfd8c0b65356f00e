"""Reading the gold of ``evalkit.score``: a file (or dataset folder), or an in-memory frame.

Only the columns the contract names are read (a Parquet file's schema is
checked before anything is read, so a contract/gold mismatch fails fast);
they come out renamed ``gold:<column>`` beside a string ``id``. A frame goes
through :func:`evalkit.io.read_table` and the same checks, so the
figures of a frame are those of the same rows in a file.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from evalkit.errors import DuplicateIds, InvalidTable, UnknownColumn
from evalkit.io import id_strings, read_table, table_format
from evalkit.scoring import answers
from evalkit.scoring.examples import GOLD_PREFIX

if TYPE_CHECKING:
    import polars as pl

    from evalkit.contract.model import Contract
    from evalkit.io import Table


def contract_columns(contract: Contract) -> list[tuple[str, str]]:
    """(contract key, gold column) for every column the gold file must have."""
    return _contract_columns(contract)


def _contract_columns(contract: Contract) -> list[tuple[str, str]]:
    """(contract key, gold column) for every column the gold file must have."""
    if contract.output.parse == "tool_calls":
        named = [("id", contract.id_column)]
        if contract.gold_answer is not None:
            named.append(("gold_answer.column", contract.gold_answer.column))
        return named + contract.gold_references
    if contract.gold_answer is not None:
        return answers.required_columns(contract)
    return [("id", contract.id_column), *contract.gold_references]


def check_gold_columns(path: Path, contract: Contract, contract_label: str) -> None:
    """For a Parquet gold file, check from its schema alone that the contract's columns exist."""
    import polars as pl

    if not (path.is_file() and table_format(path) == "parquet"):
        return
    try:
        present = list(pl.read_parquet_schema(path))
    except (pl.exceptions.PolarsError, OSError):
        return  # read_gold reports it
    for key, column in _contract_columns(contract):
        if column not in present:
            listing = ", ".join(present[:20]) or "(none)"
            raise UnknownColumn(
                f"{path}: no column {column!r}, named by {key} in {contract_label}; "
                f"the columns are: {listing}"
            )


def _gold_columns(path: Path, contract: Contract) -> list[str] | None:
    """The columns of the gold file that the contract reads (None: read them all)."""
    import polars as pl

    if contract.gold_answer is None:
        return contract.gold_columns
    if table_format(path) == "parquet" and path.is_file():
        try:
            present = pl.read_parquet_schema(path)
        except (pl.exceptions.PolarsError, OSError):
            return None  # the read reports the problem
        return answers.file_columns(contract, list(present))
    return None


def gold_input(gold: object, contract: Contract) -> Table:
    """The gold as given (a file or a frame), read: a file only in the contract's columns."""
    from evalkit.io import is_path

    columns = _gold_columns(Path(gold), contract) if is_path(gold) else None
    return read_table(gold, name="gold", columns=columns, ids=[contract.id_column])


def read_gold(gold: Table, contract: Contract, contract_label: str) -> pl.DataFrame:
    """The gold columns the contract reads, renamed ``gold:<column>``, plus a string ``id``.

    With ``gold_answer`` the gold values come from each conversation's
    reference answer (:mod:`evalkit.scoring.answers`).
    """
    import polars as pl

    frame, label = gold.frame, gold.label
    for key, column in _contract_columns(contract):
        if column not in frame.columns:
            listing = ", ".join(frame.columns[:20]) or "(none)"
            raise UnknownColumn(
                f"{label}: no column {column!r}, named by {key} in {contract_label}; "
                f"the columns are: {listing}"
            )
    noun = "gold file" if gold.path is not None else "gold frame"
    if frame.height == 0:
        raise InvalidTable(f"{label}: the {noun} has no rows")
    ids = _checked_ids(frame, label, contract.id_column, noun)
    if contract.gold_answer is not None:
        return answers.read_answer_gold(gold, ids, contract, contract_label)
    return frame.select(
        pl.lit(ids).alias("id"),
        *[pl.col(column).alias(GOLD_PREFIX + column) for column in contract.gold_columns],
    )


def checked_ids(frame: pl.DataFrame, label: str, id_column: str, noun: str) -> pl.Series:
    """The gold ids as strings: scalar, present in every row, unique."""
    return _checked_ids(frame, label, id_column, noun)


def _checked_ids(frame: pl.DataFrame, label: str, id_column: str, noun: str) -> pl.Series:
    """The gold ids as strings: scalar, present in every row, unique."""
    ids = id_strings(frame, id_column, label).alias("id")
    if ids.null_count():
        row = int(ids.is_null().arg_max() or 0) + 1
        raise InvalidTable(
            f"{label}: row {row} has no id in column {id_column!r}; every gold item needs one"
        )
    if not all_unique(ids):
        repeated = ids.filter(ids.is_duplicated())
        raise DuplicateIds(
            f"{label}: id {repeated.min()!r} occurs {int((repeated == repeated.min()).sum())} "
            f"times in the {noun}; gold ids must be unique"
        )
    return ids


def all_unique(ids: pl.Series) -> bool:
    """No id twice; sorted ids (the usual case) are checked without a hash table."""
    if ids.is_sorted():
        return not bool((ids.slice(1) == ids.slice(0, len(ids) - 1)).any()) if len(ids) else True
    return bool(ids.n_unique() == len(ids))
