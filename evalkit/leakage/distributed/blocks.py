"""Reading the splits in blocks on the cluster, with stable row numbers.

A JSONL file larger than a block is cut into byte ranges; a range owns the
lines that *start* in it, so each line is read once, and a block's rows are
numbered from 0. The driver learns each block's row count and gives block
``i`` the rows after those of blocks ``0..i-1`` (in file order, files in
input order): the local engine's row numbers, without a central counter.
Other formats are read whole, one task per file.

A block is read by the local engine's own code (``evalkit.leakage.inputs``),
from a temporary file holding its lines, so types, conversation shapes and
errors follow the same rules. Two things only a whole file can decide are
checked: a block that fails, or blocks of one split whose column types or
conversation shape disagree, make that split be read again whole, in one
task, which then fails (or not) exactly as the local engine does.
"""

from __future__ import annotations

import itertools
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl

from evalkit.chat import Role
from evalkit.errors import EvalkitError
from evalkit.io import Table
from evalkit.leakage import findings
from evalkit.leakage.distributed.partitions import hash_part, split_by_part
from evalkit.leakage.distributed.tasks import TextBlock, text_block
from evalkit.leakage.distributed.within import opening_parts
from evalkit.leakage.inputs import SplitSource, _split_rows

JSONL_SUFFIXES = (".jsonl", ".ndjson")


@dataclass(frozen=True)
class Block:
    """A part of one split's file: a byte range of a JSONL file, or the whole input."""

    split: int
    source: SplitSource
    start: int | None = None  # None: the whole file (or frame)
    end: int | None = None


def plan_blocks(sources: Sequence[SplitSource], block_bytes: int) -> list[Block]:
    """The blocks of every split, in input order (JSONL files over ``block_bytes`` in ranges)."""
    blocks: list[Block] = []
    for index, source in enumerate(sources):
        path = source.path
        size = path.stat().st_size if path is not None and path.is_file() else 0
        if path is None or path.suffix.lower() not in JSONL_SUFFIXES or size <= block_bytes:
            blocks.append(Block(index, source))
            continue
        edges = [*range(0, size, block_bytes), size]
        blocks.extend(Block(index, source, a, b) for a, b in itertools.pairwise(edges))
    return blocks


def block_bytes_of(path: Path, start: int, end: int) -> bytes:
    """The lines that start in ``[start, end)`` of the file, each whole."""
    with path.open("rb") as handle:
        if start > 0:
            handle.seek(start - 1)
            handle.readline()  # the rest of the line that started before ``start``
        begin = handle.tell()
        if begin >= end:
            return b""
        data = handle.read(end - begin)
        if data and not data.endswith(b"\n"):
            data += handle.readline()
        return data


@dataclass(frozen=True)
class ReadSpec:
    """What every block read needs to know: the audit's columns and roles."""

    id_column: str
    text_columns: tuple[str, ...]
    roles: tuple[Role, ...]
    group: tuple[str, ...]
    stratify: str | None
    n_splits: int
    parts: int
    opening_words: int
    system: str | None = None
    tools: str | None = None


@dataclass(frozen=True)
class BlockSummary:
    """What the driver learns from a block: counts and the facts that must agree."""

    split: int
    failed: bool
    n_rows: int = 0
    empty_texts: int = 0
    types: tuple[str, ...] = ()  # the dtypes of the columns read, for the agreement check
    kind: str = "text"
    shape: str = "text"
    skipped_parts: int = 0
    json_text: bool = False
    tool_calls: int = 0
    roles_present: frozenset[str] = frozenset()
    classes: dict[str, int] = field(default_factory=dict)
    sample: pl.Series = field(default_factory=lambda: pl.Series("text", [], dtype=pl.String))


def read_block(
    spec: ReadSpec, block: Block, frame: pl.DataFrame | None
) -> tuple[BlockSummary | pl.DataFrame, ...]:
    """Read one block: its summary, routable texts, and its ids and group keys by hash.

    Returns ``(summary, texts, *id_parts, *group_parts, *opening_parts)``
    (``parts`` of each). A block that is a
    range and fails to read returns ``failed`` and empty parts: its split is
    then read whole. A whole split fails here as the local engine fails.
    """
    whole = block.start is None
    try:
        rows, summary = _read(spec, block, frame)
    except EvalkitError:
        if whole:
            raise
        empty = pl.DataFrame()
        return (BlockSummary(block.split, True), empty, *[empty] * (3 * spec.parts))
    ids = split_by_part(rows.select("split", "id"), hash_part(rows["id"], spec.parts), spec.parts)
    group_columns = [c for c in rows.columns if c.startswith("group_")]
    if group_columns:
        keys = rows.select("split", *group_columns)
        groups = split_by_part(keys, hash_part(rows.select(group_columns), spec.parts), spec.parts)
    else:
        groups = [pl.DataFrame()] * spec.parts
    texts: TextBlock = text_block(rows["text"], rows["split"], rows["id"])
    summary = BlockSummary(
        **{
            **summary.__dict__,
            "empty_texts": rows.height - texts.frame.height,
            "sample": texts.sample,
        }
    )
    starts = opening_parts(texts.frame, spec.opening_words, spec.parts)
    return (summary, texts.frame, *ids, *groups, *starts)


def _read(
    spec: ReadSpec, block: Block, frame: pl.DataFrame | None
) -> tuple[pl.DataFrame, BlockSummary]:
    from dataclasses import replace

    from evalkit.io import read_table

    source = block.source
    if frame is not None:
        return _rows(spec, block, read_table(frame, name=f"split {source.name!r}"))
    assert source.path is not None
    if block.start is None or block.end is None:
        return _rows(spec, block, read_table(source.path, ids=[spec.id_column]))
    with tempfile.TemporaryDirectory(prefix="evalkit-block-") as folder:
        part = Path(folder) / source.path.name
        part.write_bytes(block_bytes_of(source.path, block.start, block.end))
        table = read_table(part, ids=[spec.id_column])
        return _rows(spec, block, replace(table, label=str(source.path), path=source.path))


def _rows(spec: ReadSpec, block: Block, table: Table) -> tuple[pl.DataFrame, BlockSummary]:
    needed = [spec.id_column, *spec.text_columns, *spec.group, *filter(None, [spec.stratify])]
    frame = table.frame
    types = tuple(str(frame.schema.get(c)) for c in needed) if frame.width else ()
    rows, chat = _split_rows(
        table,
        block.split,
        spec.id_column,
        spec.text_columns,
        spec.roles,
        spec.group,
        spec.stratify,
        spec.system,
        spec.tools,
    )
    classes: dict[str, int] = {}
    if "class" in rows.columns:
        labels, counts = findings.class_counts(rows.with_columns(pl.lit(0).alias("split")), 1)
        classes = counts[0]
        assert set(labels) == set(classes)
    present = frozenset(chat.roles_present()) if chat.is_conversation else frozenset()
    summary = BlockSummary(
        split=block.split,
        failed=False,
        n_rows=rows.height,
        types=types,
        kind=chat.kind,
        shape=chat.shape,
        skipped_parts=chat.skipped_parts,
        json_text=chat.json_text,
        tool_calls=chat.tool_call_count,
        roles_present=present,
        classes=classes,
    )
    return rows, summary


def splits_to_reread(summaries: Sequence[BlockSummary], blocks: Sequence[Block]) -> set[int]:
    """Splits read in ranges whose blocks failed or disagree on types or shape."""
    facts: dict[int, set[tuple[object, ...]]] = {}
    failed: set[int] = set()
    for summary, block in zip(summaries, blocks, strict=True):
        if block.start is None:
            continue
        if summary.failed:
            failed.add(summary.split)
        elif summary.n_rows:
            facts.setdefault(summary.split, set()).add(
                (summary.types, summary.kind, summary.shape, summary.json_text)
            )
    return failed | {split for split, seen in facts.items() if len(seen) > 1}


def first_rows(summaries: Sequence[BlockSummary]) -> np.ndarray:
    """Each block's first row number in the stacked table (blocks in input order)."""
    counts = np.array([s.n_rows for s in summaries], dtype=np.int64)
    first = np.zeros(len(counts), dtype=np.int64)
    np.cumsum(counts[:-1], out=first[1:])
    return first
