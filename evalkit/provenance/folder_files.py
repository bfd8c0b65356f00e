"""The other files of an adapter or model folder: hashes, tokenizer, training settings.

Everything here reads plain files (JSON, YAML, text); nothing loads a
tokenizer or a model, so a card costs what hashing the folder costs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evalkit.errors import MalformedFile, UnreadableFile
from evalkit.provenance import artifacts
from evalkit.provenance.artifacts import hash_named
from evalkit.records._card import TokenizerInfo

TRAINING_FILES = ("training_args.json", "trainer_state.json")
# From trainer_state.json only the settings; its log history is results, not settings.
TRAINER_STATE_KEYS = ("global_step", "max_steps", "num_train_epochs", "train_batch_size")


def hash_files(folder: Path, skip: dict[str, str] | None = None) -> dict[str, str]:
    """sha256 of every regular file directly in ``folder``, by name (``skip``: known hashes),
    and of the tokenizer's named chat templates (``additional_chat_templates/<name>.jinja``)."""
    known = skip or {}
    names = [p.name for p in folder.iterdir() if p.is_file() and not p.name.startswith(".")]
    names += artifacts.named_template_files(folder)
    todo = [name for name in names if not known.get(name)]
    hashes = {
        **{name: known[name] for name in names if known.get(name)},
        **hash_named(folder, todo),
    }
    return dict(sorted(hashes.items()))


def read_json_file(path: Path) -> Any:
    """A JSON file's value, or one clear error naming it (bounded: :mod:`evalkit.io`)."""
    from evalkit.io import load_json

    return load_json(path)


def tokenizer_length(tokenizer_json: Any) -> tuple[int, int | None]:
    """(added tokens, distinct token ids) of a tokenizer.json, as ``len(tokenizer)`` counts."""
    if not isinstance(tokenizer_json, dict):
        return 0, None
    added = [t for t in tokenizer_json.get("added_tokens") or [] if isinstance(t, dict)]
    vocab = (tokenizer_json.get("model") or {}).get("vocab")
    if isinstance(vocab, dict):
        ids = {int(i) for i in vocab.values() if isinstance(i, int)}
    elif isinstance(vocab, list):  # Unigram: [[piece, score], ...], ids by position
        ids = set(range(len(vocab)))
    else:
        return len(added), None
    ids |= {int(t["id"]) for t in added if isinstance(t.get("id"), int)}
    return len(added), len(ids)


def tokenizer_info(folder: Path, hashes: dict[str, str]) -> TokenizerInfo | None:
    """The tokenizer saved in a folder, or None when there is none.

    Its files, hash and chat templates are those of
    :mod:`evalkit.provenance.artifacts` (``hashes``: the folder's files
    hashed already), so ``evalkit tokens`` and ``run.json`` record the same.
    """
    if not artifacts.has_tokenizer(folder):
        return None
    added, length = 0, None
    if (folder / "tokenizer.json").is_file():
        added, length = tokenizer_length(read_json_file(folder / "tokenizer.json"))
    return TokenizerInfo(
        sha256=artifacts.tokenizer_sha256(folder, hashes),
        chat_template_sha256=artifacts.chat_template_sha256(artifacts.chat_templates(folder)),
        added_tokens=added,
        length=length,
    )


def _read_settings(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise UnreadableFile(f"{path}: no such file; pass a JSON or YAML file of training settings")
    if path.suffix.lower() in (".yaml", ".yml"):
        from evalkit.io import load_yaml

        value = load_yaml(path)
    else:
        value = read_json_file(path)
    if not isinstance(value, dict):
        raise MalformedFile(f"{path}: expected a mapping of training settings (key: value)")
    return {str(key): value[key] for key in value}


def training_settings(folder: Path, training_file: Path | None) -> dict[str, Any] | None:
    """training_args.json and trainer_state.json of the folder, then ``--training`` over them."""
    settings: dict[str, Any] = {}
    args = folder / "training_args.json"
    if args.is_file():
        settings.update(_read_settings(args))
    state = folder / "trainer_state.json"
    if state.is_file():
        values = _read_settings(state)
        settings.update({key: values[key] for key in TRAINER_STATE_KEYS if key in values})
    if training_file is not None:
        settings.update(_read_settings(training_file))
    if not settings:
        return None
    # JSON round trip: YAML dates and tuples become what card.json will hold.
    return dict(sorted(json.loads(json.dumps(settings, default=str)).items()))
