"""The other files of an adapter or model folder: hashes, tokenizer, training settings.

Everything here reads plain files (JSON, YAML, text); nothing loads a
tokenizer or a model, so a card costs what hashing the folder costs.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from evalkit.errors import MalformedFile, UnreadableFile
from evalkit.provenance.models import TokenizerInfo

TOKENIZER_FILES = (
    "added_tokens.json", "chat_template.jinja", "chat_template.json", "merges.txt",
    "special_tokens_map.json", "tokenizer.json", "tokenizer.model", "tokenizer_config.json",
    "vocab.json", "vocab.txt",
)  # fmt: skip
# What marks a folder as holding a tokenizer (tokenizer_config.json alone does not).
TOKENIZER_MARKERS = ("tokenizer.json", "tokenizer.model", "vocab.json", "vocab.txt")
TRAINING_FILES = ("training_args.json", "trainer_state.json")
# From trainer_state.json only the settings; its log history is results, not settings.
TRAINER_STATE_KEYS = ("global_step", "max_steps", "num_train_epochs", "train_batch_size")


def hash_files(folder: Path, skip: dict[str, str] | None = None) -> dict[str, str]:
    """sha256 of every regular file directly in ``folder``, by name (``skip``: known hashes)."""
    from evalkit.io import sha256_file

    known = skip or {}
    hashes = {}
    for path in sorted(folder.iterdir()):
        if path.is_file() and not path.name.startswith("."):
            try:
                hashes[path.name] = known.get(path.name) or sha256_file(path)
            except OSError as error:
                raise UnreadableFile(f"{path}: cannot read: {error.strerror}") from error
    return hashes


def read_json_file(path: Path) -> Any:
    """A JSON file's value, or one clear error naming it (bounded: :mod:`evalkit.documents`)."""
    from evalkit.documents import load_json

    return load_json(path)


def read_text_file(path: Path) -> str:
    """A UTF-8 text file's content, or one clear error naming it (never a decode traceback)."""
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise MalformedFile(
            f"{path}: not UTF-8 text (byte {error.start}); save it again as UTF-8"
        ) from error
    except OSError as error:
        raise UnreadableFile(f"{path}: cannot read: {error.strerror}") from error


def _sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _chat_template(folder: Path) -> str | None:
    jinja = folder / "chat_template.jinja"
    if jinja.is_file():
        return read_text_file(jinja)
    for name in ("chat_template.json", "tokenizer_config.json"):
        path = folder / name
        if path.is_file():
            value = read_json_file(path)
            template = value.get("chat_template") if isinstance(value, dict) else None
            if isinstance(template, str):
                return template
            if template:  # a list of named templates
                return json.dumps(template, sort_keys=True, ensure_ascii=False)
    return None


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
    """The tokenizer saved in a folder, or None when there is none."""
    if not any(name in hashes for name in TOKENIZER_MARKERS):
        return None
    lines = "".join(f"{name}:{hashes[name]}\n" for name in TOKENIZER_FILES if name in hashes)
    added, length = 0, None
    if "tokenizer.json" in hashes:
        added, length = tokenizer_length(read_json_file(folder / "tokenizer.json"))
    template = _chat_template(folder)
    return TokenizerInfo(
        sha256=_sha256_text(lines),
        chat_template_sha256=_sha256_text(template) if template is not None else None,
        added_tokens=added,
        length=length,
    )


def _read_settings(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise UnreadableFile(f"{path}: no such file; pass a JSON or YAML file of training settings")
    if path.suffix.lower() in (".yaml", ".yml"):
        from evalkit.documents import load_yaml

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
