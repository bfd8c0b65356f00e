"""What a model, adapter or tokenizer folder holds, and the files a run pins.

No torch here: ``reload-check`` verifies every pinned hash before it starts
the process that imports torch, so a changed file is reported in a second,
not after a model load. A folder is judged by its files: ``config.json``
plus weights make a model, ``adapter_config.json`` plus adapter weights an
adapter, and the tokenizer files (those transformers reads) a tokenizer; the
lists and hashes are :mod:`evalkit.provenance.artifacts`', shared with the
card and ``evalkit tokens``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalkit.errors import MalformedFile, ModelLoadError
from evalkit.io import sha256_file
from evalkit.provenance.artifacts import ADAPTER_CONFIG as ADAPTER_CONFIG
from evalkit.provenance.artifacts import ADAPTER_WEIGHTS as ADAPTER_WEIGHTS
from evalkit.provenance.artifacts import (
    adapter_file_names,
    inside,
    model_file_names,
    refuse_custom_code,
    tokenizer_file_names,
)
from evalkit.provenance.artifacts import combined_sha256 as combined_sha256
from evalkit.provenance.artifacts import has_tokenizer as has_tokenizer
from evalkit.provenance.artifacts import weight_files as weight_files
from evalkit.records._run import RUN_FILE
from evalkit.tokens.load import check_local_folder


def read_json(path: Path) -> dict[str, Any]:
    """A JSON object from ``path``, or a one-line error naming it."""
    from evalkit.io import load_json

    value = load_json(path)
    if not isinstance(value, dict):
        raise MalformedFile(f"{path}: expected a JSON object, found {type(value).__name__}")
    return value


# The keys a config.json names its context length by (GPT-2 style configs: n_positions).
CONTEXT_KEYS = ("max_position_embeddings", "n_positions", "n_ctx")


def context_length(config: dict[str, Any]) -> tuple[str, int] | None:
    """The key and value of a model's context length in its ``config.json``, if it has one.

    A model with learned absolute positions (GPT-2, OPT) indexes past its
    position table beyond it, a torch IndexError mid-generation; one with
    rotary positions runs on, outside what it was trained for.
    """
    for key in CONTEXT_KEYS:
        value = config.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return key, value
    return None


def check_model_folder(folder: Path, what: str = "model") -> dict[str, Any]:
    """The ``config.json`` of a model folder, refusing a folder that holds no model
    or one that asks to run its own code (``auto_map``)."""
    check_local_folder(folder, what)
    config = folder / "config.json"
    if (folder / ADAPTER_CONFIG).is_file() and not config.is_file():
        hint = (
            "pass it as {adapter} and the model it was trained on as {base}"
            if what == "model"
            else "merge it first (PEFT merge_and_unload, then save_pretrained)"
        )
        raise ModelLoadError(
            f"{folder}: is an adapter folder (adapter_config.json), not a {what}; {hint}",
            refs=["adapter", "base"],
        )
    if not config.is_file():
        raise ModelLoadError(
            f"{folder}: holds no model (no config.json); pass the folder save_pretrained wrote"
        )
    if not weight_files(folder):
        raise ModelLoadError(
            f"{folder}: has a config.json but no weights (model.safetensors, "
            "model-*.safetensors or pytorch_model*.bin); the download or save is incomplete"
        )
    refuse_custom_code(folder)
    files = weight_files(folder)
    if not any(path.suffix == ".safetensors" for path in files):  # transformers reads the .bin
        check_pickles(files)
    return read_json(config)


def check_adapter_folder(folder: Path) -> dict[str, Any]:
    """The ``adapter_config.json`` of a PEFT adapter folder, refusing anything else."""
    check_local_folder(folder, "adapter")
    config = folder / ADAPTER_CONFIG
    if not config.is_file():
        hint = (
            " (it looks like a model folder: pass it as {base})"
            if (folder / "config.json").is_file()
            else ""
        )
        raise ModelLoadError(f"{folder}: holds no PEFT adapter (no adapter_config.json){hint}")
    if not any((folder / name).is_file() for name in ADAPTER_WEIGHTS):
        raise ModelLoadError(
            f"{folder}: has adapter_config.json but no adapter_model.safetensors; the save "
            "is incomplete"
        )
    refuse_custom_code(folder)
    if not (folder / ADAPTER_WEIGHTS[0]).is_file():  # PEFT reads the .bin
        check_pickles([folder / ADAPTER_WEIGHTS[1]])
    return read_json(config)


def check_pickles(files: list[Path]) -> None:
    """Refuse a pickled weight file (``*.bin``) whose records would expand past its tensors.

    torch.load decompresses every record of the zip whole, so a few-MB
    ``adapter_model.bin`` whose record is a zip bomb takes gigabytes before
    any shape is checked. The card's check (each record's declared size
    against the shapes the pickle declares, from the zip's directory and the
    pickle alone) runs before transformers or PEFT open the file.
    """
    from evalkit.provenance.torch_pickle import check_archive

    for path in files:
        if path.suffix == ".bin" and path.is_file():
            check_archive(path)


@dataclass(frozen=True)
class Pins:
    """The files of a folder that decide what a run computes, with their sha256."""

    folder: str
    """The folder as given."""
    files: dict[str, str]
    """File name -> sha256, sorted by name."""


def pin_files(folder: Path, names: list[str]) -> Pins:
    """sha256 of each named file of ``folder`` (relative names), sorted by name."""
    return Pins(str(folder), {name: sha256_file(folder / name) for name in sorted(set(names))})


def model_pins(folder: Path) -> Pins:
    """The config, generation config and weight files of a model folder."""
    return pin_files(folder, model_file_names(folder))


def adapter_pins(folder: Path) -> Pins:
    """The adapter config and weights of a PEFT adapter folder."""
    return pin_files(folder, adapter_file_names(folder))


def tokenizer_pins(folder: Path) -> Pins:
    """The tokenizer files of a folder (named templates in their subfolder included)."""
    return pin_files(folder, tokenizer_file_names(folder))


def changed_pins(
    folder: Path, pinned: dict[str, str], *, weights: bool = False, where: str = RUN_FILE
) -> str | None:
    """The first problem with a pinned folder now: a changed, missing or new file.

    Returns one line naming the file, or None when every pinned file has its
    pinned sha256. With ``weights``, a weight file that was not there at the
    run (a new shard) counts as a change too: transformers would load it. A
    pinned name that leaves the folder (``../x``, an absolute path) is refused
    before any file is read: ``where`` (the record) is named.
    """
    paths = {name: inside(folder, name, where) for name in sorted(pinned)}
    if not folder.is_dir():
        return f"{folder}: the folder the run pinned no longer exists"
    for name, path in paths.items():
        if not path.is_file():
            return f"{path}: pinned by the run but no longer exists"
        now = sha256_file(path)
        if now != pinned[name]:
            return (
                f"{path}: changed since the run (sha256 {pinned[name][:12]}… then, {now[:12]}… now)"
            )
    if weights:
        for path in weight_files(folder):
            if path.name not in pinned:
                return f"{path}: a weight file that was not there at the run"
    return None
