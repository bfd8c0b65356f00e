"""The checks of ``evalkit tokens``, each a verdict over per-example flags of every split.

A check fires on examples (a boolean per example, from
:class:`~evalkit.tokens.figures.RowFigures`); its count is the number of
those examples summed over the splits, and its examples the first five in
input order. Tokenizer facts (no BOS, pad is eos) decide whether a check
can fire at all; the data decides how often it does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from evalkit.records._tokens import CheckName, CheckResult, ExampleRef, Status
from evalkit.tokens.figures import RowFigures

EXAMPLES = 5


@dataclass(frozen=True)
class Measured:
    """One split's ids, figures and special-token flags."""

    name: str
    ids: list[str]
    figures: RowFigures
    special_in_text: np.ndarray
    special_found: str | None = None


@dataclass(frozen=True)
class Context:
    """What the checks know of the tokenizer and the run."""

    tokenizer: Any
    conversations: bool
    template_sha256: str | None
    markers: bool
    stop_ids: list[int]
    pad_is_stop: bool
    max_seq_length: int | None
    special_strings: list[str]


def token_repr(tokenizer: Any, token_id: int | None) -> str:
    """A token as a person reads it in a report: its text (quoted, escapes shown) and id."""
    if token_id is None:
        return "nothing (the sequence ends)"
    text = tokenizer.decode([token_id], skip_special_tokens=False)
    return f"{text!r} (id {token_id})"


def _fired(
    name: CheckName,
    status: Status,
    splits: Sequence[Measured],
    flags: Sequence[np.ndarray],
    detail: str,
    quiet: str,
) -> CheckResult:
    """The result of a check that fires with ``status`` on the flagged examples."""
    counts = {split.name: int(flag.sum()) for split, flag in zip(splits, flags, strict=True)}
    examples: list[ExampleRef] = []
    for split, flag in zip(splits, flags, strict=True):
        for row in np.flatnonzero(flag)[: EXAMPLES - len(examples)]:
            examples.append(ExampleRef(split=split.name, id=split.ids[int(row)]))
    total = sum(counts.values())
    return CheckResult(
        name=name,
        status=status if total else "pass",
        count=total,
        counts=counts,
        examples=examples,
        detail=detail if total else quiet,
    )


def skipped(name: CheckName, splits: Sequence[Measured], why: str) -> CheckResult:
    counts = {split.name: 0 for split in splits}
    return CheckResult(name=name, status="skip", count=0, counts=counts, examples=[], detail=why)


def _first(splits: Sequence[Measured], flags: Sequence[np.ndarray]) -> tuple[Measured, int] | None:
    for split, flag in zip(splits, flags, strict=True):
        rows = np.flatnonzero(flag)
        if rows.size:
            return split, int(rows[0])
    return None


def template_check(context: Context, splits: Sequence[Measured]) -> CheckResult:
    """``template``: conversations need the tokenizer's chat template."""
    if not context.conversations:
        return skipped("template", splits, "text columns are tokenized as they are, not rendered")
    sha = (context.template_sha256 or "")[:12]
    markers = "with" if context.markers else "without"
    return _fired(
        "template",
        "fail",
        splits,
        [np.zeros(s.figures.n, bool) for s in splits],
        "",
        f"chat template sha256 {sha}…, {markers} {{% generation %}} markers",
    )


def missing_template(splits: Sequence[Measured], folder: str) -> CheckResult:
    """``template`` when the tokenizer has none: every conversation fails."""
    return _fired(
        "template",
        "fail",
        splits,
        [np.ones(s.figures.n, bool) for s in splits],
        f"{folder}: the tokenizer has no chat template (neither 'chat_template' in "
        "tokenizer_config.json nor chat_template.jinja), so no conversation can be rendered; "
        "add the model family's template",
        "",
    )


def parity_check(context: Context, splits: Sequence[Measured]) -> CheckResult:
    """``render_parity``: the inference prompt is a token prefix of the training sequence."""
    applicable = sum(int((s.figures.parity >= 0).sum()) for s in splits)
    if not applicable:
        why = "no example has a prompt" + ("" if context.conversations else " (one text column)")
        return skipped("render_parity", splits, why)
    flags = [s.figures.parity == 0 for s in splits]
    detail = ""
    first = _first(splits, flags)
    if first is not None:
        split, row = first
        match = split.figures.divergences[row]
        detail = (
            f"the inference prompt is not a token prefix of the training sequence; first at "
            f"{split.name}:{split.ids[row]}, token {match.divergence}: the prompt has "
            f"{token_repr(context.tokenizer, match.prompt_id)}, training has "
            f"{token_repr(context.tokenizer, match.train_id)}"
        )
    return _fired(
        "render_parity",
        "fail",
        splits,
        flags,
        detail,
        f"the inference prompt is a token prefix of the training sequence in all {applicable}",
    )


def double_bos_check(context: Context, splits: Sequence[Measured]) -> CheckResult:
    """``double_bos``: the ids start with BOS twice (template BOS + tokenizer BOS)."""
    bos = context.tokenizer.bos_token_id
    if bos is None:
        return _fired(
            "double_bos",
            "fail",
            splits,
            [s.figures.double_bos for s in splits],
            "",
            "the tokenizer has no BOS token",
        )
    return _fired(
        "double_bos",
        "fail",
        splits,
        [s.figures.double_bos for s in splits],
        f"the ids start with {token_repr(context.tokenizer, bos)} twice: the template writes "
        "BOS and the tokenizer adds another (tokenize the render without special tokens, "
        "as --encode template does)",
        "no sequence starts with two BOS tokens",
    )


def stop_token_check(context: Context, splits: Sequence[Measured]) -> CheckResult:
    """``stop_token``: every supervised turn ends with a token generation stops on."""
    tokenizer = context.tokenizer
    stops = ", ".join(token_repr(tokenizer, i) for i in context.stop_ids) or "none"
    flags = [s.figures.unclosed_runs > 0 for s in splits]
    detail = ""
    first = _first(splits, flags)
    if first is not None:
        split, row = first
        ending = token_repr(tokenizer, int(split.figures.unclosed_id[row]))
        what = "an assistant turn" if context.conversations else "the supervised text"
        detail = (
            f"{what} ends with {ending}, which generation does not stop on (stops on: {stops}); "
            "the model never learns to stop"
        )
        if not context.conversations:
            detail += " unless the trainer appends the eos (TRL's SFTTrainer does)"
    return _fired(
        "stop_token",
        "fail" if context.conversations else "warn",
        splits,
        flags,
        detail,
        f"every supervised turn ends with a stop token ({stops})",
    )


def pad_check(context: Context, splits: Sequence[Measured]) -> CheckResult:
    """``pad_is_eos``: a collator that masks padding would mask the stop token."""
    tokenizer = context.tokenizer
    if not context.pad_is_stop:
        pad = token_repr(tokenizer, tokenizer.pad_token_id)
        return _fired(
            "pad_is_eos",
            "warn",
            splits,
            [np.zeros(s.figures.n, bool) for s in splits],
            "",
            f"the pad token {pad} is not a stop token",
        )
    if tokenizer.pad_token_id is None:
        why = "the tokenizer has no pad token, and trainers then pad with the eos (TRL does)"
    else:
        why = f"the pad token {token_repr(tokenizer, tokenizer.pad_token_id)} is a stop token"
    flags = [s.figures.closing_is_pad for s in splits]
    count = sum(int(flag.sum()) for flag in flags)
    result = _fired(
        "pad_is_eos",
        "warn",
        splits,
        flags,
        f"{why}: a collator that masks padding masks the stop token that closes these "
        "examples, so the model never learns to stop; give the tokenizer a pad token of its own",
        "",
    )
    if not count:  # the setting is a hazard even where no example shows it yet
        return result.model_copy(
            update={"status": "warn", "detail": f"{why}; no example is closed by it"}
        )
    return result


def special_tokens_check(context: Context, splits: Sequence[Measured]) -> CheckResult:
    """``special_tokens_in_text``: text holds a special token's string (becomes a control token)."""
    flags = [s.special_in_text for s in splits]
    where = "message content" if context.conversations else "text"
    found = next((s.special_found for s in splits if s.special_found), None)
    example = f" (first: {found!r})" if found else ""
    return _fired(
        "special_tokens_in_text",
        "warn",
        splits,
        flags,
        f"{where} holds the string of a special or added token{example}, which the "
        "tokenizer encodes as that control token, not as text",
        f"no {where} holds a special token's string",
    )


def empty_mask_check(context: Context, splits: Sequence[Measured]) -> CheckResult:
    """``empty_mask``: an example with no supervised token (after truncation) teaches nothing."""
    flags = [s.figures.kept_supervised == 0 for s in splits]
    after = " after truncation" if context.max_seq_length is not None else ""
    return _fired(
        "empty_mask",
        "fail",
        splits,
        flags,
        f"these examples have no supervised token{after}: trainers drop them silently, or "
        "divide by zero",
        f"every example has a supervised token{after}",
    )


def truncation_check(context: Context, splits: Sequence[Measured]) -> CheckResult:
    """``truncation``: --seq-len cuts answers (fail) or only prompts (warn)."""
    limit = context.max_seq_length
    if limit is None:
        return skipped("truncation", splits, "no --seq-len given")
    lost = []
    for split in splits:
        figures = split.figures
        cut_fully = (figures.supervised > 0) & (figures.kept_supervised == 0)
        lost.append(cut_fully | figures.eos_lost)
    if any(flag.any() for flag in lost):
        return _fired(
            "truncation",
            "fail",
            splits,
            lost,
            f"at {limit} tokens these examples lose their whole answer or the stop token "
            "that closes it",
            "",
        )
    over = [s.figures.total > limit for s in splits]
    return _fired(
        "truncation",
        "warn",
        splits,
        over,
        f"these examples are longer than {limit} tokens; only tokens outside the loss "
        "are cut (or part of an answer with its stop token kept)",
        f"no example is longer than {limit} tokens",
    )


CHECKS = (
    template_check,
    parity_check,
    double_bos_check,
    stop_token_check,
    pad_check,
    special_tokens_check,
    empty_mask_check,
    truncation_check,
)


def run_checks(context: Context, splits: Sequence[Measured]) -> list[CheckResult]:
    """Every check, in the fixed order of the report."""
    return [check(context, splits) for check in CHECKS]
