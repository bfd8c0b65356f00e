"""A result is checked when read: its summary must be what its examples and contract give.

``compare`` and ``gate`` decide from ``examples.parquet`` and a few facts of
``summary.json`` (which classes are rare above all: a rare class is judged
by its own threshold). A summary edited after scoring (``rare: false`` for a
class that has 5 items) would change the verdict, so every figure the
comparison uses is recomputed from the examples and the contract the
summary carries (whose fingerprint is checked first), by the scorer's own
functions, and a summary that disagrees is refused, naming the file and
the first key that differs. ``examples_sha256`` in the summary ties the
two files together: a swapped ``examples.parquet`` is refused before any
figure is read. The figures are counts and ratios of counts, so they agree
exactly; nothing is compared with a tolerance.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalkit.errors import MalformedFile

if TYPE_CHECKING:
    import polars as pl

    from evalkit.contract.model import Contract
    from evalkit.records._summary import ScoreSummary

FIGURES = ("overall", "classes", "slices")
RERUN = "the folder was changed after scoring; re-run evalkit score"


def _contract(normalized: dict[str, Any], summary_path: Path) -> Contract:
    from pydantic import ValidationError

    from evalkit.contract.model import Contract

    try:
        return Contract.model_validate(normalized)
    except ValidationError as error:
        detail = error.errors()[0]
        key = ".".join(["contract", "normalized", *(str(part) for part in detail["loc"])])
        raise MalformedFile(
            f"{summary_path}: key {key!r}: {detail['msg'].lower()}; re-run evalkit score"
        ) from error


def recomputed_figures(examples: pl.DataFrame, contract: Contract) -> dict[str, Any]:
    """``overall``, ``classes`` and ``slices`` as ``score`` computes them, as JSON data."""
    from evalkit.scoring import aggregate

    return {
        "overall": aggregate.rates(examples).model_dump(mode="json"),
        "classes": {
            label: stats.model_dump(mode="json")
            for label, stats in aggregate.class_stats(examples, contract).items()
        },
        "slices": {
            name: rates.model_dump(mode="json")
            for name, rates in aggregate.slice_stats(examples, contract).items()
        },
    }


def _first_difference(key: str, expected: Any, found: Any) -> tuple[str, Any, Any] | None:
    """The first key (dotted) where ``found`` differs from ``expected``; extra keys are allowed."""
    if isinstance(expected, dict):
        if not isinstance(found, dict):
            return key, expected, found
        if key in ("classes", "slices"):
            extra = sorted(set(found) - set(expected))
            if extra:
                return f"{key}.{extra[0]}", _MISSING, found[extra[0]]
        for name, value in expected.items():
            difference = _first_difference(f"{key}.{name}", value, found.get(name, _MISSING))
            if difference is not None:
                return difference
        return None
    if found is _MISSING or (type(found) is not type(expected) and not _numbers(expected, found)):
        return key, expected, found
    return None if found == expected else (key, expected, found)


_MISSING = object()


def _numbers(first: Any, second: Any) -> bool:
    """An int and a float of one value agree (JSON writers differ on 1.0 vs 1)."""
    kinds = (int, float)
    return all(isinstance(v, kinds) and not isinstance(v, bool) for v in (first, second))


def _message(where: str, should: Any, found: Any) -> str:
    import json

    if found is _MISSING:
        return (
            f"{where} is missing, but examples.parquet and the contract give {json.dumps(should)}"
        )
    if should is _MISSING:
        return f"{where} is there, but examples.parquet and the contract give no such entry"
    return (
        f"{where} is {json.dumps(found)}, but examples.parquet and the contract give "
        f"{json.dumps(should)}"
    )


def verify_summary(
    summary_path: Path,
    summary: ScoreSummary,
    raw: dict[str, Any],
    examples_path: Path,
    examples: pl.DataFrame,
    examples_sha256: str,
) -> None:
    """Refuse a summary whose examples hash or figures disagree with its examples and contract.

    The figures are compared as ``raw`` (the document read) has them, not as
    the model converts them: ``"rare": 0`` is not the ``false`` score writes.
    """
    recorded = summary.examples_sha256
    if recorded is not None and recorded != examples_sha256:
        raise MalformedFile(
            f"{examples_path}: its sha256 {examples_sha256[:12]}… is not the "
            f"{recorded[:12]}… that summary.json records: {RERUN}"
        )
    contract = _contract(summary.contract.normalized, summary_path)
    missing = [
        f"slice.{item.name}" for item in contract.slices if f"slice.{item.name}" not in examples
    ]
    if contract.class_column is not None and "predicted_class" not in examples.columns:
        missing.append("predicted_class")
    if missing:
        raise MalformedFile(
            f"{examples_path}: no column {missing[0]!r}, which the contract's figures need; "
            "re-run evalkit score"
        )
    expected = recomputed_figures(examples, contract)
    for key in FIGURES:
        difference = _first_difference(key, expected[key], raw.get(key, _MISSING))
        if difference is not None:
            raise MalformedFile(f"{summary_path}: {_message(*difference)}: {RERUN}")
