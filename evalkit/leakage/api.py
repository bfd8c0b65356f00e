"""``evalkit.audit``: check an existing split for leaks, and say what was found.

Read → stack the splits → group leaks and ids in several splits → normalise
texts → exact duplicates (equal normalised text) → near duplicates (MinHash
LSH over distinct texts, checked by exact Jaccard) → class coverage → report.
Only cross-split findings count as leaks: a duplicate inside one split is the
training set's own business.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from evalkit.chat import parse_roles
from evalkit.errors import ParameterError
from evalkit.leakage import findings, within_pairs
from evalkit.leakage import within as within_module
from evalkit.leakage.assemble import (
    Findings,
    SplitCounts,
    WithinListing,
    build_report,
    groups_per_split,
)
from evalkit.leakage.clusters import distinct_texts
from evalkit.leakage.distributed.session import RayOptions, with_address
from evalkit.leakage.inputs import Rows, read_rows, require_conversations
from evalkit.leakage.minhash import choose_lsh, estimate_similarity
from evalkit.leakage.normalize import normalize_texts
from evalkit.leakage.options import AuditParams
from evalkit.leakage.progress import Progress
from evalkit.leakage.search import (
    SimilarPairs,
    cross_split_pairs,
    lsh_index,
    split_buckets,
    within_split_pairs,
)
from evalkit.options import takes
from evalkit.records import LshParameters
from evalkit.records._audit import AuditOptions, AuditReport, WithinSplit

if TYPE_CHECKING:
    from evalkit.io import TableLike


@takes(AuditParams)
def audit(
    inputs: str | os.PathLike[str] | Sequence[Path | str] | Mapping[str, TableLike],
    params: AuditParams | None = None,
    /,
    *,
    progress: bool = False,
    ray: RayOptions | None = None,
    json: str | os.PathLike[str] | None = None,
    force: bool = False,
    **values: Any,
) -> AuditReport:
    """Audit the splits of a dataset for leakage; ``report.leak`` says whether any was found.

    ``inputs`` are split files (JSONL, CSV, Parquet; the split is named by the
    file stem), folders written by ``evalkit split``, or a mapping of split
    name to table (a polars, pandas or pyarrow frame, or a file). Reports
    groups (``group`` columns) and ids found in several splits, cross-split
    pairs of items whose normalised ``text`` is equal, cross-split
    near-duplicate pairs (Jaccard similarity of word 3-shingles >=
    ``near_dup``; None skips the check) and the classes of ``stratify`` per
    split. Raises an ``EvalkitError`` on bad input (a
    missing column names the file and the columns it has).

    ``text`` may hold conversations (``{role, content}`` or ShareGPT
    ``{from, value}`` messages, nested or as JSON text), or be two columns
    (prompt and completion) or three (Alpaca's instruction, input, output);
    the text compared is then the ``roles`` turns' content and tool calls
    (default: every role but system, so a system prompt shared by every
    example never makes two items duplicates). ``system`` and ``tools`` name
    the columns of system prompts and tools (default: columns named
    ``system`` and ``tools``, when present).

    ``report.within`` says how repetitive each split is on its own (exact and
    near-duplicate clusters inside it, the most repeated openings of
    ``opening_words`` words); ``within`` lists those pairs too. Repetition
    inside a split is not a leak.

    ``engine="ray"`` runs the same stages on a Ray cluster (``ray_address``
    says which; ``ray``, which and how) and returns the same report; ``local``
    is the reference.

    The options are the fields of :class:`~evalkit.leakage.options.AuditParams`:
    ``params`` is such an object, and keyword arguments build one (or change
    ``params``' fields): ``audit(["train.jsonl", "test.jsonl"], id_column="id",
    text="text")``. ``progress`` shows progress bars on stderr.

    With ``json`` the report is written there too, as ``evalkit audit --json``
    writes it (which is this call): atomically, never over an input, and over
    an existing file only with ``force`` (checked before anything is read).
    """
    given = AuditParams.build(params, values)
    if isinstance(inputs, str | os.PathLike):
        inputs = [Path(inputs)]  # one folder written by evalkit split (text is no file list)
    from evalkit.io import ReportFile, is_path

    read = inputs.values() if isinstance(inputs, Mapping) else inputs
    target = ReportFile.checked(json, force=force, inputs=filter(is_path, read))
    report = _audit(inputs, given, progress, ray)
    target.write(report.model_dump_json(indent=2) + "\n")
    return report


def _audit(
    inputs: Sequence[Path | str] | Mapping[str, TableLike],
    given: AuditParams,
    progress: bool,
    ray: RayOptions | None,
) -> AuditReport:
    """The audit of ``inputs`` under ``given`` (see :func:`audit`)."""
    id_column, text_columns, roles = given.id_column, list(given.text), given.roles
    group, stratify, near_dup, seed = given.group, given.stratify, given.threshold, given.seed
    system, tools, within, engine = given.system, given.tools, given.within, given.engine
    if ray is not None and engine != "ray":
        raise ParameterError("ray", "needs {engine} ray", refs=["engine"])
    if given.ray_address is not None:
        ray = with_address(ray, given.ray_address)
    compared_roles = parse_roles(roles)
    options = AuditOptions(
        id=id_column,
        text=text_columns[0],
        completion=text_columns[1] if len(text_columns) == 2 else None,
        columns=text_columns,
        roles=list(compared_roles),
        system=system,
        tools=tools,
        group=list(group),
        stratify=stratify,
        near_dup=near_dup,
        seed=seed,
        opening_words=given.opening_words,
        within=within,
        engine=engine,
    )
    if engine == "ray":
        from evalkit.leakage.distributed.audit import audit_on_ray

        return audit_on_ray(
            inputs,
            options=options,
            roles=compared_roles,
            roles_given=roles is not None,
            progress=progress,
            ray=ray or RayOptions(),
        )
    rows = read_rows(
        inputs,
        id_column=id_column,
        text_column=text_columns,
        roles=compared_roles,
        group=group,
        stratify=stratify,
        system=system,
        tools=tools,
    )
    require_conversations(
        roles is not None, any(chat.is_conversation for chat in rows.texts), options
    )
    lsh = choose_lsh(near_dup, seed=seed) if near_dup is not None else None
    table = rows.table
    normalized = normalize_texts(table["text"])
    distinct, text_rows, text_index = distinct_texts(normalized)
    keyed = pl.DataFrame(
        {
            "row": text_rows,
            "split": table["split"].to_numpy()[text_rows],
            "text_index": text_index,
        }
    )
    exact = findings.with_ids(findings.exact_pairs(keyed), table)
    similar, inside, listed = _similar(distinct, keyed, lsh, progress, len(rows.names), within)
    near = findings.with_ids(findings.near_pairs(keyed, similar), table)
    repetition = _repetition(
        table, normalized, keyed, inside, rows.names, given.opening_words, lsh is not None
    )
    leaks = findings.group_leaks(table, rows.group_columns) if group else None
    listing = _within_listing(keyed, table, listed) if within else None
    found = Findings(
        counts=_split_counts(rows, normalized),
        exact=exact,
        near=near,
        candidates=similar.candidates,
        leaks=leaks,
        overlaps=findings.id_overlaps(table),
        within=repetition,
        listing=listing,
    )
    return build_report(options, lsh, rows.sources, rows.texts, found)


def _nothing() -> SimilarPairs:
    nothing = np.zeros(0, dtype=np.int64)
    return SimilarPairs(nothing, nothing, nothing.astype(float), nothing.astype(float), 0)


def _similar(
    distinct: pl.Series,
    keyed: pl.DataFrame,
    params: LshParameters | None,
    progress: bool,
    n_splits: int,
    listing: bool,
) -> tuple[SimilarPairs, list[SimilarPairs], pl.DataFrame | None]:
    """Near-duplicate pairs of distinct texts across splits, inside each split, and (for
    ``--within``) the first pairs of texts inside each split that its listing needs.

    One LSH index serves all three. Inside a split, only the pairs that connect
    its clusters are checked (linear even for a template repeated thousands of
    times); the listing checks bucket pairs in order until it has what it lists.
    """
    if params is None or len(distinct) < 2:
        return _nothing(), [_nothing() for _ in range(n_splits)], None
    bars = Progress(progress)
    masks = findings.split_masks(
        keyed["split"].to_numpy(), keyed["text_index"].to_numpy(), len(distinct)
    )
    index = lsh_index(distinct, params, bars)
    across = cross_split_pairs(index, params, masks, bars)
    inside = [within_split_pairs(index, params, masks, split, bars) for split in range(n_splits)]
    if not listing:
        return across, inside, None
    frames = []
    for split in range(n_splits):
        left, right, similarity = within_pairs.first_text_pairs(
            split_buckets(index, masks, split),
            index.checker.similarity,
            params.threshold,
            index.n,
            within_pairs.LIMIT + 1,
        )
        estimate = estimate_similarity(index.signatures, left, right)
        frames.append(within_pairs.text_pair_frame(split, left, right, similarity, estimate))
    return across, inside, pl.concat(frames)


def _within_listing(
    keyed: pl.DataFrame, table: pl.DataFrame, near_texts: pl.DataFrame | None
) -> WithinListing:
    """The pairs ``--within`` lists (at most ``within_pairs.LIMIT`` per split and list)."""
    rows = keyed.join(table.select("row", "id"), on="row")
    exact, totals = within_pairs.exact_listing(rows)
    near: pl.DataFrame | None = None
    near_cut: list[int] = []
    if near_texts is not None:
        pairs, near_cut = within_pairs.near_row_pairs(near_texts, rows)
        near = _named_within(pairs, table)
    return WithinListing(
        exact=within_module.smaller_id_first(exact.drop("text_index")),
        near=near,
        exact_truncated=within_pairs.over_limit(totals),
        near_truncated=near_cut,
    )


def _repetition(
    table: pl.DataFrame,
    normalized: pl.Series,
    keyed: pl.DataFrame,
    inside: list[SimilarPairs],
    names: list[str],
    opening_words: int,
    near: bool,
) -> dict[str, WithinSplit]:
    """``report.within``: each split's own exact and near-duplicate clusters and openings."""
    clusters = within_module.split_clusters(keyed, [(p.left, p.right) for p in inside])
    items = (
        table.select("row", "split", "id")
        .with_columns(normalized.alias("text"))
        .join(keyed.select("row", pl.col("text_index").alias("exact")), on="row", how="left")
        .join(clusters, on="row", how="left")
    )
    summary = within_module.summarize(items, names, opening_words=opening_words, near=near)
    return {name: WithinSplit.model_validate(value) for name, value in summary.items()}


def _named_within(pairs: pl.DataFrame, table: pl.DataFrame) -> pl.DataFrame:
    """Pairs inside splits with their ids, smaller id first (empty stays empty)."""
    if pairs.height == 0:
        return pairs
    return within_module.smaller_id_first(findings.with_ids(pairs, table))


def _split_counts(rows: Rows, normalized: pl.Series) -> SplitCounts:
    """What the split summaries count, from the stacked rows."""
    table = rows.table
    n_splits = len(rows.names)
    split_of_row = table["split"].to_numpy()
    classes: list[str] = []
    class_counts: list[dict[str, int]] = [{} for _ in range(n_splits)]
    if "class" in table.columns:
        classes, class_counts = findings.class_counts(table, n_splits)
    return SplitCounts(
        n_items=np.bincount(split_of_row, minlength=n_splits),
        empty_texts=np.bincount(split_of_row[normalized.is_null().to_numpy()], minlength=n_splits),
        duplicate_ids=findings.duplicate_ids_per_split(table, n_splits),
        n_groups=groups_per_split(table, rows.group_columns, n_splits),
        classes=classes,
        class_counts=class_counts,
    )
