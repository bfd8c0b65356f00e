"""``evalkit.score``: gold + predictions + contract -> per-example verdicts and a summary.

Read gold (only the columns the contract names) and predictions, resolve
duplicate and unknown ids, parse every output (in chunks, on every core for
large inputs), match fields against gold, then aggregate. One row per gold
item comes out, sorted by id, whatever the input order or worker count.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from evalkit._version import __version__
from evalkit.contract.fingerprint import contract_fingerprint, normalized_contract
from evalkit.contract.load import load_contract
from evalkit.contract.match import check_gold_types
from evalkit.contract.model import Contract
from evalkit.contract.validation import evaluator_semantics, tool_semantics
from evalkit.errors import DuplicateIds, InvalidContract, InvalidTable
from evalkit.io import FRAME_SOURCE, frame_sha256, is_path, require_regular_file, sha256_input
from evalkit.provenance.gold_content import content_sha256
from evalkit.records._card import AdapterCard
from evalkit.records._summary import (
    BaseModelInfo,
    ContractInfo,
    Evaluator,
    GoldInfo,
    PredictionsInfo,
    ScoreSummary,
)
from evalkit.scoring import aggregate
from evalkit.scoring.examples import (
    HAS_PREDICTION,
    PRED_ROW,
    ParsedOutputs,
    build_examples,
    parser_spec,
)
from evalkit.scoring.gold import all_unique, check_gold_columns, gold_input, read_gold
from evalkit.scoring.judged import answers_sha256
from evalkit.scoring.options import OnDuplicate, ScoreParams
from evalkit.scoring.prediction_frame import read_prediction_input
from evalkit.scoring.predictions import STRUCTURED_CALLS, predictions_sha256
from evalkit.scoring.processes import estimated_rows, resolve_workers
from evalkit.scoring.result import ScoreResult
from evalkit.scoring.tool_gold import read_tool_gold
from evalkit.scoring.workers import ParsePool

if TYPE_CHECKING:
    import polars as pl

    from evalkit.io import TableLike

GOLD_PREFIX = "gold:"


@dataclass(frozen=True)
class _Resolved:
    predictions: pl.DataFrame
    duplicate_ids: int


def _resolve_duplicates(
    predictions: pl.DataFrame, on_duplicate: OnDuplicate, path: Path | str
) -> _Resolved:
    """One prediction per id: an error, or the first/last as ``on_duplicate`` says."""
    import polars as pl

    if all_unique(predictions["id"]):
        return _Resolved(predictions, 0)
    repeated = predictions.filter(pl.col("id").is_duplicated())["id"]
    duplicate_ids = repeated.n_unique()
    if on_duplicate == "error":
        first = repeated.min()
        raise DuplicateIds(
            f"{path}: id {first!r} has {int((repeated == first).sum())} predictions "
            f"({duplicate_ids} ids are repeated); keep one per id, or pass "
            "{on_duplicate} first|last",
            refs=["on_duplicate"],
        )
    keep: Literal["first", "last"] = "first" if on_duplicate == "first" else "last"
    return _Resolved(predictions.unique(subset="id", keep=keep, maintain_order=True), duplicate_ids)


def _prediction_rows(gold_ids: pl.Series, prediction_ids: pl.Series) -> pl.Series:
    """For each gold id, the row of the prediction with that id (null when there is none).

    Sorted ids on both sides (gold written by ``evalkit split``, predictions in
    gold order: the usual case) are matched by binary search, which needs no
    hash table; otherwise a hash join on the ids alone.
    """
    import polars as pl

    if gold_ids.is_sorted() and prediction_ids.is_sorted() and len(prediction_ids):
        position = prediction_ids.search_sorted(gold_ids, side="left")
        inside = position < len(prediction_ids)
        found = inside & (
            prediction_ids.gather(position.clip(0, len(prediction_ids) - 1)) == gold_ids
        )
        return pl.select(
            pl.when(pl.lit(found)).then(pl.lit(position).cast(pl.UInt32)).alias(PRED_ROW)
        ).to_series()
    keyed = pl.DataFrame({"id": prediction_ids}).with_row_index(PRED_ROW)
    joined = pl.DataFrame({"id": gold_ids}).join(keyed, on="id", how="left", maintain_order="left")
    return joined[PRED_ROW]


def _align(gold: pl.DataFrame, predictions: pl.DataFrame) -> tuple[pl.DataFrame, int, str | None]:
    """Every gold row with its prediction's row number (or null); unknown ids counted.

    The gold columns are not copied: the prediction columns are gathered by
    row number and set beside them.
    """

    rows = _prediction_rows(gold["id"], predictions["id"])
    extra = [rows, rows.is_not_null().alias(HAS_PREDICTION)]
    # Columns that say nothing (no failed request, no undecodable output: the
    # usual case) are left out; scoring treats them as absent.
    if predictions["request_error"].null_count() != predictions.height:
        extra.append(predictions["request_error"].gather(rows))
    if predictions["invalid_utf8"].any():
        extra.append(predictions["invalid_utf8"].gather(rows))
    table = gold.hstack(extra)
    unknown_ids = predictions.height - (len(rows) - rows.null_count())
    example = None
    if unknown_ids:
        example = predictions.join(gold.select("id"), on="id", how="anti")["id"].min()
    return table, unknown_ids, example  # type: ignore[return-value]


def _require_a_match(
    pred_path: Path | str,
    gold_path: Path | str,
    predictions: pl.DataFrame,
    unknown_ids: int,
    example: str | None,
    gold: pl.DataFrame,
) -> None:
    """Refuse predictions none of whose ids is a gold id (or that hold no record at all).

    Scoring them would report 0% with exit 0, when the likely cause is the
    wrong file, the wrong id column, or ids written differently (``1`` vs
    ``001``): a verdict on nothing.
    """
    if predictions.height == 0:
        raise InvalidTable(
            f"{pred_path}: holds no predictions (no records); score a file with the model's outputs"
        )
    if unknown_ids == predictions.height:
        raise InvalidTable(
            f"{pred_path}: none of its {predictions.height:,} ids is an id of {gold_path} "
            f"(e.g. {example!r} here, {gold['id'][0]!r} there); check {{id_column}} and that "
            "these predictions are for this gold file",
            refs=["id_column"],
        )


def _early_pool(contract: Contract, predictions: object, workers: int | None) -> Any:
    """Start parser workers now, so their start-up overlaps with reading the files."""
    rows = estimated_rows(Path(predictions)) if is_path(predictions) else _frame_rows(predictions)
    n_workers = resolve_workers(workers, rows)
    if contract.output.parse == "label" or n_workers <= 1:
        return nullcontext(None)
    return ParsePool(parser_spec(contract), n_workers)


def _frame_rows(frame: Any) -> int:
    """Rows of a frame of any kind the library takes (0 when it cannot tell: a LazyFrame)."""
    for attribute in ("height", "num_rows"):
        if isinstance(getattr(frame, attribute, None), int):
            return int(getattr(frame, attribute))
    return len(frame) if hasattr(frame, "__len__") else 0


def _provenance(
    card: AdapterCard | Mapping[str, Any] | None, base: BaseModelInfo | None, ledger: Any
) -> dict[str, Any]:
    """The summary's ``base``, ``card`` and ``ledger`` (the card's base unless one is given).

    A card given as JSON data is read as a ``card.json`` is (its version
    checked, every key typed).
    """
    if card is not None and not isinstance(card, AdapterCard):
        from evalkit.records._card import read_card_data

        card = read_card_data(card, "card", "pass an AdapterCard or what evalkit card writes")
    if base is None and card is not None:
        from evalkit.provenance.records import card_base

        base = BaseModelInfo(**card_base(card))
    return {"base": base, "card": card, "ledger": str(ledger) if ledger is not None else None}


def empty_slice_warnings(contract: Contract, slices: dict[str, Any]) -> list[str]:
    """One warning per contract slice that matches no gold item."""
    import orjson

    return [
        f"slice {item.name!r} matches no gold item (where: "
        f"{orjson.dumps(item.where).decode()}); check its columns and values"
        for item in contract.slices
        if slices[item.name].n == 0
    ]


def _structured_warning(contract: Contract, structured: pl.Series | None) -> list[str]:
    """A warning when predictions hold tool calls that the contract does not read.

    A Batch output whose answers are calls (``content: null``) would otherwise
    score every answer ``empty`` without a word on why.
    """
    if structured is None or contract.output.parse == "tool_calls":
        return []
    calls = int((structured.is_not_null() & (structured != "[]")).sum())
    if not calls:
        return []
    return [
        f"{calls:,} predictions answer with tool calls (message.tool_calls or a tool_calls "
        f"field), which output.parse: {contract.output.parse} does not read; score them with "
        "output.parse: tool_calls"
    ]


def _default_name(pred_path: Path | None) -> str:
    """A result's name without ``name``: the predictions file's stem (folder's name)."""
    if pred_path is None:
        return "predictions"
    return pred_path.stem if pred_path.is_file() else pred_path.name


def compute_score(
    contract: Contract | str | os.PathLike[str],
    gold: TableLike,
    predictions: TableLike,
    given: ScoreParams,
    /,
    *,
    card: AdapterCard | Mapping[str, Any] | None = None,
    base: BaseModelInfo | None = None,
    ledger: str | os.PathLike[str] | None = None,
) -> ScoreResult:
    """Score without the look: ``ledger`` is only recorded in the summary.

    The scorer of :func:`evalkit.score` and :func:`evalkit.rescore`
    (:mod:`evalkit.scoring.api`), which choose the ledger and append the look.
    ``given``'s values are used as they are: the tables are read (any
    ``hf_split`` chosen), the card and base made, the ledger chosen.
    """
    on_duplicate, workers = given.on_duplicate, given.workers
    id_col, output_col = given.id_column, given.output_column
    contract_path = None if isinstance(contract, Contract) else Path(contract)
    loaded = contract if isinstance(contract, Contract) else load_contract(contract)
    label = str(contract_path) if contract_path else f"contract {loaded.name}"
    gold_path = Path(gold) if is_path(gold) else None
    pred_path = Path(predictions) if is_path(predictions) else None
    if gold_path is not None and not gold_path.is_dir():
        require_regular_file(gold_path, "gold file")  # a FIFO would block the hashing
    with _early_pool(loaded, predictions, workers) as pool, ThreadPoolExecutor(2) as hashing:
        if gold_path is not None:
            check_gold_columns(gold_path, loaded, label)  # a contract/gold mismatch fails fast
            gold_hash = hashing.submit(sha256_input, gold_path)
        table, pred_frame_sha256 = read_prediction_input(
            predictions,
            pred_format=given.pred_format,
            default_id=loaded.id_column,
            id_col=id_col,
            output_col=output_col,
        )
        pred_label: Path | str = pred_path if pred_path is not None else "predictions frame"
        read_sha256 = table.sha256 or pred_frame_sha256  # a pipe or a frame: what was read
        pred_hash = hashing.submit(
            lambda: read_sha256 or predictions_sha256(pred_path)  # type: ignore[arg-type]
        )
        resolved = _resolve_duplicates(table.frame, on_duplicate, pred_label)
        n_records, pred_format_read = table.frame.height, table.format
        del table  # from here on only the resolved predictions are kept
        outputs = resolved.predictions["output"]  # what is judged: hashed below
        structured = resolved.predictions.get_column(STRUCTURED_CALLS, default=None)
        warnings = _structured_warning(loaded, structured)
        parsing = ParsedOutputs(loaded, outputs, workers, pool, structured=structured)
        kept = resolved.predictions.drop("output", STRUCTURED_CALLS, strict=False)
        # structured calls are judged too: kept to be hashed with the outputs below
        given_gold = gold_input(gold, loaded)  # while the outputs are parsed
        if gold_path is None:
            gold_hash = hashing.submit(frame_sha256, given_gold.frame)
        gold_label: Path | str = gold_path if gold_path is not None else given_gold.label
        catalog = None
        if loaded.output.parse == "tool_calls":
            tool_gold = read_tool_gold(given_gold, loaded, label)
            gold_frame, catalog = tool_gold.frame, tool_gold.catalog
            del tool_gold
        else:
            gold_frame = read_gold(given_gold, loaded, label)
        del given_gold
        gold_frame = check_gold_types(loaded, gold_frame, label, GOLD_PREFIX)
        gold_content = hashing.submit(content_sha256, gold_frame)
        aligned, unknown_ids, unknown_example = _align(gold_frame, kept)
        _require_a_match(pred_label, gold_label, kept, unknown_ids, unknown_example, gold_frame)
        invalid = aligned["invalid_utf8"] if "invalid_utf8" in aligned.columns else None
        answers = hashing.submit(
            answers_sha256, aligned["id"], outputs, aligned[PRED_ROW], invalid, structured
        )
        resolved_duplicates = resolved.duplicate_ids
        del resolved, gold_frame, outputs, structured
        del kept
        try:
            examples = build_examples(loaded, aligned, parsing, catalog)
        except InvalidContract as error:  # a rule that cannot apply to this gold file
            raise InvalidContract(f"{label}: {error.message}") from error
        request_errors = (
            int(aligned["request_error"].is_not_null().sum())
            if "request_error" in aligned.columns
            else 0
        )
        n_gold = aligned.height
        del aligned, parsing
        slices = aggregate.slice_stats(examples, loaded)
        summary = ScoreSummary(
            evalkit_version=__version__,
            name=given.name or _default_name(pred_path),
            contract=ContractInfo(
                name=loaded.name,
                version=loaded.version,
                fingerprint=contract_fingerprint(loaded),
                path=str(contract_path) if contract_path else None,
                normalized=normalized_contract(loaded),
                evaluator=Evaluator(**evaluator_semantics(), **tool_semantics(loaded)),
            ),
            gold=GoldInfo(
                path=str(gold_path) if gold_path is not None else None,
                source=None if gold_path is not None else FRAME_SOURCE,
                sha256=gold_hash.result(),
                n=n_gold,
                content_sha256=gold_content.result(),
            ),
            predictions=PredictionsInfo(
                path=str(pred_path) if pred_path is not None else None,
                source=None if pred_path is not None else FRAME_SOURCE,
                sha256=pred_hash.result(),
                n=n_records,
                format=pred_format_read,
                unknown_ids=unknown_ids,
                unknown_id_example=unknown_example,
                duplicate_ids=resolved_duplicates,
                on_duplicate=on_duplicate,
                request_errors=request_errors,
                id_col=id_col,
                output_col=output_col,
                answers_sha256=answers.result(),
            ),
            overall=aggregate.rates(examples),
            fields=aggregate.field_stats(examples, loaded),
            classes=aggregate.class_stats(examples, loaded),
            slices=slices,
            errors=aggregate.error_stats(examples),
            confusion=aggregate.confusion(examples, loaded),
            **_provenance(card, base, ledger),
            warnings=warnings + empty_slice_warnings(loaded, slices),
        )
    return ScoreResult(summary=summary, examples=examples)
