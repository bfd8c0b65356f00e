"""``evalkit.score``: gold + predictions + contract -> per-example verdicts and a summary.

Read gold (only the columns the contract names) and predictions, resolve
duplicate and unknown ids, parse every output (in chunks, on every core for
large inputs), match fields against gold, then aggregate. One row per gold
item comes out, sorted by id, whatever the input order or worker count.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from evalkit._version import __version__
from evalkit.contract.fingerprint import contract_fingerprint, normalized_contract
from evalkit.contract.load import load_contract
from evalkit.contract.model import Contract
from evalkit.contract.validation import evaluator_semantics
from evalkit.errors import DuplicateIds, InvalidTable, UnknownColumn, UsageError
from evalkit.io import read_table, sha256_file
from evalkit.scoring import aggregate
from evalkit.scoring.examples import build_examples
from evalkit.scoring.predictions import predictions_sha256, read_predictions
from evalkit.scoring.summary import ContractInfo, Evaluator, GoldInfo, PredictionsInfo, ScoreSummary

if TYPE_CHECKING:
    import polars as pl

OnDuplicate = Literal["error", "first", "last"]
GOLD_PREFIX = "gold:"


@dataclass(frozen=True)
class ScoreResult:
    """What :func:`score` returns: the summary and the per-example table."""

    summary: ScoreSummary
    examples: pl.DataFrame

    def write(self, out: str | os.PathLike[str], *, force: bool = False) -> Path:
        """Write ``summary.json`` and ``examples.parquet`` into ``out`` (atomically)."""
        from evalkit.scoring.write import write_score

        return write_score(self, out, force=force)


def _contract_columns(contract: Contract) -> list[tuple[str, str]]:
    """(contract key, gold column) for every gold column the contract names."""
    named = [("id", contract.id_column)]
    if contract.class_column:
        named.append(("class", contract.class_column))
    named += [(f"fields.{name}.gold", spec.gold) for name, spec in contract.fields.items()]
    for index, item in enumerate(contract.slices):
        named += [(f"slices[{index}].where.{column}", column) for column in item.where]
    return named


def read_gold(path: Path, contract: Contract, contract_label: str) -> pl.DataFrame:
    """The gold columns the contract reads, renamed ``gold:<column>``, plus a string ``id``."""
    import polars as pl

    frame = read_table(path)
    for key, column in _contract_columns(contract):
        if column not in frame.columns:
            listing = ", ".join(frame.columns[:20]) or "(none)"
            raise UnknownColumn(
                f"{path}: no column {column!r}, named by {key} in {contract_label}; "
                f"the columns are: {listing}"
            )
    if frame.height == 0:
        raise InvalidTable(f"{path}: the gold file has no rows")
    ids = frame[contract.id_column]
    if isinstance(ids.dtype, pl.Struct | pl.List):
        raise InvalidTable(f"{path}: id column {contract.id_column!r} is not a scalar column")
    gold = frame.select(
        ids.cast(pl.String).alias("id"),
        *[pl.col(column).alias(GOLD_PREFIX + column) for column in contract.gold_columns],
    )
    nulls = gold["id"].is_null()
    if nulls.any():
        raise InvalidTable(
            f"{path}: row {int(nulls.arg_max() or 0) + 1} has no id in column "
            f"{contract.id_column!r}; every gold item needs one"
        )
    repeated = gold.filter(pl.col("id").is_duplicated())["id"]
    if len(repeated):
        raise DuplicateIds(
            f"{path}: id {repeated.min()!r} occurs {int((repeated == repeated.min()).sum())} "
            f"times in the gold file; gold ids must be unique"
        )
    return gold


@dataclass(frozen=True)
class _PredictionFacts:
    known: pl.DataFrame
    n: int
    unknown_ids: int
    unknown_id_example: str | None
    duplicate_ids: int
    request_errors: int


def _resolve_ids(
    frame: pl.DataFrame, gold_ids: pl.DataFrame, on_duplicate: OnDuplicate, path: Path
) -> _PredictionFacts:
    import polars as pl

    repeated = frame.filter(pl.col("id").is_duplicated())["id"]
    duplicate_ids = repeated.n_unique() if len(repeated) else 0
    if duplicate_ids and on_duplicate == "error":
        first = repeated.min()
        raise DuplicateIds(
            f"{path}: id {first!r} has {int((repeated == first).sum())} predictions "
            f"({duplicate_ids} ids are repeated); keep one per id, or pass "
            "--on-duplicate first|last"
        )
    resolved = frame
    if duplicate_ids:
        keep: Literal["first", "last"] = "first" if on_duplicate == "first" else "last"
        resolved = frame.unique(subset="id", keep=keep, maintain_order=True)
    unknown = resolved.join(gold_ids, on="id", how="anti")["id"]
    known = resolved.join(gold_ids, on="id", how="semi", maintain_order="left")
    return _PredictionFacts(
        known=known,
        n=frame.height,
        unknown_ids=len(unknown),
        unknown_id_example=unknown.min() if len(unknown) else None,  # type: ignore[arg-type]
        duplicate_ids=duplicate_ids,
        request_errors=int(known["request_error"].is_not_null().sum()),
    )


def score(
    contract: Contract | str | os.PathLike[str],
    gold: str | os.PathLike[str],
    predictions: str | os.PathLike[str],
    *,
    name: str | None = None,
    pred_format: str = "auto",
    id_col: str | None = None,
    output_col: str | None = None,
    on_duplicate: OnDuplicate = "error",
    workers: int | None = None,
) -> ScoreResult:
    """Score a predictions file against gold under a contract.

    ``contract`` is a loaded :class:`Contract` or a contract file. Predictions
    are read per ``pred_format`` (``auto`` recognises them); ``id_col`` and
    ``output_col`` name the id (a dotted path for nested records) and the raw
    text. Duplicate prediction ids are an error unless ``on_duplicate`` is
    ``first`` or ``last``; predictions for ids not in gold are counted and
    ignored. ``workers`` sets the parsing processes (default: all cores for
    large inputs). Bad input raises an :class:`~evalkit.errors.EvalkitError`.
    """
    if on_duplicate not in ("error", "first", "last"):
        raise UsageError(f"on_duplicate must be error, first or last, not {on_duplicate!r}")
    contract_path = None if isinstance(contract, Contract) else Path(contract)
    loaded = contract if isinstance(contract, Contract) else load_contract(contract)
    label = str(contract_path) if contract_path else f"contract {loaded.name}"
    gold_path, pred_path = Path(gold), Path(predictions)
    with ThreadPoolExecutor(max_workers=2) as hashing:
        gold_frame = read_gold(gold_path, loaded, label)
        gold_hash = hashing.submit(sha256_file, gold_path)
        table = read_predictions(
            pred_path,
            pred_format=pred_format,
            default_id=loaded.id_column,
            id_col=id_col,
            output_col=output_col,
        )
        pred_hash = hashing.submit(predictions_sha256, pred_path)
        facts = _resolve_ids(table.frame, gold_frame.select("id"), on_duplicate, pred_path)
        examples = build_examples(loaded, gold_frame, facts.known, workers=workers)
        summary = ScoreSummary(
            evalkit_version=__version__,
            name=name or (pred_path.stem if pred_path.is_file() else pred_path.name),
            contract=ContractInfo(
                name=loaded.name,
                version=loaded.version,
                fingerprint=contract_fingerprint(loaded),
                path=str(contract_path) if contract_path else None,
                normalized=normalized_contract(loaded),
                evaluator=Evaluator(**evaluator_semantics()),
            ),
            gold=GoldInfo(path=str(gold_path), sha256=gold_hash.result(), n=gold_frame.height),
            predictions=PredictionsInfo(
                path=str(pred_path),
                sha256=pred_hash.result(),
                n=facts.n,
                format=table.format,
                unknown_ids=facts.unknown_ids,
                unknown_id_example=facts.unknown_id_example,
                duplicate_ids=facts.duplicate_ids,
                on_duplicate=on_duplicate,
                request_errors=facts.request_errors,
            ),
            overall=aggregate.rates(examples),
            fields=aggregate.field_stats(examples, loaded),
            classes=aggregate.class_stats(examples, loaded),
            slices=aggregate.slice_stats(examples, loaded),
            errors=aggregate.error_stats(examples),
        )
    return ScoreResult(summary=summary, examples=examples)
