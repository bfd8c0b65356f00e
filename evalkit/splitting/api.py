"""``evalkit.split``: group-aware, exact-count, stratified splitting.

This is the one library call behind ``evalkit split``. It reads (or takes) a
table, checks it, builds groups in a canonical order, assigns them (see
``assign``), and returns the split frames, the per-item assignments and the
manifest. Writing is a separate step (:meth:`SplitResult.write`) so that a
caller can inspect a split before anything touches the disk.
"""

from __future__ import annotations

import operator
import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, SupportsIndex

import numpy as np
import polars as pl

from evalkit._version import __version__
from evalkit.errors import NO_VALUE, InfeasibleSplit, ParameterError, Ref, UsageError
from evalkit.io import TableFormat, is_path, read_table
from evalkit.options import takes
from evalkit.records._manifest import (
    MANIFEST_FILE,
    Freezing,
    InputInfo,
    Merging,
    SplitManifest,
    SplitOptions,
    TextInfo,
    read_assignments,
)
from evalkit.splitting.assign import assign_groups, items_problem
from evalkit.splitting.freeze import frozen_rows
from evalkit.splitting.groups import (
    build_table,
    class_index,
    group_key,
    key_groups,
    merge_clusters,
    pin_frozen,
)
from evalkit.splitting.inputs import check_table, resolve_targets
from evalkit.splitting.lengths import load_tokenizer, row_lengths
from evalkit.splitting.options import NullGroupPolicy, SplitParams
from evalkit.splitting.repetition import split_repetition
from evalkit.splitting.report import build_report
from evalkit.splitting.state import IntArray, required_classes

if TYPE_CHECKING:
    from datasets import DatasetDict

    from evalkit.chat import ChatColumn, Role
    from evalkit.io import Table, TableLike
    from evalkit.leakage.distributed.session import RayOptions


@dataclass(frozen=True)
class SplitResult:
    """A finished split: the rows of each split, the assignments and the manifest.

    ``manifest`` is what :meth:`write` writes as ``manifest.json`` (and
    :func:`~evalkit.records._manifest.read_manifest` reads back equal).
    """

    frames: dict[str, pl.DataFrame]
    """Each split's rows as a frame: the input's columns, a column whose nested values a
    frame cannot hold as written (objects whose keys differ by row, such as tool schemas)
    as each row's JSON text (``manifest.json_text_columns`` names them)."""
    assignments: pl.DataFrame
    manifest: SplitManifest
    written: SplitManifest | None = None
    """The manifest as written into ``out`` (``split(..., out=DIR)``; None: not written)."""

    @property
    def record(self) -> SplitManifest:
        """The manifest (the name of earlier versions, kept working)."""
        return self.manifest

    rows: dict[str, IntArray] | None = None
    """The input's row numbers of each split, in the rows' order of ``frames``."""
    table: Table | None = None
    """The input as read: what the split files are written from (never read again)."""

    def to_datasets(self) -> DatasetDict:
        """The splits as a ``datasets.DatasetDict`` (``val`` named ``validation``), in memory.

        Same rows, columns and order as the split files, each row's values as
        the input wrote them: a column whose nested values differ in shape from
        row to row (tool schemas, messages with and without ``tool_calls``) is a
        ``datasets.Json`` column, which gives each row its own objects (no key
        another row has, no ``null`` padding); so are the ``text`` and tools
        columns when they hold conversations as JSON text (a CSV or Parquet
        column), so that a trainer takes them as they are. With a ``datasets``
        release older than ``Json`` such a column is each row's JSON text,
        decoded by ``dataset.map(lambda row: {"tools": json.loads(row["tools"])})``.
        Needs the optional ``datasets`` package (``pip install 'evalkit[datasets]'``).
        """
        from evalkit.splitting.hf_datasets import to_dataset_dict

        table, rows = self.table, self.rows
        json_columns = [*self.manifest.json_text_columns, *self._conversation_text_columns()]
        if table is None or rows is None or not table.padded_columns:
            return to_dataset_dict(self.frames, json_columns)
        frames = {name: table.exact_frame(chosen) for name, chosen in rows.items()}
        return to_dataset_dict(frames, [*json_columns, *table.padded_columns])

    def _conversation_text_columns(self) -> list[str]:
        """The text and tools columns that held conversations as JSON text."""
        text = self.manifest.text
        schema = next(iter(self.frames.values())).schema if self.frames else {}
        named = []
        if text is not None and text.json_text:
            named.extend(text.columns)
        if text is not None and text.tools_column is not None:
            named.append(text.tools_column)
        return [
            column
            for column in dict.fromkeys(named)
            if schema.get(column) == pl.String and column not in self.manifest.json_text_columns
        ]

    def write(
        self, out: Path | str, fmt: TableFormat = "parquet", force: bool = False
    ) -> SplitManifest:
        """Write ``<name>.<fmt>`` per split, ``assignments.parquet`` and ``manifest.json``.

        The split files are written from the input as it was read, never from a
        second reading (:mod:`evalkit.splitting.writeback`): JSONL output of a
        JSON input holds its lines byte for byte, of any other input each row's
        record (no key added); Parquet and CSV output the frames (a column a
        frame cannot hold as written as JSON text). All files are written into
        a temporary folder that replaces ``out`` only once everything
        succeeded; an existing ``out`` needs ``force``, and is never replaced if
        it holds the input or is a folder this did not write. Returns the
        manifest as written.
        """
        from evalkit.splitting.writeback import write_split

        source = (
            (self.table, self.rows) if self.table is not None and self.rows is not None else None
        )
        return write_split(
            self.frames, self.assignments, self.manifest, source, Path(out), fmt, force
        )


@takes(SplitParams)
def split(
    data: TableLike,
    params: SplitParams | None = None,
    /,
    *,
    ray: RayOptions | None = None,
    out: str | os.PathLike[str] | None = None,
    fmt: TableFormat = "parquet",
    force: bool = False,
    **values: Any,
) -> SplitResult:
    """Split ``data`` (a table file, or a polars, pandas or pyarrow frame) into named parts,
    keeping every group whole.

    Item counts hit ``sizes`` (or ``ratios`` of the rows) exactly when the
    group sizes allow, else the closest found; with ``stratify`` each split's
    class shares track the whole and every class present in at least as many
    groups as there are splits (with a positive target) appears in each. Same
    data and seed give the same split whatever the row order. Raises an
    ``EvalkitError`` subclass on bad input, and ``InfeasibleSplit`` when a
    count misses by more than ``tolerance`` items.

    ``text`` is a column of text or of conversations (``{role, content}`` or
    ShareGPT ``{from, value}`` messages, nested or as JSON text), two columns
    (TRL's prompt-completion form) or three (Alpaca's instruction, input and
    output); ``system`` and ``tools`` name the columns of system prompts and
    tools (default: columns named ``system`` and ``tools``, when present). Its
    lengths are the characters of every turn (tool calls included), or tokens
    of a local ``tokenizer`` (a tokenizer.json, or a folder holding one);
    ``near_dup`` compares the turns of ``roles`` (default: every role but
    system, so a shared system prompt is no duplicate), their text and their
    tool calls' names and arguments. ``engine="ray"`` runs
    that search on a Ray cluster (``ray_address``, or ``ray`` for every Ray
    setting, says which) and gives the same split.

    The options are the fields of :class:`~evalkit.splitting.options.SplitParams`:
    ``params`` is such an object, and keyword arguments build one (or change
    ``params``' fields): ``split(data, group=["g"], sizes=[8, 2], names=["a", "b"])``.

    With ``out`` the split is written there too, as :meth:`SplitResult.write`
    writes it (``fmt``, ``force``) and ``evalkit split --out`` does (which is
    this call); the folder is checked first, before anything is read (never an
    input, replaced only with ``force``, and only a folder a split wrote), and
    ``result.written`` is the manifest as written.
    """
    given = SplitParams.build(params, values)
    if out is None:
        return _split(data, given, ray)
    from evalkit.io import CommandFiles, hash_early, resolve_hf_split

    files = CommandFiles(force=force).reads(data if is_path(data) else None)
    files.reads(given.freeze, given.tokenizer)
    files.writes(out, option="out", marker=MANIFEST_FILE).check()
    if is_path(data):  # the hashes start now, beside the reading and the assignment
        table = resolve_hf_split(Path(data), given.hf_split)
        hash_early([table, *([given.freeze] if given.freeze is not None else [])])
    result = _split(data, given, ray)
    return replace(result, written=result.write(Path(out), fmt=fmt, force=force))


def _split(data: TableLike, given: SplitParams, ray: RayOptions | None) -> SplitResult:
    """The split of ``data`` under ``given`` (see :func:`split`)."""
    group, sizes, ratios, seed = given.group, given.sizes, given.ratios, given.seed
    id_column, text, roles, stratify = given.id_column, given.text, given.roles, given.stratify
    tokenizer, system, tools = given.tokenizer, given.system, given.tools
    text_columns = list(text or ())
    compared_roles = _compared_roles(roles) if text_columns or roles is not None else ()
    options = SplitOptions(
        group=list(group),
        stratify=stratify,
        sizes=[_whole(size, "sizes") for size in sizes] if sizes is not None else None,
        ratios=[float(ratio) for ratio in ratios] if ratios is not None else None,
        names=list(given.names),
        seed=seed,
        id=id_column,
        text=text_columns[0] if text_columns else None,
        completion=text_columns[1] if len(text_columns) == 2 else None,
        alpaca=text_columns if len(text_columns) == 3 else None,
        roles=list(compared_roles) if roles is not None else None,
        null_group=given.null_group,
        tolerance=given.tolerance,
        near_dup=given.near_dup,
        freeze=str(given.freeze) if given.freeze is not None else None,
        tokenizer=str(tokenizer) if tokenizer is not None else None,
        system=system,
        tools=tools,
        engine=given.engine,
    )
    _check_options(options)
    if ray is not None and given.engine != "ray":
        raise ParameterError("ray", "needs {engine} ray", refs=["engine"])
    if given.engine == "ray" and given.ray_address is not None:
        from evalkit.leakage.distributed.session import with_address

        ray = with_address(ray, given.ray_address)
    data = _one_table(data, given.hf_split)
    table = read_table(data, name="data", ids=[id_column] if id_column else ())
    frame, path, source = table.frame, table.path, table.label
    loaded_tokenizer = load_tokenizer(Path(tokenizer)) if tokenizer is not None else None
    check_table(
        frame, source=source, group=group, id_column=id_column, stratify=stratify, text=text_columns
    )
    _check_scalar_columns(table, group, stratify)
    chat = _read_chat(table, text_columns, system, tools) if text_columns else None
    if chat is not None and roles is not None and not chat.is_conversation:
        raise ParameterError(
            "roles",
            f"{','.join(compared_roles)}: {{text}} {' '.join(text_columns)} holds plain "
            "text, not conversations; {roles} chooses the conversation turns compared",
            refs=["text", "roles"],
        )
    lengths = row_lengths(chat, loaded_tokenizer, source) if chat is not None else None
    targets = resolve_targets(frame.height, options.names, sizes, ratios, source)
    grouping = _grouping(frame, options, chat, compared_roles, source, ray)
    row_class, labels = class_index(frame, stratify)
    groups = build_table(grouping.row_group, row_class, len(labels), grouping.pinned)
    unused = frame.height - int(targets.sum())
    problem = items_problem(targets, frame.height, seed)
    row_split = assign_groups(groups, problem)[grouping.row_group]

    required = [labels[i] for i in np.flatnonzero(required_classes(groups, problem))]
    splits, quality = build_report(
        frame,
        row_split,
        grouping.key_group,
        options.names,
        targets,
        row_class,
        labels,
        required if stratify else [],
        lengths,
        "tokens" if loaded_tokenizer is not None else "chars",
    )
    manifest = SplitManifest(
        evalkit_version=__version__,
        seed=options.seed,
        input=InputInfo(
            path=str(path) if path is not None else None,
            sha256=table.sha256,
            n_items=frame.height,
            n_groups=grouping.n_groups,
            source=table.source,
            padded_rows=table.padded_rows or None,
        ),
        options=options,
        targets={name: int(t) for name, t in zip(options.names, targets, strict=True)},
        splits=splits,
        unused=unused,
        text=_text_info(chat, compared_roles) if chat is not None else None,
        null_groups=grouping.n_null,
        merging=grouping.merging,
        freezing=grouping.freezing,
        quality=quality,
        within=split_repetition(
            frame, grouping.compared, grouping.clusters, row_split, options.names, id_column
        ),
    )
    _check_tolerance(manifest, source)
    order = frame[id_column].arg_sort().to_numpy() if id_column is not None else None
    split_column = pl.Series("split", [*options.names, None], dtype=pl.String).gather(row_split)
    rows = _split_rows(row_split, options.names, order)
    if table.json_text_columns:
        manifest = replace(manifest, json_text_columns=sorted(table.json_text_columns))
    return SplitResult(
        frames={name: table.written_frame(chosen) for name, chosen in rows.items()},
        assignments=_assignments(frame, group, id_column, split_column, order),
        manifest=manifest,
        rows=rows,
        table=table,
    )


def _whole(value: SupportsIndex | float, parameter: str) -> int:
    """``value`` as an int, as the manifest model reads it (a float only if whole)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise UsageError(
            f"{{{parameter}}}: a whole number, got {value!r}", refs=[parameter]
        ) from None


def _one_table(data: TableLike, hf_split: str | None) -> TableLike:
    """The table ``data`` names once ``hf_split`` picked a DatasetDict folder's split."""
    if hf_split is None:
        return data
    if not is_path(data):
        raise ParameterError(
            "hf_split", f"{hf_split}: applies to a Hugging Face DatasetDict folder, not a frame"
        )
    from evalkit.io import resolve_hf_split

    return resolve_hf_split(Path(data), hf_split)


def _compared_roles(roles: str | Sequence[str] | None) -> tuple[Role, ...]:
    """The --roles turns; evalkit.chat is imported only for a split with --text or
    --roles (~10 ms that a split without them does not need)."""
    from evalkit.chat import parse_roles

    return parse_roles(roles)


def _read_chat(
    table: Table, columns: Sequence[str], system: str | None, tools: str | None
) -> ChatColumn:
    from evalkit.chat import read_chat

    return read_chat(table, columns, system=system, tools=tools)


def _text_info(chat: ChatColumn, roles: Sequence[Role]) -> TextInfo:
    return TextInfo(
        columns=list(chat.columns),
        kind=chat.kind,
        shape=chat.shape,
        compared_roles=list(roles) if chat.is_conversation else None,
        skipped_parts=chat.skipped_parts,
        json_text=chat.json_text,
        system_column=chat.system_column,
        system_added=chat.system_added,
        system_kept=chat.system_kept,
        tools_column=chat.tools_column,
        tool_calls=chat.tool_call_count,
        empty_tool_lists=chat.empty_tool_lists or None,
        untrained_turns=chat.flagged_untrained,
    )


def _check_scalar_columns(table: Table, group: Sequence[str], stratify: str | None) -> None:
    """Refuse a group or class column that holds lists or objects: a key is one value."""
    named = [("group", column) for column in group]
    if stratify is not None:
        named.append(("stratify", stratify))
    for parameter, column in named:
        if table.is_nested(column):
            raise ParameterError(
                parameter,
                f"{column}: the column holds lists or objects in {table.label}; "
                f"{{{parameter}}} takes a column of text, numbers or booleans",
            )


def _check_options(options: SplitOptions) -> None:
    """Option combinations, checked before any data is read (each value is checked by
    :class:`SplitParams`)."""
    needs_text = (
        ("near_dup", options.near_dup, "the column whose texts are compared"),
        ("tokenizer", options.tokenizer, "the column whose tokens are counted"),
        ("roles", options.roles, "a conversation column whose turns are compared"),
        ("system", options.system, "the conversation column it goes with"),
        ("tools", options.tools, "the conversation column it goes with"),
    )
    for parameter, value, why in needs_text:
        if value is not None and options.text is None:
            raise ParameterError(parameter, f"needs {{text}} COL: {why}", refs=["text"])
    if options.engine == "ray" and options.near_dup is None:
        raise ParameterError(
            "engine",
            "ray runs the {near_dup} search on Ray: give {near_dup} T (a split "
            "without it needs no cluster)",
            refs=["near_dup"],
        )


@dataclass(frozen=True)
class _Grouping:
    """The groups of the input: key groups, merged groups, and frozen placements."""

    key_group: IntArray  # group-key index per row (what the report counts)
    row_group: IntArray  # assignment unit per row (key groups merged by duplicates)
    n_groups: int
    n_null: int
    pinned: IntArray | None
    merging: Merging | None
    freezing: Freezing | None
    compared: pl.Series | None = None  # the texts --near-dup compared
    clusters: IntArray | None = None  # their duplicate cluster per row


def _grouping(
    frame: pl.DataFrame,
    options: SplitOptions,
    chat: ChatColumn | None,
    roles: Sequence[Role],
    source: str,
    ray: RayOptions | None = None,
) -> _Grouping:
    """Key groups, merged with duplicate-text clusters, pinned by --freeze."""
    policy: NullGroupPolicy = "singleton" if options.null_group == "singleton" else "error"
    key_group, n_null = key_groups(frame, options.group, options.id, policy, source)
    row_group, merging, compared, clusters = key_group, None, None, None
    if options.near_dup is not None and chat is not None:
        from evalkit.chat import require_compared_roles
        from evalkit.leakage import duplicate_components

        require_compared_roles([chat], roles)
        compared = chat.compared_text(roles)
        clusters = np.asarray(
            duplicate_components(
                compared, options.near_dup, seed=options.seed, engine=options.engine, ray=ray
            )
        )
        row_group, n_merged, largest = merge_clusters(key_group, clusters)
        merging = Merging(
            threshold=options.near_dup, merged_groups=n_merged, largest_merged_group=largest
        )
    n_groups = int(row_group.max()) + 1
    pinned, freezing = None, None
    if options.freeze is not None:
        assignments = read_assignments(options.freeze)
        row_frozen = frozen_rows(frame, assignments, options.group, options.id, options.names)
        pinned, n_frozen, conflicts = pin_frozen(row_group, row_frozen, n_groups)
        freezing = Freezing(
            path=options.freeze,
            sha256=assignments.sha256,
            frozen_groups=n_frozen,
            new_groups=n_groups - n_frozen,
            conflicts=conflicts,
        )
    return _Grouping(
        key_group, row_group, n_groups, n_null, pinned, merging, freezing, compared, clusters
    )


def _check_tolerance(manifest: SplitManifest, source: str) -> None:
    """Raise ``InfeasibleSplit`` when a count misses its target by more than --tolerance."""
    tolerance = manifest.options.tolerance
    if tolerance is None or manifest.quality.max_count_deviation <= tolerance:
        return
    splits = manifest.splits
    worst = max(splits, key=lambda name: abs(splits[name].count_deviation))
    report = splits[worst]
    cause = (
        "the groups frozen by {freeze} already exceed it, or leave no closer counts"
        if manifest.freezing is not None and manifest.freezing.frozen_groups
        else "the group sizes do not allow closer counts"
    )
    raise InfeasibleSplit(
        f"{source}: split {worst!r} gets {report.n_items} items for a target of "
        f"{report.target} (off by {report.count_deviation:+d}, {{given}}); "
        f"{cause}: change {{sizes}} or raise {{tolerance}}",
        refs={
            "given": Ref("tolerance", tolerance),
            "freeze": NO_VALUE,
            "sizes": NO_VALUE,
            "tolerance": NO_VALUE,
        },
    )


def _assignments(
    frame: pl.DataFrame,
    group: Sequence[str],
    id_column: str | None,
    split: pl.Series,
    order: IntArray | None,
) -> pl.DataFrame:
    """``id, group, split`` per item; the id is the row number when there is no id column."""
    ids = pl.col(id_column) if id_column is not None else pl.int_range(pl.len(), dtype=pl.Int64)
    table = frame.select(ids.alias("id"), group_key(group).alias("group")).with_columns(split)
    return table[order] if order is not None else table


def _split_rows(
    row_split: IntArray, names: Sequence[str], order: IntArray | None
) -> dict[str, IntArray]:
    """The input rows of each split, in the rows' order of :func:`_split_frames`."""
    rows = order if order is not None else np.arange(len(row_split))
    placed = row_split[rows]
    return {name: rows[placed == index] for index, name in enumerate(names)}
