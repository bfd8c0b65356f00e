"""Text lengths per split: characters by default, tokens with a local tokenizer.

Token counts are what a fine-tuning run pays for (sequence length, truncation),
so ``--tokenizer`` measures them with the model's own tokenizer file. Only a
local file is read (``tokenizer.json``, or a model folder holding one): evalkit
never downloads a tokenizer. A conversation's length counts the characters
of every turn (the system prompt included: the model reads it too); its
token length needs the chat template's render, which is ``evalkit tokens``'s
business, so ``--tokenizer`` applies to text columns here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from evalkit.chat import ChatColumn
from evalkit.errors import MalformedFile, UnreadableFile, UsageError
from evalkit.splitting.state import IntArray


def load_tokenizer(path: Path) -> Any:
    """A ``tokenizers.Tokenizer`` from a tokenizer.json file or a folder holding one."""
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise UsageError(
            "--tokenizer needs the optional 'tokenizers' package: pip install 'evalkit[tokenize]'"
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
    """Length of every non-null text: characters, or tokens without special tokens."""
    present = texts.drop_nulls()
    if tokenizer is None:
        return present.str.len_chars().to_numpy().astype(np.int64)
    encodings = tokenizer.encode_batch(present.to_list(), add_special_tokens=False)
    return np.fromiter((len(e.ids) for e in encodings), dtype=np.int64, count=len(encodings))


def row_lengths(chat: ChatColumn, tokenizer: Any | None) -> pl.Series:
    """Length of every row's ``--text`` (null where there is no text).

    Characters of every turn for a conversation; for text columns, characters
    or tokens (two columns, prompt and completion, add up).
    """
    if tokenizer is None:
        return chat.char_lengths()
    if chat.is_conversation:
        raise UsageError(
            f"--tokenizer: column {chat.columns[0]!r} holds conversations, whose token "
            "length is that of the chat template's render; split --tokenizer counts the "
            "tokens of text columns (drop --tokenizer to report characters of every turn)"
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
