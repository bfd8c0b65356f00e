"""The probability a model gave the answer it agreed on, from ``evalkit generate``'s top logits.

A generate run keeps, beside ``predictions.jsonl``, ``tokens.parquet``: per
example the generated ids and, at every step, the ``top_k`` highest logits
(the first is the greedy token). For a suspect gold label, the tokens that
spell the agreed answer in the output are found by decoding the output's
prefixes with the run's own tokenizer (``tokenizer.json``, read by the
``tokenizers`` library), and the answer's probability is the product of
those steps' probabilities of the chosen token. Only the top ``k`` logits of
a step are known, so each step's probability is a softmax over those k: an
upper bound of the full-vocabulary probability, and close to it when the
model is confident, which is when the figure matters (a confident
contradiction of the label). A result whose predictions are not a generate
run, or whose run files changed, is skipped and the note says so.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalkit.comparison.results import ScoredResult
from evalkit.records._run import RUN_FILE, TOKENS_FILE
from evalkit.records._suspects import SuspectLabel

TOKENIZER_FILE = "tokenizer.json"


@dataclass(frozen=True)
class _Run:
    tokens: Path
    tokenizer: Any  # tokenizers.Tokenizer
    id_column: str
    top_k: int


def class_field(normalized: dict[str, Any]) -> tuple[str | None, str | None]:
    """(class column, the contract field that predicts it) of a normalised contract.

    With ``parse: tool_calls`` the class is the called function, predicted by the
    calls' ``name``.
    """
    column = normalized.get("class")
    if (normalized.get("output") or {}).get("parse") == "tool_calls":
        return column, "name" if column is not None else None
    fields = normalized.get("fields") or {}
    for name, spec in fields.items():
        if isinstance(spec, dict) and column is not None and spec.get("gold") == column:
            return column, str(name)
    return column, None


def _run_of(result: ScoredResult) -> _Run | str | None:
    """The generate run beside a result's predictions; a reason when unusable; None if none."""
    from evalkit.comparison.recorded import locate
    from evalkit.errors import EvalkitError
    from evalkit.io import sha256_file
    from evalkit.records._run import read_run

    recorded = result.summary.predictions
    path = locate(recorded.path, result.path)
    if path is None or not path.is_file():
        return None
    run_path, tokens_path = path.parent / RUN_FILE, path.parent / TOKENS_FILE
    if not (run_path.is_file() and tokens_path.is_file()):
        return None
    try:
        run = read_run(run_path.parent)
    except EvalkitError:
        return f"{run_path} cannot be read"
    tokenizer_dir = locate(run.tokenizer.path, run_path.parent)
    tokenizer_sha256 = run.tokenizer.files.get(TOKENIZER_FILE)
    if run.outputs.predictions_sha256 != recorded.sha256:
        return f"{run_path} describes other predictions than the ones scored"
    if sha256_file(tokens_path) != run.outputs.tokens_sha256:
        return f"{tokens_path} changed since the run"
    if tokenizer_dir is None or not (tokenizer_dir / TOKENIZER_FILE).is_file():
        return "the run's tokenizer.json is not found from here"
    if sha256_file(tokenizer_dir / TOKENIZER_FILE) != tokenizer_sha256:
        return f"{tokenizer_dir / TOKENIZER_FILE} changed since the run"
    try:
        from tokenizers import Tokenizer
    except ImportError:
        return "reading the run's tokenizer needs pip install 'evalkit[tokenize]'"
    tokenizer = Tokenizer.from_file(str(tokenizer_dir / TOKENIZER_FILE))
    import polars as pl

    id_column = next(iter(pl.read_parquet_schema(tokens_path)))
    return _Run(tokens_path, tokenizer, id_column, run.generation.top_k_logits)


def answer_span(text: str, agreed: str, field: str | None) -> tuple[int, int] | None:
    """Where ``agreed`` is written in an output: the class field's JSON string value, else the
    first occurrence of the answer (case-insensitive, for a label)."""
    if field is not None:
        pattern = re.escape(json.dumps(field)) + r"\s*:\s*" + re.escape(json.dumps(agreed))
        found = re.search(pattern, text)
        if found is not None:
            return found.end() - len(json.dumps(agreed)) + 1, found.end() - 1
    start = text.lower().find(agreed.lower())
    return (start, start + len(agreed)) if start >= 0 else None


def step_probability(logits: Sequence[float]) -> float:
    """Softmax of the first (chosen) logit over the recorded top logits of one step."""
    top = max(logits)
    total = sum(math.exp(value - top) for value in logits)
    return math.exp(logits[0] - top) / total


def answer_probability(
    tokenizer: Any,
    output_ids: Sequence[int],
    top_ids: Sequence[Sequence[int]],
    top_logits: Sequence[Sequence[float]],
    agreed: str,
    field: str | None,
) -> float | None:
    """The product of the chosen-token probabilities of the steps that write ``agreed``."""
    ends = [len(tokenizer.decode(list(output_ids[: k + 1]))) for k in range(len(output_ids))]
    text = tokenizer.decode(list(output_ids))
    span = answer_span(text, agreed, field)
    if span is None:
        return None
    probability, start = 1.0, 0
    for step, end in enumerate(ends):
        if end > span[0] and start < span[1] and end > start:
            if step >= len(top_ids) or not top_ids[step] or top_ids[step][0] != output_ids[step]:
                return None  # not a greedy step as recorded: no probability to give
            probability *= step_probability(top_logits[step])
        start = max(start, end)
    return probability


def _probabilities(
    run: _Run, suspects: Sequence[SuspectLabel], field: str | None
) -> dict[str, float]:
    import polars as pl

    wanted = [suspect.id for suspect in suspects]
    rows = (
        pl.scan_parquet(run.tokens)
        .with_columns(pl.col(run.id_column).cast(pl.String).alias("_id"))
        .filter(pl.col("_id").is_in(wanted))
        .select("_id", "output_ids", "top_ids", "top_logits")
        .collect()
    )
    by_id = {row[0]: row[1:] for row in rows.iter_rows()}
    found: dict[str, float] = {}
    for suspect in suspects:
        if suspect.id not in by_id:
            continue
        output_ids, top_ids, top_logits = by_id[suspect.id]
        value = answer_probability(
            run.tokenizer, output_ids, top_ids, top_logits, suspect.agreed, field
        )
        if value is not None:
            found[suspect.id] = value
    return found


def with_probabilities(
    suspects: list[SuspectLabel],
    results: Sequence[ScoredResult],
    names: Sequence[str],
    normalized: dict[str, Any],
) -> tuple[list[SuspectLabel], str]:
    """The suspects with the agreed answer's probability per generate run, and a note."""
    field = (
        class_field(normalized)[1]
        if (normalized.get("output") or {}).get("parse") == "json"
        else None
    )
    per_result: dict[str, dict[str, float]] = {}
    used, skipped, top_k = [], [], 0
    for name, result in zip(names, results, strict=True):
        run = _run_of(result)
        if run is None:
            continue
        if isinstance(run, str):
            skipped.append(f"{name} ({run})")
            continue
        per_result[name] = _probabilities(run, suspects, field)
        used.append(name)
        top_k = max(top_k, run.top_k)
    if not used:
        note = "no answer probabilities: no result's predictions were written by evalkit generate"
        if skipped:
            note += "; " + "; ".join(skipped)
        return suspects, note
    updated = []
    for suspect in suspects:
        values = {
            name: found[suspect.id] for name, found in per_result.items() if suspect.id in found
        }
        updated.append(
            suspect.model_copy(
                update={
                    "probabilities": values,
                    "probability": min(values.values()) if values else None,
                }
            )
        )
    note = (
        f"answer probabilities from evalkit generate's top-{top_k} logits (a softmax over "
        f"them: an upper bound of the full-vocabulary probability) for {', '.join(used)}"
    )
    if skipped:
        note += "; not for " + "; ".join(skipped)
    return updated, note
