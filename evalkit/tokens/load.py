"""Loading a tokenizer from a local folder: offline, never a download.

transformers would happily treat a name that is not a folder as a Hub id
and fetch it; evalkit refuses, so a run is always pinned to files on disk
(and a typo is an error, not a download). The hub is switched off before
transformers is imported, and every failure of the library becomes one line
naming the folder.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from evalkit.errors import MalformedFile, UnreadableFile, UsageError

# Files that make a folder a tokenizer folder (fast, slow or sentencepiece).
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "vocab.json",
    "tokenizer.model",
    "spiece.model",
)


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


def load_tokenizer(path: Path | str) -> Any:
    """A transformers tokenizer from the local folder ``path`` (``AutoTokenizer``, offline).

    The chat template may sit in ``tokenizer_config.json`` or in
    ``chat_template.jinja``; transformers reads both.
    """
    folder = Path(path)
    check_local_folder(folder)
    if not any((folder / name).is_file() for name in TOKENIZER_FILES):
        raise UnreadableFile(
            f"{folder}: holds no tokenizer files ({', '.join(TOKENIZER_FILES[:2])}, …); "
            "pass a model or tokenizer folder"
        )
    transformers = offline_transformers()
    try:
        return transformers.AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    except Exception as error:  # the library raises many types; the user needs one line
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
    """sha256 of the chat template's text (what decides every render), or None."""
    template = chat_template(tokenizer)
    return hashlib.sha256(template.encode("utf-8")).hexdigest() if template else None
