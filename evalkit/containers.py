"""Tables that come in containers: ``.json`` files and Hugging Face ``save_to_disk`` folders.

Every command that reads a table (split, audit, tokens, prompts, score,
smoke, generate) reads these through :func:`evalkit.io.read_table`, which
hands them here:

* a ``.json`` file holds a JSON array of objects, or JSON Lines;
* a ``Dataset.save_to_disk`` folder (``state.json`` beside Arrow stream files)
  is one table, read with pyarrow (the ``datasets`` library is never needed);
* a ``DatasetDict.save_to_disk`` folder (``dataset_dict.json`` and one such
  folder per split) is one table per split: ``audit`` and ``tokens`` read
  every split, the other commands take one with ``--hf-split NAME``.

A ``state.json`` may only name data files inside its folder: a file outside
would be read (and left out of the folder's hash) without the user seeing it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalkit.documents import DocumentError, load_json, parse_json
from evalkit.errors import InvalidTable, MalformedFile, ParameterError, UnreadableFile, UsageError

if TYPE_CHECKING:
    import polars as pl

STATE = "state.json"
DATASET_DICT = "dataset_dict.json"


def is_hf_dataset(path: Path) -> bool:
    """Whether ``path`` is a folder written by ``Dataset.save_to_disk``."""
    return path.is_dir() and (path / STATE).is_file()


def is_hf_dataset_dict(path: Path) -> bool:
    """Whether ``path`` is a folder written by ``DatasetDict.save_to_disk``."""
    return path.is_dir() and (path / DATASET_DICT).is_file()


def hf_splits(folder: Path) -> list[str]:
    """The split names a ``DatasetDict`` folder lists, in its order."""
    document = load_json(folder / DATASET_DICT)
    splits = document.get("splits") if isinstance(document, dict) else None
    if not (isinstance(splits, list) and all(isinstance(name, str) for name in splits)):
        raise MalformedFile(
            f"{folder / DATASET_DICT}: no list of split names under 'splits'; is it a "
            "folder written by DatasetDict.save_to_disk?"
        )
    for name in splits:
        _inside(folder, folder / name, folder / DATASET_DICT)
        if not is_hf_dataset(folder / name):
            raise UnreadableFile(
                f"{folder}: {DATASET_DICT} lists split {name!r} but {folder / name} holds no "
                f"{STATE}; save the DatasetDict again"
            )
    return splits


def resolve_hf_split(path: Path, hf_split: str | None) -> Path:
    """The table ``path`` names, given the ``--hf-split`` choice (if any).

    A ``DatasetDict`` folder needs a split; anything else must not get one.
    """
    if is_hf_dataset_dict(path):
        splits = hf_splits(path)
        if hf_split is None:
            raise UsageError(
                f"{path}: is a Hugging Face DatasetDict with splits {', '.join(splits)}; "
                "choose one with {hf_split}",
                refs={"hf_split": "NAME"},
            )
        if hf_split not in splits:
            raise UsageError(
                f"{path}: no split {hf_split!r} in this DatasetDict; its splits are: "
                f"{', '.join(splits)}"
            )
        return path / hf_split
    if hf_split is not None:
        raise ParameterError(
            "hf_split",
            f"{hf_split}: {path} is not a Hugging Face DatasetDict folder "
            f"(no {DATASET_DICT}); leave out {{hf_split}}",
            refs=["hf_split"],
        )
    return path


def _inside(folder: Path, target: Path, named_in: Path) -> Path:
    """``target`` resolved, refused unless it lies inside ``folder``."""
    resolved = target.resolve()
    if resolved != folder.resolve() and folder.resolve() not in resolved.parents:
        raise MalformedFile(
            f"{named_in}: names {target.name!r}, which lies outside {folder}; a saved "
            "dataset's files must be inside its folder (save it again with save_to_disk)"
        )
    return resolved


@dataclass(frozen=True)
class HfDataset:
    """The files of one ``save_to_disk`` Dataset folder."""

    folder: Path
    data_files: list[Path]


def hf_dataset(folder: Path) -> HfDataset:
    """The data files ``state.json`` names, each checked to lie inside the folder."""
    if is_hf_dataset_dict(folder):
        raise UsageError(
            f"{folder}: is a Hugging Face DatasetDict with splits {', '.join(hf_splits(folder))}; "
            "choose one with {hf_split}",
            refs={"hf_split": "NAME"},
        )
    state_path = folder / STATE
    if not state_path.is_file():
        raise UnreadableFile(
            f"{folder}: is a folder but not a Hugging Face save_to_disk folder (no {STATE})"
        )
    try:
        state = load_json(state_path)
        names = [item["filename"] for item in state["_data_files"]]
    except (KeyError, TypeError) as error:
        raise MalformedFile(
            f"{state_path}: not a Hugging Face save_to_disk state (no {error} in _data_files)"
        ) from error
    if not names or not all(isinstance(name, str) and name for name in names):
        raise MalformedFile(f"{state_path}: lists no data files")
    if state.get("_indices_data_files"):
        raise MalformedFile(
            f"{state_path}: the dataset keeps an indices mapping; save it again after "
            "dataset.flatten_indices()"
        )
    files = [_inside(folder, folder / name, state_path) for name in names]
    return HfDataset(folder=folder, data_files=files)


def read_hf_dataset(folder: Path) -> pl.DataFrame:
    """One ``save_to_disk`` Dataset folder as a frame (its Arrow stream files, in order)."""
    import polars as pl
    import pyarrow as pa

    from evalkit.documents import require_regular_file

    dataset = hf_dataset(folder)
    tables = []
    for file in dataset.data_files:
        require_regular_file(file, "Arrow file")
        try:
            with pa.memory_map(str(file)) as source:
                tables.append(pa.ipc.open_stream(source).read_all())
        except (OSError, pa.ArrowInvalid) as error:
            raise MalformedFile(f"{file}: cannot read as an Arrow stream ({error})") from error
    try:
        table = pa.concat_tables(tables)
    except pa.ArrowInvalid as error:
        raise MalformedFile(f"{folder}: its data files hold different columns ({error})") from error
    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)
    return frame


def folder_sha256(folder: Path) -> str:
    """sha256 over a dataset folder's files: each relative name and content, sorted.

    Every regular file under the folder counts (a file outside it cannot be
    named: :func:`hf_dataset` refuses that), so two folders hash alike
    exactly when they hold the same files with the same bytes.
    """
    from evalkit.io import sha256_file

    digest = hashlib.sha256()
    for item in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(str(item.relative_to(folder)).encode() + b"\0" + sha256_file(item).encode())
    return digest.hexdigest()


def json_records(data: bytes, name: str) -> list[dict[str, Any]] | None:
    """A ``.json`` file's records when it holds a JSON array of objects; None for JSON Lines."""
    if not data.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"["):
        return None
    try:
        document = parse_json(data, name)
    except DocumentError as error:
        raise MalformedFile(f"{error.message}; a .json table is a JSON array of objects") from error
    assert isinstance(document, list)
    for number, record in enumerate(document, start=1):
        if not isinstance(record, dict):
            raise InvalidTable(
                f"{name}: element {number} of the array is not a JSON object; a .json table "
                "is an array of objects (one per row) or JSON Lines"
            )
    return document


def records_as_jsonl(records: list[dict[str, Any]]) -> bytes:
    """The records as JSON Lines, so that they are typed exactly as the same data in JSONL."""
    import json

    import orjson

    lines = []
    for record in records:
        try:
            lines.append(orjson.dumps(record))
        except TypeError:  # an integer past 64 bits, a lone surrogate: Python's json writes it
            lines.append(json.dumps(record, ensure_ascii=False).encode("utf-8", "surrogatepass"))
    return b"\n".join(lines) + (b"\n" if lines else b"")
