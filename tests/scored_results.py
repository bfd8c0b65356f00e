"""Test helper: write result folders exactly as docs/formats.md specifies them.

``evalkit compare`` and ``evalkit gate`` read what ``evalkit score`` writes;
these helpers write the same two files (``summary.json``, ``examples.parquet``)
from per-example outcomes, so compare's tests pin the documented format and
not one scorer's implementation.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from evalkit.comparison.results import ScoredResult
from evalkit.contract.fingerprint import fingerprint_of
from evalkit.contract.validation import evaluator_semantics
from evalkit.records._summary import ScoreSummary

GOLD_SHA256 = "a" * 64

CONTRACT: dict[str, Any] = {
    "name": "ticket-triage",
    "version": 1,
    "id": "ticket_id",
    "class": "category",
    "output": {"parse": "json", "extract": "lenient"},
    "fields": {
        "category": {"gold": "category", "match": "exact"},
        "priority": {"gold": "priority", "match": "exact"},
    },
    "correct": "all",
    "rare": {"max_support": 10},
    "slices": [{"name": "no-order-id", "where": {"order_id": None}}],
    "gate": {
        "min_format_validity": 0.9,
        "min_content_accuracy": 0.5,
        "max_missing": 0,
        "vs_baseline": {
            "max_accuracy_drop": 0.0,
            "max_format_drop": 0.01,
            "max_class_drop": 0.10,
            "max_rare_class_drop": 0.20,
            "max_slice_drop": 0.05,
        },
    },
}


def contract(**gate_changes: Any) -> dict[str, Any]:
    """A copy of the default contract with ``vs_baseline`` (or top-level gate) keys changed."""
    normalized = copy.deepcopy(CONTRACT)
    for key, value in gate_changes.items():
        if key in ("version", "name", "rare", "slices", "correct"):
            normalized[key] = value
        elif key in ("min_format_validity", "min_content_accuracy", "max_missing"):
            normalized["gate"][key] = value
        else:
            normalized["gate"]["vs_baseline"][key] = value
    return normalized


# Fixed, not the installed versions, so the golden reports do not change
# when orjson or jsonschema-rs is upgraded.
EVALUATOR = {
    **evaluator_semantics(),
    "json_parser": "orjson (test)",
    "validator": "jsonschema-rs (test)",
}


def fingerprint(normalized: dict[str, Any]) -> str:
    """The fingerprint evalkit score would record for this normalised contract."""
    return fingerprint_of(normalized, EVALUATOR)


def _rate(numerator: int, denominator: int) -> float | None:
    return numerator / denominator if denominator else None


def _counts(frame: pl.DataFrame) -> dict[str, Any]:
    n = frame.height
    valid = int(frame["format_valid"].sum())
    correct = int(frame["content_correct"].sum())
    return {
        "n": n,
        "missing": int((frame["error"] == "missing").sum()),
        "format_valid": valid,
        "format_validity": _rate(valid, n),
        "content_correct": correct,
        "content_accuracy": _rate(correct, n),
        "content_accuracy_given_valid": _rate(correct, valid),
    }


def _fields(frame: pl.DataFrame, names: Sequence[str]) -> dict[str, Any]:
    valid = int(frame["format_valid"].sum())
    stats = {}
    for name in names:
        column = f"match.{name}"
        matched = int(frame[column].sum()) if column in frame.columns else 0
        stats[name] = {
            "matched": matched,
            "accuracy": _rate(matched, frame.height),
            "accuracy_given_valid": _rate(matched, valid),
            "mean_f1": None,
        }
    return stats


def _errors(frame: pl.DataFrame) -> dict[str, Any]:
    found = {}
    for (category,), group in frame.filter(pl.col("error").is_not_null()).group_by("error"):
        first = group.sort("id").row(0, named=True)
        found[str(category)] = {
            "count": group.height,
            "example_id": first["id"],
            "example_detail": first["error_detail"],
        }
    return dict(sorted(found.items()))


def build(
    folder: Path,
    *,
    ids: Sequence[str],
    classes: Sequence[str | None],
    correct: Sequence[bool],
    valid: Sequence[bool] | None = None,
    errors: Sequence[str | None] | None = None,
    slices: dict[str, Sequence[bool]] | None = None,
    name: str | None = None,
    normalized: dict[str, Any] | None = None,
    gold_sha256: str = GOLD_SHA256,
    predicted: Sequence[str | None] | None = None,
) -> tuple[dict[str, Any], pl.DataFrame]:
    """The ``summary.json`` content and ``examples.parquet`` frame for the given outcomes.

    ``valid`` defaults to all true; an invalid example gets error ``no_json``
    unless ``errors`` says otherwise; correctness implies validity.
    """
    normalized = normalized if normalized is not None else contract()
    valid = list(valid) if valid is not None else [True] * len(ids)
    errors = list(errors) if errors is not None else [None if v else "no_json" for v in valid]
    correct = [bool(c) and bool(v) for c, v in zip(correct, valid, strict=True)]
    if predicted is None:
        predicted = [c if ok else "billing" for c, ok in zip(classes, correct, strict=True)]
    predicted = [p if v else None for p, v in zip(predicted, valid, strict=True)]
    columns: dict[str, Any] = {
        "id": pl.Series(list(ids), dtype=pl.String),
        "class": pl.Series(list(classes), dtype=pl.String),
        "predicted_class": pl.Series(predicted, dtype=pl.String),
        "format_valid": pl.Series(valid, dtype=pl.Boolean),
        "error": pl.Series(errors, dtype=pl.String),
        "error_detail": pl.Series(
            [None if e is None else f"detail of {e}" for e in errors], dtype=pl.String
        ),
        "content_correct": pl.Series(correct, dtype=pl.Boolean),
        "match.category": pl.Series(
            [v and p == c for v, p, c in zip(valid, predicted, classes, strict=True)],
            dtype=pl.Boolean,
        ),
        "match.priority": pl.Series(correct, dtype=pl.Boolean),
    }
    for slice_name, members in (slices or {}).items():
        columns[f"slice.{slice_name}"] = pl.Series(list(members), dtype=pl.Boolean)
    examples = pl.DataFrame(columns).sort("id")
    rare_support = (normalized.get("rare") or {}).get("max_support", 0)
    class_summaries = {}
    for label, group in examples.filter(pl.col("class").is_not_null()).group_by("class"):
        counts = _counts(group)
        hits = int((group["predicted_class"] == group["class"]).sum())
        predicted_as = int((examples["predicted_class"] == label[0]).sum())
        precision = hits / predicted_as if predicted_as else 0.0
        recall = hits / counts["n"]
        class_summaries[str(label[0])] = {
            **counts,
            "support": counts["n"],
            "rare": counts["n"] <= rare_support,
            "predicted": predicted_as,
            "precision": precision,
            "recall": recall,
            "f1": 2 * precision * recall / (precision + recall) if precision + recall else 0.0,
        }
    slice_names = [item["name"] for item in normalized.get("slices", [])]
    for slice_name in slice_names:  # every contract slice is a column, as score writes it
        if f"slice.{slice_name}" not in examples.columns:
            examples = examples.with_columns(pl.lit(False).alias(f"slice.{slice_name}"))
    summary = {
        "format_version": 1,
        "evalkit_version": "0.1.0",
        "name": name or folder.name,
        "contract": {
            "name": normalized["name"],
            "version": normalized["version"],
            "fingerprint": fingerprint(normalized),
            "path": None,
            "normalized": normalized,
            "evaluator": EVALUATOR,
        },
        "gold": {"path": "gold.jsonl", "sha256": gold_sha256, "n": examples.height},
        "predictions": {
            "path": "pred.jsonl",
            "sha256": "b" * 64,
            "n": examples.height,
            "format": "jsonl",
            "unknown_ids": 0,
            "unknown_id_example": None,
            "duplicate_ids": 0,
            "on_duplicate": "error",
            "request_errors": 0,
        },
        "overall": _counts(examples),
        "fields": _fields(examples, list(normalized.get("fields", {}))),
        "classes": dict(sorted(class_summaries.items())),
        "slices": {s: _counts(examples.filter(pl.col(f"slice.{s}"))) for s in slice_names},
        "errors": _errors(examples),
    }
    return summary, examples


def write_result(folder: Path, **outcomes: Any) -> Path:
    """Write a result folder (``summary.json``, ``examples.parquet``) as evalkit score does."""
    summary, examples = build(folder, **outcomes)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "summary.json").write_text(json.dumps(summary, indent=2))
    examples.write_parquet(folder / "examples.parquet")
    return folder


def result_in_memory(name: str, **outcomes: Any) -> ScoredResult:
    """The same result as :func:`write_result` would load, without touching the disk."""
    summary, examples = build(Path(name), name=name, **outcomes)
    text = json.dumps(summary)
    return ScoredResult(
        path=Path(name),
        summary=ScoreSummary.model_validate(summary),
        examples=examples,
        summary_sha256=hashlib.sha256(text.encode()).hexdigest(),
    )
