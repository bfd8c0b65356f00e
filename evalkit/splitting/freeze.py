"""``--freeze``: keep the groups of an earlier split where they were.

When data grows, the test set must not move: every group already placed by an
earlier ``evalkit split`` (its ``assignments.parquet``) keeps its split, and
only new groups are placed. Groups are matched by their key; rows whose key was
null (singleton groups) are matched by id.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

from evalkit.errors import InvalidTable, UsageError
from evalkit.io import Table, require_columns
from evalkit.splitting.groups import group_key
from evalkit.splitting.state import IntArray


def frozen_rows(
    frame: pl.DataFrame,
    assignments: Table,
    group: Sequence[str],
    id_column: str | None,
    names: Sequence[str],
) -> IntArray:
    """Split index of every input row whose group (or id) the assignments file knows, -1 for
    the rest."""
    path = assignments.label
    known = assignments.frame
    require_columns(known, ["id", "group", "split"], path)
    placed = known.filter(pl.col("split").is_not_null())
    unknown = sorted(set(placed["split"].unique().to_list()) - set(names))
    if unknown:
        raise UsageError(
            f"{path}: split {unknown[0]!r} is not one of {{names}} {','.join(names)}; "
            "pass the names the earlier split used",
            refs=["names"],
        )
    by_group = placed.filter(pl.col("group").is_not_null())
    leaked = by_group.group_by("group").agg(pl.col("split").n_unique()).filter(pl.col("split") > 1)
    if leaked.height:
        raise InvalidTable(
            f"{path}: {leaked.height} group(s) are in several splits (e.g. "
            f"{leaked['group'][0]!r}); an assignments file to freeze must not leak groups"
        )
    code = {name: index for index, name in enumerate(names)}
    groups = by_group.unique("group", keep="first").select(
        "group", pl.col("split").replace_strict(code, return_dtype=pl.Int64).alias("code")
    )
    keys = frame.select(group_key(group).alias("group"))
    try:
        matched = keys.join(groups, on="group", how="left", maintain_order="left")["code"]
    except pl.exceptions.PolarsError as error:
        raise InvalidTable(
            f"{path}: its group column has type {groups['group'].dtype} but the input's key "
            f"({', '.join(group)}) has type {keys['group'].dtype}; freeze with the same {{group}} "
            f"columns ({str(error).splitlines()[0]})",
            refs=["group"],
        ) from None
    result = matched.fill_null(-1).to_numpy().astype(np.int64)
    singletons = placed.filter(pl.col("group").is_null())
    if id_column is not None and singletons.height:
        ids = frame.select(pl.col(id_column).alias("id"))
        by_id = singletons.select(
            "id", pl.col("split").replace_strict(code, return_dtype=pl.Int64).alias("code")
        )
        try:
            codes = ids.join(by_id, on="id", how="left", maintain_order="left")["code"]
        except pl.exceptions.PolarsError:
            codes = pl.Series("code", [None] * frame.height, pl.Int64)
        null_key = frame.select(pl.any_horizontal(pl.col(list(group)).is_null())).to_series()
        take = null_key.to_numpy() & codes.is_not_null().to_numpy()
        result[take] = codes.to_numpy()[take]
    return result
