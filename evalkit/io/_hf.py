"""Hugging Face ``save_to_disk`` folders, read with pyarrow (``datasets`` is never needed).

Every command that reads a table reads these through
:func:`evalkit.io.read_table`, which hands them here:

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
from typing import TYPE_CHECKING

from evalkit.errors import MalformedFile, ParameterError, UnreadableFile, UsageError
from evalkit.io._documents import load_json
from evalkit.io._files import read_bytes, sha256_bytes

if TYPE_CHECKING:
    import pyarrow as pa

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


@dataclass(frozen=True)
class HfRead:
    """A ``save_to_disk`` Dataset folder as read: its Arrow table and the digest of its files."""

    table: pa.Table
    sha256: str


def read_hf_dataset(folder: Path) -> HfRead:
    """One ``save_to_disk`` Dataset folder: its Arrow stream files in order, read once.

    The folder's digest is computed from the bytes that were read (every
    regular file under it: each relative name and the sha256 of its bytes,
    sorted), so a file rewritten while the command runs cannot be recorded
    under the other version's digest.
    """
    import pyarrow as pa

    dataset = hf_dataset(folder)
    contents = {item: read_bytes(item) for item in _files_under(folder)}
    by_target = {item.resolve(): data for item, data in contents.items()}
    tables = []
    for file in dataset.data_files:
        data = by_target[file] if file in by_target else read_bytes(file, "Arrow file")
        try:
            tables.append(pa.ipc.open_stream(pa.BufferReader(data)).read_all())
        except (OSError, pa.ArrowInvalid) as error:
            raise MalformedFile(f"{file}: cannot read as an Arrow stream ({error})") from error
    try:
        table = pa.concat_tables(tables)
    except pa.ArrowInvalid as error:
        raise MalformedFile(f"{folder}: its data files hold different columns ({error})") from error
    return HfRead(table, _digest(folder, contents))


def _files_under(folder: Path) -> list[Path]:
    return sorted(item for item in folder.rglob("*") if item.is_file())


def _digest(folder: Path, contents: dict[Path, bytes]) -> str:
    digest = hashlib.sha256()
    for item, data in sorted(contents.items()):
        digest.update(str(item.relative_to(folder)).encode() + b"\0" + sha256_bytes(data).encode())
    return digest.hexdigest()


def folder_sha256(folder: Path) -> str:
    """sha256 over a dataset folder's files: each relative name and content, sorted.

    Every regular file under the folder counts (a file outside it cannot be
    named: :func:`hf_dataset` refuses that), so two folders hash alike
    exactly when they hold the same files with the same bytes.
    """
    hf_dataset(folder)
    return _digest(folder, {item: read_bytes(item) for item in _files_under(folder)})


def sha256_input(path: Path) -> str:
    """sha256 of a table's file, or of a Hugging Face dataset folder's files (names and bytes).

    A folder whose ``state.json`` names data outside it is refused: hashing
    around that data would let it change unseen.
    """
    from evalkit.io._files import sha256_file

    if path.is_dir():
        return folder_sha256(path)
    return sha256_file(path)
