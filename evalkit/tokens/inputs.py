"""From split files to what is measured: ids, and the text or conversation of every row.

Each FILE is a split named by its stem; a folder written by ``evalkit split``
stands for its splits (the same rule as ``evalkit audit``). The ``--text``
column(s) are read through :func:`evalkit.chat.read_chat`, so every chat
shape evalkit knows is accepted and a malformed conversation is reported
the same way by every command.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias, cast

from evalkit.chat import ChatColumn, read_chat
from evalkit.errors import NO_VALUE, InvalidTable, Ref, UsageError
from evalkit.io import Table, is_frame, is_path, read_table, require_columns
from evalkit.leakage.inputs import split_sources
from evalkit.records._tokens import Encode, Loss

if TYPE_CHECKING:
    from evalkit.io import TableLike

    Splits: TypeAlias = Sequence[str | Path] | Mapping[str, TableLike] | TableLike
    """Split files and folders, a mapping of split name to table, or one table."""

ASSISTANT, COMPLETION, ALL = (Ref("loss", loss) for loss in ("assistant", "completion", "all"))


@dataclass(frozen=True)
class SplitInput:
    """One split, read."""

    name: str
    path: Path | None
    """The file it was read from (None for a frame)."""
    sha256: str
    ids: list[str]
    """The example ids (the --id column as text, or ``row N``)."""
    chat: ChatColumn
    where: Callable[[int], str]
    """Names a row in an error: ``FILE:LINE`` for JSONL, ``FILE, row N`` otherwise."""


def _ids(frame: object, id_column: str | None, source: str, n: int) -> list[str]:
    import polars as pl

    assert isinstance(frame, pl.DataFrame)
    if id_column is None:
        return [f"row {row + 1}" for row in range(n)]
    values = frame[id_column]
    if values.dtype.is_nested() or values.dtype == pl.Object:
        raise InvalidTable(
            f"{source}: column {id_column!r} holds {values.dtype} values; an id must be text "
            "or a number"
        )
    missing = values.is_null()
    if missing.any():
        first = int(missing.arg_true()[0]) + 1
        raise InvalidTable(
            f"{source}: row {first} has no value in id column {id_column!r}; every example "
            "needs an id (or leave out {id_column} to name examples by row)",
            refs=["id_column"],
        )
    return values.cast(pl.String).to_list()


def split_tables(files: Splits, ids: Sequence[str], *, minimum: int = 1) -> list[tuple[str, Table]]:
    """The named splits of ``files``: split files and folders (named as ``evalkit audit``
    names them), a mapping of split name to table, or one table (a file, or a frame
    named ``data``)."""
    if isinstance(files, Mapping):
        tables = [
            (str(name), read_table(value, name=f"split {str(name)!r}", ids=ids))
            for name, value in files.items()
        ]
        if len(tables) < minimum:
            raise UsageError(f"need at least {minimum} split, got none")
        return tables
    if is_frame(files):
        return [("data", read_table(cast("TableLike", files), name="data", ids=ids))]
    paths = [files] if is_path(files) else list(cast("Sequence[str | Path]", files))
    sources = split_sources([Path(file) for file in paths], minimum=minimum)
    return [
        (source.name, read_table(source.path, name=source.name, ids=ids))
        for source in sources
        if source.path is not None
    ]


def read_splits(
    files: Splits,
    text: Sequence[str],
    id_column: str | None,
    *,
    system: str | None = None,
    tools: str | None = None,
) -> list[SplitInput]:
    """Every split of ``files`` (see :func:`split_tables`), its ``--text`` column(s) read as
    text or conversations (with the ``system`` and ``tools`` columns, see
    :func:`evalkit.chat.read_chat`)."""
    needed = [*text, *([id_column] if id_column else [])]
    tables = split_tables(files, [id_column] if id_column else [])
    # evalkit split writes an empty JSONL file for a split of no items: it has no
    # columns to read, so it takes the columns of the other splits (and their kind).
    columns = next((t.frame for _, t in tables if all(c in t.frame.columns for c in needed)), None)
    splits = []
    for name, table in tables:
        frame, label = table.frame, table.label
        empty = frame.height == 0 and frame.width == 0 and columns is not None
        if empty:
            assert columns is not None
            frame = columns.clear()
            table = Table(frame, label, table.path, "polars", digest=table.sha256)
        require_columns(frame, needed, label)
        chat = read_chat(table, list(text), system=system, tools=tools)
        _require_texts(chat, table.where)
        ids = _ids(frame, id_column, label, frame.height)
        splits.append(SplitInput(name, table.path, table.sha256, ids, chat, table.where))
    kinds = {split.chat.kind for split in splits}
    if len(kinds) > 1:
        raise InvalidTable(
            f"{{text}} {text[0]} holds text in some splits and conversations in others; "
            "every split must hold the same kind",
            refs=["text"],
        )
    return splits


def _require_texts(chat: ChatColumn, where: Callable[[int], str]) -> None:
    """A text column with a null value has nothing to tokenize: say which row."""
    for column, texts in zip(chat.columns, chat.texts, strict=False):
        missing = texts.is_null()
        if missing.any():
            row = int(missing.arg_true()[0])
            raise InvalidTable(
                f"{where(row)}: column {column!r} is empty (null); every example needs a text "
                "to tokenize"
            )


def resolve_modes(
    chat: ChatColumn, loss: Loss | None, encode: Encode | None
) -> tuple[Loss, Encode]:
    """The loss and encoding for this data, the defaults filled in, bad pairs refused."""
    column = chat.columns[0]
    if chat.is_conversation:
        chosen_loss: Loss = loss or "assistant"
        if chosen_loss == "completion" and not chat.paired:
            raise UsageError(
                "{completion}: supervises the completion column, so give two {text} "
                f"columns (prompt and completion); {column!r} alone holds whole conversations "
                "(use {assistant})",
                refs={"completion": COMPLETION, "text": NO_VALUE, "assistant": ASSISTANT},
            )
        return chosen_loss, encode or "template"
    if encode == "template":
        raise UsageError(
            f"{{template}} renders conversations with the chat template, but column "
            f"{column!r} holds text; use {{as_text}} (the default for text)",
            refs={"template": Ref("encode", "template"), "as_text": Ref("encode", "text")},
        )
    if loss == "assistant":
        raise UsageError(
            f"{{assistant}} needs conversations (assistant turns), but column {column!r} "
            "holds text; use {completion} with two {text} columns, or {all}",
            refs={"assistant": ASSISTANT, "completion": COMPLETION, "text": NO_VALUE, "all": ALL},
        )
    if loss == "completion" and not chat.paired:
        raise UsageError(
            "{completion}: give two {text} columns (prompt and completion), or use {all}",
            refs={"completion": COMPLETION, "text": NO_VALUE, "all": ALL},
        )
    return loss or ("completion" if chat.paired else "all"), "text"
