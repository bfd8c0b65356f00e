"""Loading a tokenizer from a local folder: offline, never a download.

transformers would happily treat a name that is not a folder as a Hub id
and fetch it; evalkit refuses, so a run is always pinned to files on disk
(and a typo is an error, not a download). The hub is switched off before
transformers is imported, and every failure of the library becomes one line
naming the folder. transformers is never allowed to run a folder's own code
(``trust_remote_code=False`` on every load, and a folder whose configs name
code in ``auto_map`` refused before transformers sees it), so it never asks
on stdin either.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from evalkit.errors import EvalkitError, MalformedFile, UnreadableFile, UsageError
from evalkit.io import load_json
from evalkit.provenance import artifacts


def offline_transformers() -> Any:
    """Import transformers with the Hub switched off and its chatter silenced."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
    try:
        import transformers
    except ImportError:
        raise UsageError(
            "this needs the optional 'transformers' package: pip install 'evalkit[tokenize]'"
        ) from None
    transformers.utils.logging.set_verbosity_error()
    return transformers


def check_local_folder(path: Path, what: str = "tokenizer") -> None:
    """Refuse anything but an existing local folder, saying why a Hub id is refused."""
    if path.is_dir():
        return
    if path.exists():
        raise UnreadableFile(f"{path}: is a file; pass the {what} folder that holds it")
    text = str(path)
    looks_like_hub_id = text.count("/") == 1 and not text.startswith((".", "/", "~"))
    hint = (
        f"; it looks like a Hub id, and evalkit never downloads: fetch it first (e.g. "
        f"`huggingface-cli download {text} --local-dir DIR`) and pass DIR"
        if looks_like_hub_id
        else f"; pass a local {what} folder (evalkit never downloads)"
    )
    raise UnreadableFile(f"{path}: no such folder{hint}")


# Tokenizer classes that are the fast tokenizer itself, with no family-specific code.
GENERIC_CLASSES = frozenset({"PreTrainedTokenizerFast", "TokenizersBackend"})


def _generic_tokenizer_folder(folder: Path) -> bool:
    """A tokenizer-only folder whose class is the generic fast tokenizer.

    ``AutoTokenizer`` loads such a folder as ``PreTrainedTokenizerFast``, but
    only after importing the model-config machinery (and torch with it),
    which costs seconds; loading the class directly gives the same tokenizer.
    """
    config = folder / "tokenizer_config.json"
    if (folder / "config.json").exists() or not (folder / "tokenizer.json").is_file():
        return False
    from evalkit.io import load_json

    try:
        tokenizer_class = load_json(config).get("tokenizer_class")
    except (EvalkitError, AttributeError):
        return False  # let AutoTokenizer say what is wrong with it
    return tokenizer_class in GENERIC_CLASSES


_TOKENIZER_JSON = tuple(name for name in artifacts.TOKENIZER_FILES if name.endswith(".json"))


def _damaged_tokenizer_file(folder: Path) -> MalformedFile | None:
    """The file at fault once transformers failed: a JSON file that does not parse,
    or a config without the ``tokenizer.json`` it needs (transformers then says only
    "Couldn't instantiate the backend tokenizer from one of: ").
    """
    for name in _TOKENIZER_JSON:
        path = folder / name
        if not path.is_file():
            continue
        try:
            load_json(path)
        except EvalkitError as error:
            return MalformedFile(
                f"{error.message}; the tokenizer files are damaged: copy or save them again"
            )
    if not artifacts.has_vocabulary(folder):
        return MalformedFile(
            f"{folder}: has a tokenizer config but no vocabulary (tokenizer.json, "
            "tokenizer.model or vocab.json); copy the model's tokenizer.json here"
        )
    return None


def load_tokenizer(path: Path | str) -> Any:
    """A transformers tokenizer from the local folder ``path`` (``AutoTokenizer``, offline).

    The chat template may sit in ``tokenizer_config.json`` or in
    ``chat_template.jinja``; transformers reads both.
    """
    folder = Path(path)
    check_local_folder(folder)
    if not artifacts.has_tokenizer(folder):
        raise UnreadableFile(
            f"{folder}: holds no tokenizer files (tokenizer.json, tokenizer_config.json, …); "
            "pass a model or tokenizer folder"
        )
    artifacts.refuse_custom_code(folder)
    transformers = offline_transformers()
    loader = (
        transformers.PreTrainedTokenizerFast
        if _generic_tokenizer_folder(folder)
        else transformers.AutoTokenizer
    )
    try:
        return loader.from_pretrained(str(folder), local_files_only=True, trust_remote_code=False)
    except Exception as error:  # the library raises many types; the user needs one line
        damaged = _damaged_tokenizer_file(folder)
        if damaged is not None:
            raise damaged from None
        first = str(error).strip().splitlines()[0] if str(error).strip() else ""
        raise MalformedFile(
            f"{folder}: transformers cannot load this tokenizer ({type(error).__name__}: "
            f"{first[:200]})"
        ) from None


def chat_template(tokenizer: Any) -> str | None:
    """The tokenizer's default chat template, or None when it has none."""
    template = getattr(tokenizer, "chat_template", None)
    if isinstance(template, dict):  # several named templates: the default one renders
        template = template.get("default")
    return template if isinstance(template, str) and template.strip() else None


def chat_template_sha256(tokenizer: Any) -> str | None:
    """The hash of every chat template the tokenizer holds (named ones too), or None.

    Defined in :mod:`evalkit.provenance.artifacts`, where the card hashes the
    same templates from the folder's files.
    """
    return artifacts.chat_template_sha256(
        artifacts.templates_of(getattr(tokenizer, "chat_template", None))
    )


def tokenizer_sha256(folder: Path | str) -> str:
    """sha256 of the folder's tokenizer files: what the card and ``run.json`` record too.

    The stop ids (``generation_config.json``) are reported beside it, as ``stop_tokens``.
    """
    return artifacts.tokenizer_sha256(Path(folder))


def stop_token_ids(tokenizer: Any, folder: Path | str | None = None) -> list[int]:
    """The ids generation stops on: the eos token and ``generation_config.json``'s eos ids.

    Model families whose end-of-turn token is not the tokenizer's eos (Gemma's
    ``<end_of_turn>``, Llama 3's ``<|eot_id|>``) list it in the model folder's
    ``generation_config.json``; ``generate`` stops on any of them.
    """
    stops: list[int] = []
    eos = getattr(tokenizer, "eos_token_id", None)
    if isinstance(eos, int):
        stops.append(eos)
    config = Path(folder) / "generation_config.json" if folder is not None else None
    if config is not None and config.is_file():
        from evalkit.io import load_json

        try:
            value = load_json(config).get("eos_token_id")
        except (EvalkitError, AttributeError) as error:
            raise MalformedFile(
                f"{config}: not a JSON object ({error}); fix it or remove it"
            ) from None
        values = value if isinstance(value, list) else [value]
        stops.extend(v for v in values if isinstance(v, int) and not isinstance(v, bool))
    return sorted(set(stops))


def require_fast(tokenizer: Any, folder: Path | str) -> None:
    """Refuse a slow (pure Python) tokenizer: the loss mask needs character offsets."""
    if not getattr(tokenizer, "is_fast", False):
        raise UsageError(
            f"{folder}: transformers loaded a slow tokenizer ({type(tokenizer).__name__}), "
            "which gives no character offsets; add the folder's tokenizer.json (save it with "
            "a fast tokenizer) so the loss mask can be computed"
        )
