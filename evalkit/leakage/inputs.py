"""From the files (or frames) of an existing split to one table of rows.

Each input file is one split, named by its file stem (``test.jsonl`` →
``test``); a folder written by ``evalkit split`` stands for its splits, named
by the ``splits`` keys of its ``manifest.json``, in that order; a Hugging
Face ``DatasetDict.save_to_disk`` folder stands for its splits (named as the
DatasetDict names them), and a ``Dataset.save_to_disk`` folder is one split
named by the folder. Ids, texts,
group keys and classes are cast to strings, so that a CSV (where ids may read
as numbers) and a JSONL file of the same data compare equal. The text column
may hold conversations (or be two columns, prompt and completion): it is read
by :func:`evalkit.chat.read_chat` and compared as the text of the chosen
roles' turns.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from evalkit.chat import (
    DEFAULT_COMPARED_ROLES,
    ChatColumn,
    Role,
    read_chat,
    require_compared_roles,
)
from evalkit.errors import InvalidTable, MalformedFile, ParameterError, UnreadableFile, UsageError
from evalkit.io import (
    Table,
    hf_dataset,
    hf_splits,
    is_hf_dataset,
    is_hf_dataset_dict,
    is_path,
    read_table,
    require_columns,
    table_format,
)

if TYPE_CHECKING:
    from evalkit.io import TableLike
    from evalkit.records._audit import AuditOptions

MAX_SPLITS = 62  # split membership is kept as a bit mask in an int64
_TABLE_SUFFIXES = (".parquet", ".jsonl", ".csv", ".ndjson", ".pq", ".json")


@dataclass(frozen=True)
class SplitSource:
    """One split to audit: its name, and the file it comes from (None for a frame)."""

    name: str
    path: Path | None
    sha256: str | None = None
    """sha256 of what was read: the file's bytes, or the frame's content."""


@dataclass(frozen=True)
class Rows:
    """All rows of all splits, one table, plus what is known about each split."""

    table: pl.DataFrame  # split (int), row (int), id, text, group key columns, class
    names: list[str]  # split names, in input order (split index -> name)
    sources: list[SplitSource]
    group_columns: list[str]  # names of the group key columns in ``table``
    texts: list[ChatColumn]  # each split's text column(s), as read


def split_sources(paths: Sequence[Path], *, minimum: int = 2) -> list[SplitSource]:
    """The splits named by files and ``evalkit split`` folders, in the order given.

    ``minimum`` is how many splits the command needs (an audit compares two
    or more; ``evalkit tokens`` measures one as well).
    """
    sources: list[SplitSource] = []
    for path in paths:
        if is_hf_dataset_dict(path):
            sources.extend(SplitSource(name=name, path=path / name) for name in hf_splits(path))
        elif is_hf_dataset(path):
            hf_dataset(path)  # data files outside the folder are refused here
            sources.append(SplitSource(name=path.name, path=path))
        elif path.is_dir():
            sources.extend(_folder_sources(path))
        else:
            table_format(path)  # an unknown extension fails here, naming the file
            sources.append(SplitSource(name=path.stem, path=path))
    _check_names([source.name for source in sources], [str(s.path) for s in sources], minimum)
    return sources


def _folder_sources(folder: Path) -> list[SplitSource]:
    from evalkit.records._manifest import MANIFEST_FILE, read_manifest_document

    manifest = folder / MANIFEST_FILE
    if not manifest.is_file():
        raise UnreadableFile(
            f"{folder}: a folder without {MANIFEST_FILE}; pass the split files themselves, "
            "or a folder written by evalkit split"
        )
    # Only the split names are read; a newer format may name them otherwise.
    _, data = read_manifest_document(
        manifest, hint="pass the split files themselves", what="JSON file"
    )
    try:
        splits = data["splits"]
        names = [str(name) for name in splits]
    except (KeyError, TypeError) as error:
        raise MalformedFile(
            f"{manifest}: no 'splits' object ({error}); is it a manifest written by evalkit split?"
        ) from error
    sources = []
    for name in names:
        found = [folder / f"{name}{suffix}" for suffix in _TABLE_SUFFIXES]
        found = [path for path in found if path.is_file()]
        if len(found) != 1:
            what = "no file" if not found else f"{len(found)} files"
            raise UnreadableFile(
                f"{folder}: {MANIFEST_FILE} names split {name!r} but there is {what} "
                f"{name}.parquet/.jsonl/.csv; pass the split files themselves instead"
            )
        sources.append(SplitSource(name=name, path=found[0]))
    return sources


def _check_names(names: Sequence[str], where: Sequence[str], minimum: int = 2) -> None:
    if len(names) < minimum:
        what = "at least two splits to audit" if minimum == 2 else f"at least {minimum} split"
        raise UsageError(
            f"need {what}, got {len(names)} ({', '.join(where) or 'none'}); "
            "pass one file per split, or a folder written by evalkit split"
        )
    if len(names) > MAX_SPLITS:
        raise UsageError(f"at most {MAX_SPLITS} splits can be audited at once, got {len(names)}")
    seen: dict[str, str] = {}
    for name, source in zip(names, where, strict=True):
        if name in seen:
            raise UsageError(
                f"two splits are named {name!r} ({seen[name]} and {source}): a split is named "
                "by its file stem, so rename one of the files"
            )
        seen[name] = source


def _as_strings(frame: pl.DataFrame, column: str, source: str) -> pl.Expr:
    dtype = frame.schema[column]
    if dtype.is_nested() or dtype == pl.Object:
        raise InvalidTable(
            f"{source}: column {column!r} holds {dtype} values; it must hold text or numbers"
        )
    return pl.col(column).cast(pl.String)


def _scalar_type(dtype: pl.DataType) -> bool:
    return dtype.is_numeric() or dtype in (pl.Boolean, pl.Null)


def _split_rows(
    table: Table,
    index: int,
    id_column: str,
    text_columns: Sequence[str],
    roles: Sequence[Role],
    group: Sequence[str],
    stratify: str | None,
    system: str | None = None,
    tools: str | None = None,
) -> tuple[pl.DataFrame, ChatColumn]:
    needed = [id_column, *text_columns, *group, *([stratify] if stratify else [])]
    frame, label = table.frame, table.label
    if frame.height == 0 and frame.width == 0:  # an empty JSONL split: no rows, no schema
        frame = pl.DataFrame(schema=dict.fromkeys(dict.fromkeys(needed), pl.String))
        table = Table(frame, label, table.path, table.kind, digest=table.digest)
    require_columns(frame, needed, label)
    missing_id = frame[id_column].is_null()
    if missing_id.any():
        first = int(missing_id.arg_true()[0]) + 1
        raise InvalidTable(
            f"{label}: row {first} has no value in id column {id_column!r} "
            f"({int(missing_id.sum())} such rows); every item needs an id"
        )
    # A CSV column of numbers is text to compare all the same.
    scalar = [c for c in text_columns if _scalar_type(frame.schema[c])]
    if scalar:
        frame = frame.with_columns(pl.col(scalar).cast(pl.String))
        table = Table(frame, label, table.path, table.kind, digest=table.digest)
    chat = read_chat(table, text_columns, system=system, tools=tools)
    text = chat.compared_text(roles)
    columns = [
        pl.lit(index, dtype=pl.Int64).alias("split"),
        _as_strings(frame, id_column, label).alias("id"),
        pl.lit(text).alias("text"),
        *[_as_strings(frame, column, label).alias(f"group_{k}") for k, column in enumerate(group)],
    ]
    if stratify is not None:
        columns.append(_as_strings(frame, stratify, label).alias("class"))
    return frame.select(columns), chat


def read_rows(
    inputs: Sequence[Path | str] | Mapping[str, TableLike],
    *,
    id_column: str,
    text_column: str | Sequence[str],
    roles: Sequence[Role] = DEFAULT_COMPARED_ROLES,
    group: Sequence[str] = (),
    stratify: str | None = None,
    system: str | None = None,
    tools: str | None = None,
) -> Rows:
    """Read (or take) every split and stack the audited columns into one table.

    ``text_column`` is one column (text or conversations), two (prompt and
    completion) or three (Alpaca); a conversation's text is the content and
    tool calls of its ``roles`` turns.
    """
    text_columns = [text_column] if isinstance(text_column, str) else list(text_column)
    tables = read_splits(inputs, id_column)
    parts = [
        _split_rows(table, index, id_column, text_columns, roles, group, stratify, system, tools)
        for index, (_, table) in enumerate(tables)
    ]
    require_compared_roles([chat for _, chat in parts], roles)
    table = pl.concat([part for part, _ in parts], how="vertical_relaxed").with_row_index("row")
    return Rows(
        table=table,
        names=[source.name for source, _ in tables],
        sources=[source for source, _ in tables],
        group_columns=[f"group_{k}" for k in range(len(group))],
        texts=[chat for _, chat in parts],
    )


def read_splits(
    inputs: Sequence[Path | str] | Mapping[str, TableLike], id_column: str
) -> list[tuple[SplitSource, Table]]:
    """Each split, read once, with what identifies it (its name, file and sha256)."""
    read: list[tuple[SplitSource, Table]] = []
    if isinstance(inputs, Mapping):
        for name, value in inputs.items():
            label = f"split {str(name)!r}"
            table = read_table(value, name=label, ids=[id_column])
            path = Path(value) if is_path(value) else None
            read.append((SplitSource(name=str(name), path=path, sha256=table.sha256), table))
        _check_names([s.name for s, _ in read], [t.label for _, t in read])
        return read
    for source in split_sources([Path(path) for path in inputs]):
        assert source.path is not None
        table = read_table(source.path, name=source.name, ids=[id_column])
        read.append((SplitSource(source.name, source.path, table.sha256), table))
    return read


def file_fingerprint(source: SplitSource) -> str | None:
    """sha256 of what a split was read from (its file's bytes, or a frame's content)."""
    return source.sha256


def require_conversations(roles_given: bool, conversations: bool, options: AuditOptions) -> None:
    """Refuse ``roles`` when no split's ``text`` holds conversations (both engines)."""
    if roles_given and not conversations:
        raise ParameterError(
            "roles",
            f"{','.join(options.roles)}: {{text}} {' '.join(options.columns)} holds plain "
            "text, not conversations; {roles} chooses the conversation turns compared",
            refs=["text", "roles"],
        )
