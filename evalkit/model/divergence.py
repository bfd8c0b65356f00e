"""Where two token sequences first differ, and what the logits said there.

Pure Python over what the run stored (``tokens.parquet``: ids and top-k
logits per generated token) and what the reload computed (its own top-k,
and its logits at the run's top-k ids). A flip between two tokens whose
logits are a hair apart is rounding; a flip with a gap of several units is
another model. Both are failures of a reload check, but the numbers tell
which one to look for.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from evalkit.model.decode import Generation
from evalkit.records._run import Divergence, Id, TokenInfo


def choose_controls(ids: Sequence[Id], n: int, seed: int) -> list[int]:
    """Rows of ``n`` control examples chosen by ``seed``, in row order.

    Each id is ranked by sha256 of the seed and the id, so the choice depends
    on nothing but those two (not the row order, a library version, or how
    Python hashes strings), and a larger ``n`` extends a smaller one's choice.
    """

    def rank(row: int) -> str:
        return hashlib.sha256(f"{seed}\0{ids[row]!s}".encode()).hexdigest()

    chosen = sorted(range(len(ids)), key=rank)[: max(0, n)]
    return sorted(chosen)


def first_difference(run: Sequence[int], reload: Sequence[int]) -> int | None:
    """Index of the first differing token, or of the end of the shorter one; None if equal."""
    for position, (left, right) in enumerate(zip(run, reload, strict=False)):
        if left != right:
            return position
    return None if len(run) == len(reload) else min(len(run), len(reload))


def _token(tokenizer: Any, ids: Sequence[int], position: int) -> TokenInfo | None:
    if position >= len(ids):
        return None
    token = int(ids[position])
    return TokenInfo(id=token, text=str(tokenizer.decode([token], skip_special_tokens=False)))


def prompt_divergence(
    example: Id, run_ids: Sequence[int], reload_ids: Sequence[int], tokenizer: Any
) -> Divergence | None:
    """The first difference of a prompt's ids now from the run's (a render changed)."""
    position = first_difference(run_ids, reload_ids)
    if position is None:
        return None
    return Divergence(
        id=example,
        part="prompt",
        position=position,
        run_token=_token(tokenizer, run_ids, position),
        reload_token=_token(tokenizer, reload_ids, position),
        max_logit_diff=None,
        reload_gap=None,
        run_gap=None,
        run_length=len(run_ids),
        reload_length=len(reload_ids),
    )


def _own_top_gaps(
    position: int,
    run_ids: Sequence[int],
    run_top_ids: Sequence[Sequence[int]],
    run_top_logits: Sequence[Sequence[float]],
    reload: Generation,
) -> tuple[float | None, float | None]:
    """The gaps from each side's own top-k, for a reload that cannot read logits at given ids
    (vLLM): a side's gap is known when the other side's token is among its top-k."""
    reload_gap = run_gap = None
    if position >= len(run_ids) or position >= len(reload.output_ids):
        return None, None
    run_token, reload_token = run_ids[position], reload.output_ids[position]
    if position < len(reload.top_ids) and run_token in reload.top_ids[position]:
        values = reload.top_logits[position]
        reload_gap = values[0] - values[list(reload.top_ids[position]).index(run_token)]
    if position < len(run_top_ids) and reload_token in run_top_ids[position]:
        values = list(run_top_logits[position])
        run_gap = values[0] - values[list(run_top_ids[position]).index(reload_token)]
    return reload_gap, run_gap


def output_divergence(
    example: Id,
    run_ids: Sequence[int],
    run_top_ids: Sequence[Sequence[int]],
    run_top_logits: Sequence[Sequence[float]],
    reload: Generation,
    tokenizer: Any,
) -> Divergence | None:
    """The first difference of a regenerated output from the run's, with the logits there."""
    position = first_difference(run_ids, reload.output_ids)
    if position is None:
        return None
    max_diff = reload_gap = run_gap = None
    at_reference = reload.reference_logits or []
    if position < len(run_top_ids) and position < len(at_reference):
        run_top, run_values = list(run_top_ids[position]), list(run_top_logits[position])
        reload_values = at_reference[position]
        max_diff = max(abs(a - b) for a, b in zip(reload_values, run_values, strict=True))
        run_token = run_ids[position]
        if position < len(reload.output_ids) and run_token in run_top:
            reload_gap = reload.top_logits[position][0] - reload_values[run_top.index(run_token)]
        if position < len(reload.output_ids) and reload.output_ids[position] in run_top:
            run_gap = run_values[0] - run_values[run_top.index(reload.output_ids[position])]
    elif reload.reference_logits is None:
        reload_gap, run_gap = _own_top_gaps(position, run_ids, run_top_ids, run_top_logits, reload)
    return Divergence(
        id=example,
        part="output",
        position=position,
        run_token=_token(tokenizer, run_ids, position),
        reload_token=_token(tokenizer, reload.output_ids, position),
        max_logit_diff=max_diff,
        reload_gap=reload_gap,
        run_gap=run_gap,
        run_length=len(run_ids),
        reload_length=len(reload.output_ids),
    )
