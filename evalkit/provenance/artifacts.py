"""What a model, adapter and tokenizer folder holds, and how each is hashed: one definition.

``card``, ``tokens``, ``generate``, ``reload-check`` and ``smoke`` all take
their file lists and hashes from here, so a card, a tokens report and a
``run.json`` made on the same folder agree to the byte. Only files are read
(no torch, no transformers): the card and the pins of ``reload-check`` cost
what hashing costs.

* **Model folder:** ``config.json``, ``generation_config.json`` and the
  weights transformers loads (``model.safetensors``/``pytorch_model.bin``,
  shards and their index, and every shard an index names).
* **Adapter folder:** ``adapter_config.json`` and ``adapter_model.safetensors``
  (or a legacy ``adapter_model.bin``).
* **Tokenizer:** every file a transformers tokenizer reads (vocabularies,
  configs, chat templates, named templates in ``additional_chat_templates/``);
  its hash is sha256 over ``<name>:<sha256>`` lines of those present, in name
  order. A folder holds a tokenizer when it has a vocabulary or a
  ``tokenizer_config.json``.
* **Chat templates** are read as transformers reads them: ``chat_template.jinja``
  and ``additional_chat_templates/*.jinja`` when present (they replace the
  config's), else ``tokenizer_config.json``'s ``chat_template`` (a text, or a
  list of named templates). A lone (default) template is hashed as its
  text; named ones as the JSON of ``[{"name", "template"}]`` sorted
  by name, so the same templates hash the same wherever they are stored.
* **Custom code:** ``auto_map`` in ``config.json``, ``tokenizer_config.json``
  or ``adapter_config.json`` asks transformers to import the folder's own
  Python; evalkit refuses such a folder before anything loads from it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from evalkit.errors import CustomCodeRefused, MalformedFile, UnreadableFile

MODEL_CONFIG_FILES = ("config.json", "generation_config.json")
WEIGHT_SUFFIXES = (".safetensors", ".bin")
WEIGHT_PREFIXES = ("model", "pytorch_model")
WEIGHT_INDEXES = ("model.safetensors.index.json", "pytorch_model.bin.index.json")
ADAPTER_CONFIG = "adapter_config.json"
ADAPTER_WEIGHTS = ("adapter_model.safetensors", "adapter_model.bin")

CHAT_TEMPLATE_FILE = "chat_template.jinja"
CHAT_TEMPLATE_DIR = "additional_chat_templates"
TOKENIZER_CONFIG = "tokenizer_config.json"
# The vocabulary files of the tokenizer classes of causal LMs (fast, BPE, WordPiece,
# sentencepiece in its several names, Mistral's tekken and tiktoken files).
TOKENIZER_VOCABULARIES = (
    "bpe.codes", "merges.txt", "sentencepiece.bpe.model", "sentencepiece.model", "spiece.model",
    "spm.model", "tekken.json", "tiktoken.model", "tokenizer.json", "tokenizer.model",
    "vocab.json", "vocab.txt",
)  # fmt: skip
# Every file directly in a folder that a tokenizer reads, in name order (the hash's order).
# chat_template.json is a processor's file, which tokenizers do not read; it is hashed
# (a change to it never goes unseen) but is no source of the tokenizer's template.
TOKENIZER_FILES = tuple(
    sorted({
        *TOKENIZER_VOCABULARIES, TOKENIZER_CONFIG, CHAT_TEMPLATE_FILE, "chat_template.json",
        "special_tokens_map.json", "added_tokens.json",
    })
)  # fmt: skip
# The files whose ``auto_map`` makes transformers import a folder's own code.
CODE_CONFIGS = ("config.json", TOKENIZER_CONFIG, ADAPTER_CONFIG)


def _json_object(path: Path) -> dict[str, Any] | None:
    """A JSON object file's value; None when it is no object (its reader says what is wrong)."""
    from evalkit.errors import EvalkitError
    from evalkit.io import load_json

    try:
        value = load_json(path)
    except (OSError, EvalkitError):
        return None
    return value if isinstance(value, dict) else None


def refuse_custom_code(folder: Path) -> None:
    """Refuse a folder whose configs ask for its own Python code (``auto_map``).

    transformers imports such code only with ``trust_remote_code=True``, which
    evalkit never passes; without it transformers may ask on stdin, and a
    "y" there runs the code. Refusing first, naming the file and key, means
    nothing is imported from the folder and nothing is asked.
    """
    for name in CODE_CONFIGS:
        path = folder / name
        if not path.is_file():
            continue
        config = _json_object(path)
        if config is None or not config.get("auto_map"):
            continue
        auto_map = config["auto_map"]
        first = next(iter(auto_map.values()), None) if isinstance(auto_map, dict) else auto_map
        if isinstance(first, list | tuple):
            first = next((entry for entry in first if entry), None)
        shown = f" ({first})" if isinstance(first, str) else ""
        raise CustomCodeRefused(
            f"{path}: key 'auto_map' asks to run Python code from the folder{shown}, which "
            "evalkit never does (trust_remote_code stays off); remove 'auto_map' if "
            "transformers ships this architecture itself, or use a folder of one it ships"
        )


def inside(folder: Path, name: str, where: str) -> Path:
    """``folder / name`` for a file name a record gives, refusing one that leaves the folder.

    A name is relative, in forward slashes, without ``..``: what evalkit writes
    (``tokenizer.json``, ``additional_chat_templates/tool_use.jinja``). A
    record that names ``../../etc/passwd`` or an absolute path is refused
    before anything is read.
    """
    parts = PurePosixPath(name).parts
    if (
        not parts
        or "\\" in name
        or "\0" in name
        or PurePosixPath(name).is_absolute()
        or any(part in ("..", ".") for part in parts)
        or len(parts) > 2
    ):
        raise MalformedFile(
            f"{where}: names {name!r}, which is not a file of {folder}; the record is "
            "damaged or was edited: write it again"
        )
    return folder.joinpath(*parts)


def is_weight_file(name: str) -> bool:
    """A file name transformers loads weights from (single file, shard or index)."""
    return (name.endswith(WEIGHT_SUFFIXES) and name.startswith(WEIGHT_PREFIXES)) or (
        name in WEIGHT_INDEXES
    )


def _index_shards(index: Path) -> set[str]:
    value = _json_object(index)
    weight_map = value.get("weight_map") if value is not None else None
    if not isinstance(weight_map, dict) or not all(isinstance(v, str) for v in weight_map.values()):
        raise MalformedFile(
            f"{index}: no 'weight_map' of tensor names to file names; copy or save the model again"
        )
    for shard in weight_map.values():
        if PurePosixPath(shard).name != shard or shard in ("", ".", ".."):
            raise MalformedFile(
                f"{index}: 'weight_map' names {shard!r}, which is not a file of the folder; "
                "copy or save the model again"
            )
    return set(weight_map.values())


def weight_files(folder: Path) -> list[Path]:
    """The weight files of a model folder (shards, indexes and what they name), sorted."""
    names = {p.name for p in folder.iterdir() if p.is_file() and is_weight_file(p.name)}
    for index in WEIGHT_INDEXES:
        if index in names:
            names |= _index_shards(folder / index)
    return [folder / name for name in sorted(names)]


def model_file_names(folder: Path) -> list[str]:
    """The files of a model folder that decide what it computes (configs and weights)."""
    names = [name for name in MODEL_CONFIG_FILES if (folder / name).is_file()]
    return sorted({*names, *(p.name for p in weight_files(folder) if p.is_file())})


def adapter_file_names(folder: Path) -> list[str]:
    """The files of an adapter folder that decide what it computes (config and weights)."""
    return [name for name in (ADAPTER_CONFIG, *ADAPTER_WEIGHTS) if (folder / name).is_file()]


def named_template_files(folder: Path) -> list[str]:
    """``additional_chat_templates/<name>.jinja`` files, as relative names, sorted."""
    directory = folder / CHAT_TEMPLATE_DIR
    if not directory.is_dir():
        return []
    return sorted(
        f"{CHAT_TEMPLATE_DIR}/{path.name}"
        for path in directory.glob("*.jinja")
        if path.is_file() and not path.name.startswith(".")
    )


def tokenizer_file_names(folder: Path) -> list[str]:
    """Every tokenizer file of ``folder`` that exists, relative names in hash order."""
    names = [name for name in TOKENIZER_FILES if (folder / name).is_file()]
    return sorted([*names, *named_template_files(folder)])


def has_tokenizer(folder: Path) -> bool:
    """Whether ``folder`` holds a tokenizer: a vocabulary file or a tokenizer_config.json."""
    return any((folder / name).is_file() for name in (*TOKENIZER_VOCABULARIES, TOKENIZER_CONFIG))


def has_vocabulary(folder: Path) -> bool:
    """Whether ``folder`` holds a vocabulary (a tokenizer config alone loads nothing)."""
    return any((folder / name).is_file() for name in TOKENIZER_VOCABULARIES)


def files_sha256(files: Mapping[str, str], names: Iterable[str] | None = None) -> str:
    """sha256 over ``<name>:<sha256>`` lines, in name order: the tokenizer's hash.

    ``names`` restricts the lines to those files (default: all of ``files``).
    """
    chosen = sorted(files if names is None else (n for n in names if n in files))
    lines = "".join(f"{name}:{files[name]}\n" for name in chosen)
    return hashlib.sha256(lines.encode("utf-8")).hexdigest()


def combined_sha256(files: Mapping[str, str]) -> str:
    """A model's ``weights_sha256``: one sha256 over its weight files' names and hashes."""
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(f"{name}\0{files[name]}\n".encode())
    return digest.hexdigest()


def hash_named(folder: Path, names: Iterable[str]) -> dict[str, str]:
    """sha256 of each named file of ``folder`` (relative names), by name."""
    from evalkit.io import sha256_file

    hashes = {}
    for name in names:
        path = folder / name
        try:
            hashes[name] = sha256_file(path)
        except OSError as error:
            raise UnreadableFile(f"{path}: cannot read: {error.strerror}") from error
    return hashes


def tokenizer_hashes(folder: Path, known: Mapping[str, str] | None = None) -> dict[str, str]:
    """The tokenizer files of ``folder`` and their sha256 (``known``: hashes already taken)."""
    names = tokenizer_file_names(folder)
    have = dict(known or {})
    missing = [name for name in names if name not in have]
    have.update(hash_named(folder, missing))
    return {name: have[name] for name in names}


def tokenizer_sha256(folder: Path, known: Mapping[str, str] | None = None) -> str:
    """The tokenizer's hash: what the card, ``tokens`` and ``run.json`` record as ``sha256``."""
    return files_sha256(tokenizer_hashes(folder, known))


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


def templates_of(value: Any) -> dict[str, str]:
    """A tokenizer's ``chat_template`` value (a text, a name -> text mapping, or the
    config's list of ``{name, template}``) as a name -> text mapping; blank ones dropped."""
    if isinstance(value, str):
        pairs: Iterable[tuple[Any, Any]] = [("default", value)]
    elif isinstance(value, Mapping):
        pairs = value.items()
    elif isinstance(value, list):
        pairs = [
            (entry.get("name"), entry.get("template")) for entry in value if isinstance(entry, dict)
        ]
    else:
        return {}
    return {
        str(name): text
        for name, text in pairs
        if isinstance(name, str) and isinstance(text, str) and text.strip()
    }


def chat_templates(folder: Path) -> dict[str, str]:
    """The folder's chat templates by name, as a transformers tokenizer loads them."""
    templates: dict[str, str] = {}
    jinja = folder / CHAT_TEMPLATE_FILE
    if jinja.is_file():
        templates["default"] = read_text_file(jinja)
    for name in named_template_files(folder):
        templates[PurePosixPath(name).stem] = read_text_file(folder / name)
    if templates:  # template files replace the config's templates, as in transformers
        return templates_of(templates)
    config = folder / TOKENIZER_CONFIG
    if not config.is_file():
        return {}
    from evalkit.io import load_json

    value = load_json(config)  # bounded, duplicate keys refused: one line naming the file
    return templates_of(value.get("chat_template") if isinstance(value, dict) else None)


def chat_template_sha256(templates: Mapping[str, str]) -> str | None:
    """The templates' hash: one template's text, or several as sorted JSON; None for none.

    Every named template is covered (transformers renders ``tool_use`` when
    tools are passed), and the way they are stored (a text, a list in the
    config, files) does not change it. A lone ``default`` is hashed as its text.
    """
    if not templates:
        return None
    if set(templates) == {"default"}:
        text = templates["default"]
    else:
        entries = [{"name": name, "template": templates[name]} for name in sorted(templates)]
        text = json.dumps(entries, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
