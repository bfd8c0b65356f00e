"""Training batches from a split's rows, masked exactly as ``evalkit tokens`` measures them.

``evalkit smoke`` trains a few real steps on real rows, and the tokens it
trains on must be the tokens ``evalkit tokens`` reports as supervised. So
each row is planned (rendered by the chat template), encoded and masked by
the functions the measuring pass itself uses
(:class:`~evalkit.tokens.plan.SplitPlanner`,
:func:`~evalkit.tokens.encode.encode_batch`,
:func:`~evalkit.tokens.figures.supervised_runs`); then it is cut to the
planned length, keeping its start (``--truncation-mode keep_start``, what
trainers do), and right-padded to it, so every step has the shape the plan
bounds. No torch here: lists of ints, made tensors in :mod:`evalkit.model`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalkit.errors import InvalidTable, UsageError
from evalkit.io import is_path
from evalkit.records._tokens import Encode, Loss
from evalkit.tokens.encode import encode_batch
from evalkit.tokens.figures import Settings, supervised_runs
from evalkit.tokens.inputs import SplitInput, read_splits, resolve_modes
from evalkit.tokens.plan import SplitPlanner

if TYPE_CHECKING:
    from evalkit.io import TableLike

IGNORE_INDEX = -100
"""The label of a token the loss is not on (PyTorch's and transformers' convention)."""
SCAN_FACTOR, MIN_SCAN = 50, 2048
"""Rows looked at for ``steps x batch`` usable ones: at most the larger of 50 per row wanted
and 2,048."""


@dataclass(frozen=True)
class TrainingSequence:
    """One row as the model trains on it, before truncation."""

    row: int
    """0-based row of the split."""
    ids: list[int]
    """The encoded training sequence."""
    supervised: list[bool]
    """Per token: whether the loss is on it (the mask ``evalkit tokens`` counts)."""

    def targets(self, seq_len: int) -> int:
        """Supervised tokens the loss sees once cut to ``seq_len``: every position but the
        first can be predicted, so a supervised first token is no target."""
        return sum(self.supervised[1:seq_len])


@dataclass(frozen=True)
class Batch:
    """One training step's rows, cut and right-padded to the planned length."""

    rows: list[int]
    """The split's rows, in batch order."""
    input_ids: list[list[int]]
    """``batch x seq_len`` token ids (padding after each sequence)."""
    attention_mask: list[list[int]]
    """1 on a sequence's tokens, 0 on its padding."""
    labels: list[list[int]]
    """The ids where the loss is, :data:`IGNORE_INDEX` elsewhere (padding included)."""

    @property
    def targets(self) -> int:
        """Tokens the loss is averaged over: supervised labels past the first position."""
        return sum(label != IGNORE_INDEX for row in self.labels for label in row[1:])


@dataclass(frozen=True)
class TrainingData:
    """A split read for training: its rows, the loss and encoding that apply, the planner."""

    split: SplitInput
    loss: Loss
    encode: Encode
    planner: SplitPlanner
    settings: Settings


def read_training_split(
    data: TableLike,
    text: Sequence[str],
    tokenizer: Any,
    *,
    settings: Settings,
    markers: bool,
    loss: Loss | None = None,
) -> TrainingData:
    """One split file of conversations, planned as ``evalkit tokens`` plans it.

    Refuses a folder of splits (one split trains) and text columns: a
    training step here is also a generation from the conversations' prompts.
    """
    if is_path(data) and Path(data).is_dir():
        raise UsageError(f"{data}: is a folder; pass one split file (e.g. {data}/train.jsonl)")
    (split,) = read_splits(data, list(text), None)
    source = split.path if split.path is not None else "data frame"
    if not split.chat.is_conversation:
        raise UsageError(
            f"{source}: {{text}} {' '.join(text)} holds plain text, not conversations; smoke "
            "trains on chat-template renders and generates from their prompts (write each "
            "example as messages: [{role, content}, …])",
            refs=["text"],
        )
    if len(split.chat) == 0:
        raise InvalidTable(f"{source}: has no rows; there is nothing to train on")
    chosen_loss, chosen_encode = resolve_modes(split.chat, loss, None)
    planner = SplitPlanner(split, tokenizer, chosen_loss, chosen_encode, markers)
    return TrainingData(split, chosen_loss, chosen_encode, planner, settings)


def seeded_order(n: int, seed: int) -> list[int]:
    """Rows ``0..n-1`` ranked by sha256 of the seed and the row: a shuffle no library
    version, platform or hash seed can change."""

    def rank(row: int) -> str:
        return hashlib.sha256(f"{seed}\0{row}".encode()).hexdigest()

    return sorted(range(n), key=rank)


def training_sequence(data: TrainingData, tokenizer: Any, row: int) -> TrainingSequence:
    """Row ``row`` rendered, encoded and masked by the code ``evalkit tokens`` measures with."""
    plan = data.planner(row, row + 1)
    encodings = encode_batch(tokenizer, plan.texts, add_special_tokens=plan.add_special_tokens)
    (runs,) = supervised_runs(tokenizer, plan, data.settings, encodings)
    ids = list(encodings[0].ids)
    supervised = [False] * len(ids)
    for first, last in runs:
        supervised[first : last + 1] = [True] * (last - first + 1)
    return TrainingSequence(row, ids, supervised)


@dataclass(frozen=True)
class Chosen:
    """The sequences the steps train on, and what was passed over."""

    sequences: list[TrainingSequence]
    """``steps x batch`` sequences in step order (rows repeat when the split is small)."""
    without_targets: int
    """Rows looked at that keep no supervised token within ``seq_len`` (skipped)."""


def choose_sequences(
    data: TrainingData, tokenizer: Any, *, steps: int, batch: int, seq_len: int, seed: int
) -> Chosen:
    """``steps x batch`` rows in seeded order, each keeping a supervised token within
    ``seq_len``; the order starts over when fewer such rows are found (among the first
    ``max(50 x steps x batch, 2048)`` rows looked at)."""
    wanted = steps * batch
    usable: list[TrainingSequence] = []
    skipped = 0
    order = seeded_order(len(data.split.chat), seed)
    # A split whose rows mostly do not fit is not scanned to its end, one render at a time.
    looked_at = order[: max(SCAN_FACTOR * wanted, MIN_SCAN)]
    for row in looked_at:
        sequence = training_sequence(data, tokenizer, row)
        if sequence.targets(seq_len) == 0:
            skipped += 1
            continue
        usable.append(sequence)
        if len(usable) == wanted:
            break
    if not usable:
        every = "no row" if len(looked_at) == len(order) else f"none of {len(looked_at)} rows"
        raise UsageError(
            f"{data.split.path or 'data frame'}: {every} keeps a supervised token "
            f"(loss: {data.loss}) within the first {seq_len} tokens; raise {{seq_len}} "
            f"(evalkit tokens with a limit of {seq_len} shows the truncation)",
            refs=["seq_len"],
        )
    chosen = [usable[index % len(usable)] for index in range(wanted)]
    return Chosen(chosen, skipped)


def make_batch(sequences: Sequence[TrainingSequence], seq_len: int, pad_id: int) -> Batch:
    """Cut every sequence to ``seq_len`` (its start kept) and right-pad it to ``seq_len``."""
    input_ids, attention, labels = [], [], []
    for sequence in sequences:
        ids = sequence.ids[:seq_len]
        mask = sequence.supervised[:seq_len]
        padding = seq_len - len(ids)
        input_ids.append(ids + [pad_id] * padding)
        attention.append([1] * len(ids) + [0] * padding)
        labels.append(
            [token if kept else IGNORE_INDEX for token, kept in zip(ids, mask, strict=True)]
            + [IGNORE_INDEX] * padding
        )
    return Batch([s.row for s in sequences], input_ids, attention, labels)


def make_batches(chosen: Chosen, *, batch: int, seq_len: int, pad_id: int) -> list[Batch]:
    """The chosen sequences, ``batch`` at a time, as padded batches."""
    sequences = chosen.sequences
    return [
        make_batch(sequences[start : start + batch], seq_len, pad_id)
        for start in range(0, len(sequences), batch)
    ]


def prompt_ids(data: TrainingData, tokenizer: Any, rows: Sequence[int]) -> list[list[int]]:
    """The inference prompt of each row (``generate``'s render: the generation prompt added)."""
    from evalkit.chat import template_conversations
    from evalkit.tokens.render import encode_renders, prompt_renders

    prompts = template_conversations(data.split.chat, list(rows), prompt=True)
    renders = prompt_renders(
        tokenizer,
        [prompt.messages for prompt in prompts],
        where=lambda k: data.split.where(rows[k]),
        tools=[prompt.tools for prompt in prompts],
    )
    return [list(ids) for ids in encode_renders(tokenizer, renders)]
