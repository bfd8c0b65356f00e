"""The work a time plan is for: the tokens of an epoch, and the evaluation's generation.

Training tokens come from ``--train-tokens N`` (every position the model
computes in an epoch, padding included if the run pads) or from ``evalkit
tokens --json`` of the training split (``--tokens-report``). The report
holds per split ``n``, quantiles of the tokens per example and the
supervised ratio, and (newer reports) ``supervised_tokens``; it does not
always hold the total, so:

- ``total_tokens`` present: used as written.
- ``supervised_tokens`` present: total = supervised / supervised_ratio (the
  ratio was rounded to 6 digits, so the smallest total it can stand for).
- neither: a **lower bound** from the quantiles. With numpy's linear
  percentiles, the ``q``-th percentile lies between the values at sorted
  positions ``⌊q(n−1)⌋`` and ``⌈q(n−1)⌉``, so at least ``n − ⌈q(n−1)⌉`` examples
  have at least that many tokens; the maximum is one example. Summing each
  tier at its floor bounds the total from below (usually about half of it).

With ``--seq-len`` in the report, sequences longer than the limit are
cut to it, so the ``over_limit`` examples can lose at most ``max − limit``
tokens each: that much is taken off. Supervised tokens are reported beside
the total; the FLOPs are per token processed, supervised or not (the model
computes every position).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalkit import params
from evalkit.errors import MalformedFile, ParameterError

RATIO_HALF_STEP = 5e-7  # supervised_ratio is rounded to 6 digits


@dataclass(frozen=True)
class TrainTokens:
    """Tokens of one epoch, and how they were found."""

    tokens: int  # processed per epoch; a lower bound when ``exact`` is False
    supervised: int | None
    exact: bool
    source: str
    how: str


@dataclass(frozen=True)
class EvalWork:
    """The evaluation's generation: examples, prompt and new tokens each, at once."""

    examples: int
    prompt_tokens: int
    new_tokens: int
    batch: int


def from_count(tokens: int) -> TrainTokens:
    """``--train-tokens N``: as given."""
    if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 1:
        raise ParameterError("train_tokens", f"must be a positive number of tokens, got {tokens!r}")
    return TrainTokens(tokens, None, True, "--train-tokens", "as given")


def _positive_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _tier_floor(n: int, quantiles: dict[str, Any]) -> int:
    """A lower bound of the sum of n values from their p50, p95, p99 and maximum."""
    if n == 0:
        return 0
    cuts = [(0.50, float(quantiles["p50"])), (0.95, float(quantiles["p95"])),
            (0.99, float(quantiles["p99"]))]  # fmt: skip
    total, previous_floor, previous_index = 0.0, 0.0, 0
    for q, value in cuts:
        index = math.ceil(q * (n - 1))  # from here on, every sorted value is >= value
        total += (index - previous_index) * previous_floor
        previous_floor, previous_index = value, index
    total += (n - 1 - previous_index) * previous_floor + int(quantiles["max"])
    return math.floor(total)


def _split(report: dict[str, Any], path: Path, split: str | None) -> tuple[str, dict[str, Any]]:
    splits = report.get("splits")
    if not isinstance(splits, dict) or not splits:
        raise MalformedFile(
            f"{path}: no 'splits' object; pass the JSON report evalkit tokens writes"
        )
    if split is None:
        if "train" in splits:
            split = "train"
        elif len(splits) == 1:
            split = next(iter(splits))
        else:
            raise ParameterError(
                "tokens_report",
                f"{path}: splits {', '.join(splits)} and none is 'train'; "
                "name the training split with {tokens_split}",
                refs=["tokens_split"],
            )
    if split not in splits:
        raise ParameterError(
            "tokens_split", f"{split!r}: {path} has splits {', '.join(splits)}; use one of them"
        )
    figures = splits[split]
    if not isinstance(figures, dict):
        raise MalformedFile(f"{path}: splits.{split} is not an object")
    return split, figures


def _check_report(report: Any, path: Path) -> dict[str, Any]:
    keys = ("format_version", "tokenizer", "options", "splits", "checks")
    if not isinstance(report, dict) or any(key not in report for key in keys):
        raise MalformedFile(
            f"{path}: not a report of evalkit tokens (it needs the keys "
            f"{', '.join(keys)}); pass that report, or the count with {{train_tokens}}",
            refs=["train_tokens"],
        )
    return report


def _count(figures: dict[str, Any], key: str) -> int | None:
    value = figures.get(key)
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


def from_report(path: Path, split: str | None = None) -> TrainTokens:
    """The training split's tokens from an ``evalkit tokens --json`` report."""
    from evalkit.provenance.folder_files import read_json_file

    report = _check_report(read_json_file(path), path)
    name, figures = _split(report, path, split)
    n = _count(figures, "n")
    tokens = figures.get("tokens")
    if n is None or not isinstance(tokens, dict) or not isinstance(tokens.get("total"), dict):
        raise ParameterError(
            "tokens_report", f"{path}: split {name!r} has no tokens (n = {figures.get('n')!r})"
        )
    quantiles: dict[str, Any] = tokens["total"]
    raw_ratio = figures.get("supervised_ratio")
    ratio = float(raw_ratio) if isinstance(raw_ratio, float | int) and raw_ratio > 0 else None
    supervised = _count(figures, "supervised_tokens")
    total = _count(figures, "total_tokens")
    where = f"{path} split {name!r}"
    exact = total is not None
    how = "total_tokens as written"
    if total is None and supervised is not None and ratio is not None:
        total = math.ceil(supervised / min(1.0, ratio + RATIO_HALF_STEP))
        how = (
            f"supervised_tokens {supervised:,} / supervised_ratio {ratio} (the smallest "
            "total the rounded ratio stands for)"
        )
    elif total is None:
        total = _tier_floor(n, quantiles)
        how = (
            f"at least: {n:,} examples from the quantiles of their tokens (p50 "
            f"{quantiles['p50']}, p95 {quantiles['p95']}, p99 {quantiles['p99']}, max "
            f"{quantiles['max']}); the report has no supervised_tokens"
        )
    truncation = figures.get("truncation")
    if isinstance(truncation, dict) and truncation.get("over_limit"):
        limit = int(truncation["max_seq_length"])
        cut = int(truncation["over_limit"]) * max(0, int(quantiles["max"]) - limit)
        total = max(n, total - cut)
        how += (
            f"; less at most {cut:,} cut by --seq-len {limit} "
            f"({truncation['over_limit']} examples over it)"
        )
        exact = False
    if supervised is None and ratio is not None:
        supervised = math.floor(total * ratio)
    return TrainTokens(int(total), supervised, exact, where, how)


def eval_work(
    examples: int | None, new_tokens: int | None, eval_tokens: int, batch: int
) -> EvalWork | None:
    """``--eval-examples M --eval-new-tokens T``: prompts of ``--eval-tokens`` − T tokens."""
    if examples is None and new_tokens is None:
        return None
    if examples is None or new_tokens is None:
        given = "eval_examples" if examples is not None else "eval_new_tokens"
        missing = "eval_new_tokens" if examples is not None else "eval_examples"
        raise ParameterError(
            given, f"needs {{{missing}}} too: the evaluation's work is both", refs=[missing]
        )
    params.positive(examples, "eval_examples")
    params.positive(new_tokens, "eval_new_tokens")
    if new_tokens >= eval_tokens:
        raise ParameterError(
            "eval_new_tokens",
            f"{new_tokens}: {{eval_tokens}} {eval_tokens} is the prompt plus the "
            "new tokens, so it must be larger; raise {eval_tokens}",
            refs=["eval_tokens"],
        )
    return EvalWork(examples, eval_tokens - new_tokens, new_tokens, batch)
