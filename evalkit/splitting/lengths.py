"""Text lengths per split: characters by default, tokens with a local tokenizer.

Token counts are what a fine-tuning run pays for (sequence length, truncation),
so ``--tokenizer`` measures them with the model's own tokenizer. A tokenizer
or model folder (``tokenizer_config.json`` beside ``tokenizer.json``) is
loaded as ``evalkit tokens`` loads it and counts what it counts (special
tokens added to a text; a conversation's chat template render), so the two
commands agree; a bare ``tokenizer.json`` file is read with ``tokenizers``
and counts a text's tokens without special tokens. Only local files are
read: evalkit never downloads a tokenizer.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from evalkit.errors import MalformedFile, UnreadableFile, UsageError
from evalkit.splitting.state import IntArray

if TYPE_CHECKING:
    from evalkit.chat import ChatColumn


def is_transformers_tokenizer(tokenizer: Any) -> bool:
    """Whether ``tokenizer`` came from a tokenizer folder (transformers), not a bare file."""
    return hasattr(tokenizer, "backend_tokenizer")


def load_tokenizer(path: Path) -> Any:
    """A transformers tokenizer from a tokenizer folder, else a ``tokenizers.Tokenizer``.

    A folder with ``tokenizer_config.json`` is a transformers tokenizer (see
    :func:`evalkit.tokens.load.load_tokenizer`); a ``tokenizer.json`` file, or
    a folder holding only that, is read with ``tokenizers``.
    """
    if path.is_dir() and (path / "tokenizer_config.json").is_file():
        from evalkit.tokens.load import load_tokenizer as load_folder

        return load_folder(path)
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise UsageError(
            "{tokenizer} needs the optional 'tokenizers' package: pip install 'evalkit[tokenize]'",
            refs=["tokenizer"],
        ) from None
    file = path / "tokenizer.json" if path.is_dir() else path
    if not file.exists():
        where = f"{path} holds no tokenizer.json" if path.is_dir() else f"{path}: no such file"
        raise UnreadableFile(f"{where}; give a local tokenizer.json (evalkit never downloads one)")
    try:
        return Tokenizer.from_file(str(file))
    except Exception as error:  # the library raises a bare Exception on bad files
        first = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise MalformedFile(f"{file}: not a tokenizers JSON file ({first})") from None


def text_lengths(texts: pl.Series, tokenizer: Any | None) -> IntArray:
    """Length of every non-null text: characters, or tokens (a bare tokenizer.json: without
    special tokens; a tokenizer folder: as ``tokenizer(text)`` counts them)."""
    present = texts.drop_nulls()
    if tokenizer is None:
        return present.str.len_chars().to_numpy().astype(np.int64)
    if is_transformers_tokenizer(tokenizer):
        from evalkit.tokens.lengths import text_token_lengths

        return text_token_lengths(tokenizer, present).to_numpy().astype(np.int64)
    encodings = tokenizer.encode_batch(present.to_list(), add_special_tokens=False)
    return np.fromiter((len(e.ids) for e in encodings), dtype=np.int64, count=len(encodings))


def row_lengths(chat: ChatColumn, tokenizer: Any | None, source: str = "input table") -> pl.Series:
    """Length of every row's ``--text`` (null where there is no text).

    Characters of every turn for a conversation; for text columns, characters
    or tokens (two columns, prompt and completion, add up). A tokenizer folder
    counts as ``evalkit tokens`` counts (:mod:`evalkit.tokens.lengths`): a
    conversation is its chat template's render, a pair of text columns is
    ``prompt + completion`` tokenized as one text.
    """
    if tokenizer is None:
        return chat.char_lengths()
    if is_transformers_tokenizer(tokenizer):
        from evalkit.tokens.lengths import token_lengths

        return token_lengths(chat, tokenizer, source=source)
    if chat.is_conversation:
        raise UsageError(
            f"{{tokenizer}}: column {chat.columns[0]!r} holds conversations, whose token "
            "length is that of the chat template's render; give the tokenizer's folder "
            "(tokenizer.json, tokenizer_config.json and its chat template), not a bare "
            "tokenizer.json",
            refs=["tokenizer"],
        )
    total: pl.Series | None = None
    for texts in chat.texts:
        counts = np.zeros(len(texts), dtype=np.int64)
        present = texts.is_not_null().to_numpy()
        counts[present] = text_lengths(texts, tokenizer)
        column = pl.Series("length", counts).scatter(np.flatnonzero(~present), None)
        total = column if total is None else _add_lengths(total, column)
    assert total is not None
    return total


def _add_lengths(left: pl.Series, right: pl.Series) -> pl.Series:
    """Prompt plus completion length; null only when both are."""
    both_null = (left.is_null() & right.is_null()).to_numpy()
    summed = left.fill_null(0) + right.fill_null(0)
    return summed.scatter(np.flatnonzero(both_null), None)
