"""Checks on what ``split`` is asked to do, before any work starts.

Option errors quote the bad value and say what would work; table errors are
collected by pandera (all failures at once, lazily) and reported as one line
about the first, with the count of the rest. A valid table never pays for
pandera (its import alone takes longer than a whole split of 100k items): the
same checks run first as polars expressions, and pandera is built and run only
when one of them fails, for its report. The ``--text`` columns are only
required to exist here: whether they hold text or conversations (and whether
each conversation is well formed) is :func:`evalkit.chat.read_chat`'s to say.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import polars as pl

from evalkit.errors import InvalidTable, ParameterError
from evalkit.io import require_columns
from evalkit.splitting.state import IntArray


def resolve_targets(
    n_items: int,
    names: Sequence[str],
    sizes: Sequence[int] | None,
    ratios: Sequence[float] | None,
    source: str,
) -> IntArray:
    """Items per split from ``sizes`` or ``ratios`` (largest-remainder rounding)."""
    if (sizes is None) == (ratios is None):
        raise ParameterError(
            "sizes",
            "(e.g. 840,180,180) or {ratios} (0.7,0.15,0.15): give exactly one of them",
            refs=["ratios"],
        )
    values: Sequence[float] = sizes if sizes is not None else ratios  # type: ignore[assignment]
    parameter = "sizes" if sizes is not None else "ratios"
    if len(values) != len(names):
        raise ParameterError(
            parameter,
            f"has {len(values)} values for {len(names)} splits {list(names)!r}; "
            "give one per split (or change {names})",
            refs=["names"],
        )
    if sizes is not None:
        if any(size < 0 for size in sizes):
            raise ParameterError("sizes", f"cannot be negative, got {list(sizes)!r}")
        total = sum(sizes)
        if total > n_items:
            raise ParameterError(
                "sizes",
                f"{','.join(map(str, sizes))} add up to {total} items but {source} "
                f"has only {n_items}; lower the sizes or use {{ratios}}",
                refs=["ratios"],
            )
        return np.asarray(sizes, dtype=np.int64)
    assert ratios is not None
    if any(not math.isfinite(r) or r < 0 for r in ratios):
        raise ParameterError("ratios", f"must be finite and >= 0, got {list(ratios)!r}")
    total_ratio = math.fsum(ratios)
    if abs(total_ratio - 1.0) > 1e-6:
        raise ParameterError(
            "ratios",
            f"{','.join(map(str, ratios))} sum to {total_ratio:g}, not 1; "
            "give shares like 0.7,0.15,0.15 (or item counts with {sizes})",
            refs=["sizes"],
        )
    exact = np.asarray(ratios, dtype=np.float64) * n_items
    targets = np.floor(exact).astype(np.int64)
    # Largest remainder; ties go to the earlier split, deterministically.
    order = np.argsort(-(exact - targets), kind="stable")
    targets[order[: n_items - int(targets.sum())]] += 1
    return targets


def check_table(
    frame: pl.DataFrame,
    *,
    source: str,
    group: Sequence[str],
    id_column: str | None,
    stratify: str | None,
    text: Sequence[str] = (),
) -> None:
    """Validate the input table; raise one clear error for the first failure.

    :func:`passes_checks` decides a valid table with polars alone; only a table
    that fails one of its checks goes through the pandera schema, whose lazy
    report words the error (so the messages are pandera's findings, as always).
    """
    if not group:
        raise ParameterError("group", "must name at least one group column")
    named = [*group, *(c for c in (id_column, stratify) if c is not None), *text]
    require_columns(frame, named, source)
    if frame.height == 0:
        raise InvalidTable(f"{source}: the table has no rows; nothing to split")
    if passes_checks(frame, id_column=id_column):
        return
    _report_failures(frame, source=source, id_column=id_column)


def passes_checks(frame: pl.DataFrame, *, id_column: str | None) -> bool:
    """True when ``frame`` passes every check of :func:`_table_schema`, decided by polars.

    Each check uses the expressions of pandera's polars backend (nulls and, in
    a float column, NaN count as missing; ``is_duplicated`` for uniqueness),
    so a table passes here only if it passes there. A column whose type the
    expressions do not cover is left to pandera (False). A new check goes
    here and into :func:`_table_schema` together.
    """
    checks: list[pl.Expr] = []
    if id_column is not None:
        dtype = frame.schema[id_column]
        if dtype.is_nested() or dtype == pl.Object:
            return False
        present = pl.col(id_column).is_not_null()
        if dtype.is_float():
            present = present & pl.col(id_column).is_not_nan()
        unique = pl.col(id_column).is_duplicated().not_()
        checks += [present.all().alias("present"), unique.all().alias("unique")]
    return all(frame.select(checks).row(0)) if checks else True


def _table_schema(id_column: str | None) -> Any:
    """The pandera schema of a split's input: a unique id in every row."""
    import pandera.polars as pa

    columns: dict[str, pa.Column] = {}
    if id_column is not None:
        columns[id_column] = pa.Column(unique=True, nullable=False)
    return pa.DataFrameSchema(columns)


def _report_failures(frame: pl.DataFrame, *, source: str, id_column: str | None) -> None:
    """Run the pandera schema lazily (every failure collected) and raise about the first."""
    import pandera.polars as pa

    try:
        _table_schema(id_column).validate(frame, lazy=True)
    except pa.errors.SchemaErrors as errors:
        raise _first_failure(errors.failure_cases, source, id_column) from None


def _first_failure(cases: pl.DataFrame, source: str, id_column: str | None) -> InvalidTable:
    first = cases.row(0, named=True)
    column, check = first["column"], str(first["check"])
    same = cases.filter((pl.col("column") == column) & (pl.col("check") == check))
    rows = same["index"].drop_nulls()
    first_row = rows.cast(pl.Int64).to_numpy().min() + 1 if rows.len() else None
    where = f" (first at row {first_row})" if first_row is not None else ""
    if column == id_column and check == "not_nullable":
        return InvalidTable(
            f"{source}: {rows.len()} row(s) have no id in column {column!r}{where}; "
            "every row needs a unique id"
        )
    if column == id_column and "unique" in check:
        return InvalidTable(
            f"{source}: id {first['failure_case']!r} appears more than once in column {column!r}"
            f"{where}; ids must be unique ({same['failure_case'].n_unique()} repeated id(s))"
        )
    return InvalidTable(f"{source}: column {column!r} fails check {check}{where}")
