"""Reading a result folder written by ``evalkit score`` and checking two agree.

A result is ``summary.json`` plus ``examples.parquet`` (docs/formats.md).
``summary.json`` is read with the model ``score`` writes it with
(:class:`~evalkit.records._summary.ScoreSummary`, its version checked);
``examples.parquet`` needs the columns comparison relies on, and any other
column is carried along. Every problem becomes one line that names the file
and the key or column, and says what to do.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalkit.comparison.verify import verify_summary
from evalkit.errors import (
    IncompatibleResults,
    InvalidTable,
    UnreadableFile,
)
from evalkit.io import hash_early, require_columns, sha256_file

if TYPE_CHECKING:
    import polars as pl

    from evalkit.records._summary import ScoreSummary

EXAMPLE_COLUMNS = ("id", "class", "format_valid", "error", "content_correct")
RERUN_HINT = "re-run evalkit score to write a complete result"


@dataclass(frozen=True)
class ScoredResult:
    """One folder written by ``evalkit score``: its summary and its per-example table."""

    path: Path
    summary: ScoreSummary
    examples: pl.DataFrame
    summary_sha256: str
    examples_sha256: str | None = None
    """sha256 of ``examples.parquet`` as read (None for a result built in memory)."""
    in_memory: bool = False
    """A result :func:`evalkit.score` returned, not written (``path`` then only names it)."""

    @property
    def name(self) -> str:
        """The result's name (``--name`` of ``evalkit score``, else its folder's name)."""
        return self.summary.name or self.path.name

    @property
    def slice_names(self) -> list[str]:
        """Names of the slices recorded as ``slice.<name>`` columns."""
        return [c.removeprefix("slice.") for c in self.examples.columns if c.startswith("slice.")]


def _read_examples(path: Path, summary: ScoreSummary) -> tuple[pl.DataFrame, str]:
    """The examples' frame, checked, and the sha256 of the bytes it was read from."""
    import polars as pl

    from evalkit.records._summary import read_examples

    table = read_examples(path)
    frame = table.frame
    require_columns(frame, EXAMPLE_COLUMNS, str(path))
    for column in ("id", "format_valid", "content_correct"):
        nulls = frame[column].null_count()
        if nulls:
            raise InvalidTable(f"{path}: column {column!r} has {nulls} null values; {RERUN_HINT}")
    for column in ("format_valid", "content_correct"):
        if frame[column].dtype != pl.Boolean:
            raise InvalidTable(
                f"{path}: column {column!r} is {frame[column].dtype}, expected Boolean; "
                f"{RERUN_HINT}"
            )
    frame = frame.with_columns(pl.col("id").cast(pl.String), pl.col("class").cast(pl.String))
    # evalkit score writes examples sorted by id; sort only what is not. In id
    # order a repeated id is next to itself: no hash table over a million ids.
    if not frame["id"].is_sorted():
        frame = frame.sort("id")
    ids = frame["id"]
    repeated = ids.slice(1).filter(ids.slice(1) == ids.slice(0, max(len(ids) - 1, 0)))
    if len(repeated):
        raise InvalidTable(f"{path}: id {repeated[0]!r} occurs more than once; ids must be unique")
    if frame.height != summary.overall.n:
        raise InvalidTable(
            f"{path}: {frame.height} rows but summary.json says overall.n = "
            f"{summary.overall.n}; the folder mixes two runs, {RERUN_HINT}"
        )
    return frame, table.sha256


def _check_fingerprint(summary: ScoreSummary, raw: dict[str, Any], path: Path) -> None:
    """The contract block must still hash to the fingerprint it was scored under.

    The hash is of the block as the file writes it (``raw``), not as the
    model converts it: a value edited into another type is an edit.
    """
    from evalkit.contract.fingerprint import fingerprint_of

    contract = summary.contract
    evaluator = raw["contract"]["evaluator"]
    if fingerprint_of(contract.normalized, evaluator) != contract.fingerprint:
        raise IncompatibleResults(
            f"{path}: contract.normalized and contract.evaluator no longer hash to "
            f"contract.fingerprint {contract.fingerprint} (the file was edited after scoring); "
            f"{RERUN_HINT}"
        )


def load_result(path: str | os.PathLike[str]) -> ScoredResult:
    """Read and check a result folder written by ``evalkit score``.

    Beyond the shape of both files, the contract block must hash to its
    fingerprint, ``examples.parquet`` to the ``examples_sha256`` the summary
    records, and the summary's figures must be what the examples and the
    contract give (:mod:`evalkit.comparison.verify`); otherwise exit 2.
    """
    folder = Path(path)
    if not folder.exists():
        raise UnreadableFile(f"{folder}: no such folder; pass a folder written by evalkit score")
    if not folder.is_dir():
        raise UnreadableFile(
            f"{folder}: is a file; pass the folder written by evalkit score "
            "(with summary.json and examples.parquet)"
        )
    from evalkit.records._summary import EXAMPLES_FILE, SUMMARY_FILE, read_summary_document

    summary_path, examples_path = folder / SUMMARY_FILE, folder / EXAMPLES_FILE
    hash_early([summary_path, examples_path])
    raw, summary = read_summary_document(summary_path, RERUN_HINT)
    _check_fingerprint(summary, raw, summary_path)
    examples, examples_sha256 = _read_examples(examples_path, summary)
    verify_summary(summary_path, summary, raw, examples_path, examples, examples_sha256)
    return ScoredResult(folder, summary, examples, sha256_file(summary_path), examples_sha256)


def scored_in_memory(result: Any) -> ScoredResult:
    """A result :func:`evalkit.score` returned (a :class:`~evalkit.ScoreResult`), as compared.

    Its summary and examples are those ``summary.json`` and
    ``examples.parquet`` would hold, taken as they are: there is no folder
    to check them against. Errors name it ``NAME (in memory)``.
    """
    import hashlib

    import polars as pl

    from evalkit.records._summary import summary_json

    summary = result.summary
    data = summary_json(summary)
    examples = result.examples.with_columns(
        pl.col("id").cast(pl.String), pl.col("class").cast(pl.String)
    )
    if not examples["id"].is_sorted():
        examples = examples.sort("id")
    return ScoredResult(
        path=Path(f"{summary.name} (in memory)"),
        summary=summary,
        examples=examples,
        summary_sha256=hashlib.sha256(data).hexdigest(),
        examples_sha256=summary.examples_sha256,
        in_memory=True,
    )


def check_compatible(baseline: ScoredResult, candidate: ScoredResult) -> None:
    """Refuse two results made under different contracts or gold files.

    Comparing across rule changes or gold edits would attribute the change of
    the rules to the model; the fingerprints make that impossible to miss.
    """
    base, cand = baseline.summary, candidate.summary
    if base.contract.fingerprint != cand.contract.fingerprint:
        raise IncompatibleResults(
            f"{baseline.path} and {candidate.path} were scored under different contracts: "
            f"{base.contract.name} v{base.contract.version} ({base.contract.fingerprint}) vs "
            f"{cand.contract.name} v{cand.contract.version} ({cand.contract.fingerprint}); "
            "re-score the results of the older version under the newer contract with "
            "evalkit rescore RESULT... --contract NEW.yaml --out DIR, then compare those"
        )
    if base.gold.sha256 != cand.gold.sha256:
        raise IncompatibleResults(
            f"{baseline.path} and {candidate.path} were scored against different gold files: "
            f"sha256 {base.gold.sha256} vs {cand.gold.sha256}; "
            "score both against the same gold file"
        )
