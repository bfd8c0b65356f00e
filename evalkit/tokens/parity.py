"""Is the inference prompt a token prefix of the training sequence?

``generate`` feeds the model ``apply_chat_template(messages[:-1],
add_generation_prompt=True)``; training showed it the whole conversation.
When the first is not a token prefix of the second, the model is asked to
continue a text it never saw during training (LlamaFactory#10772).

Encoding every prompt would cost as much as encoding the data again, so
most prompts are not encoded whole. A tokenizer splits its input at special
tokens before anything else, and encodes the pieces between them
independently; so when the prompt is a character prefix of the training
render, and a cleanly split special token (no ``lstrip``/``rstrip``,
matched on the raw text) starts at character ``s`` of both, the prompt's
ids are the training ids before that token followed by the ids of
``prompt[s:]`` - a few tokens (``<|im_start|>assistant\\n``). Every other
prompt is encoded whole. Tests hold both paths to ``encode_renders`` of
``prompt_renders``, the ids ``generate`` uses.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from evalkit.tokens.encode import backend, encode_batch

# How far back from the prompt's end a split token is looked for.
MAX_TAIL_TOKENS = 64


@dataclass(frozen=True)
class PromptMatch:
    """How one inference prompt's ids compare with the training ids."""

    length: int
    """Tokens of the inference prompt."""
    divergence: int | None
    """First position where the prompt's ids differ from the training ids (None: a prefix)."""
    prompt_id: int | None
    """The prompt's id at that position (None: the prompt is longer than the training ids)."""
    train_id: int | None
    """The training id at that position (None: the training ids end before it)."""


def split_token_ids(tokenizer: Any) -> frozenset[int]:
    """Added tokens that always split the text where they occur, whatever surrounds them."""
    has_normalizer = backend(tokenizer).normalizer is not None
    ids = set()
    for token_id, added in tokenizer.added_tokens_decoder.items():
        if added.lstrip or added.rstrip or added.single_word:
            continue
        if added.normalized and has_normalizer:
            continue
        ids.add(int(token_id))
    return frozenset(ids)


def compare(prompt: Sequence[int], train: Sequence[int], offset: int = 0) -> PromptMatch:
    """Compare ``prompt`` with ``train[offset:]``; positions count from the sequence start."""
    for index, prompt_id in enumerate(prompt):
        position = offset + index
        train_id = train[position] if position < len(train) else None
        if train_id != prompt_id:
            return PromptMatch(offset + len(prompt), position, prompt_id, train_id)
    return PromptMatch(offset + len(prompt), None, None, None)


def _split_before(
    prompt: str, train: str, encoding: Any, train_ids: Sequence[int], splits: frozenset[int]
) -> tuple[int, int] | None:
    """(token index, character) of the last split token inside ``prompt``, when usable."""
    length = len(prompt)
    if not length or not train.startswith(prompt):
        return None
    index = encoding.char_to_token(length - 1)
    if index is None:
        return None
    for _ in range(MAX_TAIL_TOKENS):
        if index < 0:
            return None
        if train_ids[index] in splits:
            chars = encoding.token_to_chars(index)
            if chars is None or chars[1] > length:
                return None
            return index, chars[0]
        index -= 1
    return None


def prompt_matches(
    tokenizer: Any,
    prompts: Sequence[str | None],
    trains: Sequence[str],
    encodings: Sequence[Any],
    train_ids: Sequence[Sequence[int]],
    *,
    splits: frozenset[int],
    add_special_tokens: bool = False,
    shortcut: bool = True,
) -> list[PromptMatch | None]:
    """How each prompt (None: the row has none) compares with its row's training ids.

    ``shortcut`` allows the split-token path described above; it is only
    sound when the training ids are the render's own (no special tokens
    added around it) and the prompt is encoded the same way.
    """
    matches: list[PromptMatch | None] = [None] * len(prompts)
    whole_rows: list[int] = []
    tail_rows: list[tuple[int, int]] = []
    tails: list[str] = []
    for row, prompt in enumerate(prompts):
        if prompt is None:
            continue
        head = (
            _split_before(prompt, trains[row], encodings[row], train_ids[row], splits)
            if shortcut and not add_special_tokens
            else None
        )
        if head is None:
            whole_rows.append(row)
        else:
            tail_rows.append((row, head[0]))
            tails.append(prompt[head[1] :])
    for (row, index), encoded in zip(
        tail_rows, encode_batch(tokenizer, tails, add_special_tokens=False), strict=True
    ):
        tail = encoded.ids
        if tail and tail[0] == train_ids[row][index]:
            matches[row] = compare(tail, train_ids[row], offset=index)
        else:  # not split where expected: encode this prompt whole
            whole_rows.append(row)
    whole_rows.sort()
    whole = [prompts[row] or "" for row in whole_rows]
    for row, encoded in zip(
        whole_rows,
        encode_batch(tokenizer, whole, add_special_tokens=add_special_tokens),
        strict=True,
    ):
        matches[row] = compare(encoded.ids, train_ids[row])
    return matches
