"""The per-example table: one row per gold item with its verdicts.

Outputs are parsed in prediction order as soon as they are read (in worker
processes for large inputs, while gold is read and ids are aligned); then
each gold row picks its prediction's parsed values by row number and rows
are matched in batches of ``VERDICT_ROWS``. Gold items without a prediction
go through the same code and come out ``missing``.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from evalkit.contract.labels import parse_labels
from evalkit.contract.match import field_match, predicted_class, slice_mask
from evalkit.contract.matchers import matcher
from evalkit.contract.parse import (
    INVALID_JSON,
    MISSING,
    UNKNOWN_LABEL,
    ParserSpec,
    parsed_schema,
)
from evalkit.errors import InvalidContract
from evalkit.scoring.processes import resolve_workers
from evalkit.scoring.workers import ParsedChunk, ParsePool, Spec, join_chunks

if TYPE_CHECKING:
    import polars as pl

    from evalkit.contract.model import Contract
    from evalkit.contract.tool_rules import ToolCatalog

GOLD_PREFIX = "gold:"
HAS_PREDICTION = "has_prediction"
PRED_ROW = "pred_row"
# Verdicts are computed over this many rows at once: large vectorised passes,
# yet small enough that matching runs while later chunks are still parsed
# (with 500k, scoring 500k outputs matched everything after the last chunk:
# ~0.3 s with the parsing subprocess idle; now only the last batch waits).
VERDICT_ROWS = 100_000


def _override_errors(rows: pl.DataFrame, invalid_category: str) -> pl.DataFrame:
    """No prediction and failed requests are ``missing``, undecodable bytes invalid."""
    import polars as pl

    unanswered = ~pl.col(HAS_PREDICTION)
    request_error = (
        pl.col("request_error")
        if "request_error" in rows.columns
        else pl.lit(None, dtype=pl.String)
    )
    failed = request_error.is_not_null()
    undecodable = (
        pl.col("invalid_utf8").fill_null(False) if "invalid_utf8" in rows.columns else pl.lit(False)
    )
    return rows.with_columns(
        pl.when(unanswered | failed)
        .then(pl.lit(MISSING))
        .when(undecodable)
        .then(pl.lit(invalid_category))
        .otherwise(pl.col("error"))
        .alias("error"),
        pl.when(unanswered)
        .then(pl.lit("no prediction for this id"))
        .when(failed)
        .then(request_error)
        .when(undecodable)
        .then(pl.lit("the output is not valid UTF-8"))
        .otherwise(pl.col("error_detail"))
        .alias("error_detail"),
    )


def _expressions(rows: pl.DataFrame, contract: Contract) -> list[tuple[str, pl.Expr]]:
    """(where in the contract, expression) for every example column after ``id``."""
    import polars as pl

    valid = pl.col("error").is_null()
    matches: list[tuple[str, pl.Expr]] = []
    f1_columns: list[tuple[str, pl.Expr]] = []
    for index, (name, spec) in enumerate(contract.fields.items()):
        assert spec.gold is not None, "fields of parse: json and label name their gold column"
        gold_column = GOLD_PREFIX + spec.gold
        dtype = rows.schema[gold_column]
        rule = matcher(spec.match)
        computed = rule.columns(rows, gold_column, index, dtype)
        is_label = contract.output.parse == "label"
        expression = field_match(
            spec, index, gold_column, dtype, f"fields.{name}", computed, is_label
        )
        matches.append((f"fields.{name}", expression.alias(f"match.{name}")))
        if rule.reports_f1:
            f1_columns.append((f"fields.{name}", pl.lit(computed["f1"]).alias(f"f1.{name}")))
    by_name = dict(zip(contract.fields, (expression for _, expression in matches), strict=True))
    correct = pl.all_horizontal([by_name[name] for name in contract.correct_fields])
    class_name = contract.class_field
    if contract.class_column is not None and class_name is not None:
        index = list(contract.fields).index(class_name)
        gold_class = GOLD_PREFIX + contract.class_column
        predicted = predicted_class(gold_class, index, by_name[class_name])
        classes = pl.col(gold_class).cast(pl.String)
    else:
        predicted = classes = pl.lit(None, dtype=pl.String)
    columns = [
        ("class", classes.alias("class")),
        ("fields", predicted.alias("predicted_class")),
        ("output", valid.alias("format_valid")),
        ("output", pl.col("error")),
        ("output", pl.col("error_detail")),
        ("correct", (valid & correct).alias("content_correct")),
        *matches,
        *f1_columns,
    ]
    for index, item in enumerate(contract.slices):
        where = {GOLD_PREFIX + column: value for column, value in item.where.items()}
        label = f"slices[{index}] ({item.name})"
        columns.append((label, slice_mask(where, rows.schema).alias(f"slice.{item.name}")))
    return columns


def _verdicts(rows: pl.DataFrame, contract: Contract, invalid_category: str) -> pl.DataFrame:
    """Example columns for rows holding gold columns and parsed columns (one polars pass)."""
    import polars as pl

    rows = _override_errors(rows, invalid_category)
    columns = _expressions(rows, contract)
    try:
        return rows.select(pl.col("id"), *(expression for _, expression in columns))
    except pl.exceptions.PolarsError:
        for where, expression in columns:  # find the rule that cannot be applied
            try:
                rows.select(expression)
            except pl.exceptions.PolarsError as error:
                first = str(error).strip().splitlines()[0]
                raise InvalidContract(
                    f"{where}: cannot compare with the gold column ({first}); "
                    "compare each column with values of its own type"
                ) from error
        raise


def parser_spec(contract: Contract) -> Spec:
    """What parsing processes are sent for a ``parse: json`` or ``tool_calls`` contract."""
    if contract.output.parse == "tool_calls":
        from evalkit.contract.tool_parse import ToolParserSpec

        return ToolParserSpec.from_contract(contract)
    return ParserSpec.from_contract(contract)


class ParsedOutputs:
    """Outputs being parsed: workers start at once; :meth:`chunks` yields results in order.

    With worker processes a collector thread reads results as they come into
    a queue, so parsing proceeds while the caller reads gold and aligns ids,
    and the caller can match early chunks while later ones are parsed. In a
    single process the parsing happens as :meth:`chunks` is iterated.
    """

    def __init__(
        self,
        contract: Contract,
        outputs: pl.Series,
        workers: int | None,
        pool: ParsePool | None,
        structured: pl.Series | None = None,
    ) -> None:
        self._contract = contract
        if contract.output.parse == "tool_calls":
            from evalkit.contract.tool_parse import tool_outputs

            # The raw texts, with the structured calls beside them when there are any.
            outputs = tool_outputs(outputs, structured)
        self._outputs: pl.Series | None = outputs
        self._pool = pool
        self._owned = False
        self._queue: queue.Queue[Any] | None = None
        if contract.output.parse == "label":
            return
        if pool is None:
            self._pool = ParsePool(parser_spec(contract), resolve_workers(workers, len(outputs)))
            self._owned = True
        if self._pool is not None and self._pool.workers > 1:
            self._queue = queue.Queue()
            threading.Thread(target=self._collect, args=(self._queue,), daemon=True).start()

    def _take_pieces(self) -> list[pl.Series]:
        """The outputs as separately allocated pieces; this object keeps no reference."""
        assert self._outputs is not None
        pieces = self._outputs.get_chunks()
        self._outputs = None
        return pieces

    def _collect(self, results: queue.Queue[Any]) -> None:
        assert self._pool is not None
        pieces = self._take_pieces()  # each piece is freed once it is parsed
        try:
            for chunk in self._pool.parse_chunks(pieces):
                results.put(chunk)
            results.put(_DONE)
        except BaseException as error:  # re-raised in the caller's thread by chunks()
            results.put(error)

    def chunks(self) -> Iterator[ParsedChunk]:
        """Parsed columns for consecutive chunks of the outputs, in order."""
        try:
            if self._queue is not None:
                while (item := self._queue.get()) is not _DONE:
                    if isinstance(item, BaseException):
                        raise item
                    yield item
            elif self._outputs is not None:
                if self._contract.output.parse == "label":
                    outputs, self._outputs = self._outputs, None
                    yield ParsedChunk(parse_labels(outputs, self._contract))
                else:
                    assert self._pool is not None
                    yield from self._pool.parse_chunks(self._take_pieces())
        finally:
            if self._owned and self._pool is not None:
                self._pool.close()

    def result(self) -> ParsedChunk:
        """All parsed columns, for the outputs in their order."""
        import polars as pl

        chunks = list(self.chunks())
        if not chunks:
            return ParsedChunk(pl.DataFrame(schema=self.schema()))
        return join_chunks(chunks)

    def schema(self) -> dict[str, Any]:
        """The polars schema of the parsed columns."""
        if self._contract.output.parse == "tool_calls":
            from evalkit.contract.tool_parse import tool_parsed_schema

            return tool_parsed_schema()
        return parsed_schema(len(self._contract.fields))


_DONE = object()


def _batches(table: pl.DataFrame, parsing: ParsedOutputs) -> Iterator[pl.DataFrame]:
    """Gold rows joined with their parsed prediction, ``VERDICT_ROWS`` at a time.

    When predictions come in gold order (gaps and extra ids allowed: the
    usual case), each batch is matched as soon as its chunks are parsed and
    older chunks are dropped, so parsed values never pile up; otherwise all
    outputs are parsed first and gathered into gold order.
    """
    import polars as pl

    pred_rows = table[PRED_ROW]
    if not pred_rows.drop_nulls().is_sorted():
        parsed = parsing.result()
        for start in range(0, table.height, VERDICT_ROWS):
            rows = table.slice(start, VERDICT_ROWS)
            aligned = parsed.gather(rows[PRED_ROW])
            yield pl.concat([rows.drop(PRED_ROW), aligned], how="horizontal")
        return
    chunks = parsing.chunks()
    window: list[ParsedChunk] = []
    window_start = window_end = 0  # prediction rows held in ``window``
    for start in range(0, table.height, VERDICT_ROWS):
        rows = table.slice(start, VERDICT_ROWS)
        present = rows[PRED_ROW].drop_nulls()
        if len(present) == 0:
            aligned = pl.DataFrame(schema=parsing.schema()).clear(n=rows.height)
        else:
            first, last = int(present.min()), int(present.max())  # type: ignore[arg-type]
            while window and window_start + len(window[0]) <= first:
                window_start += len(window.pop(0))
            while window_end <= last:
                chunk = next(chunks)
                window.append(chunk)
                window_end += len(chunk)
                if len(window) == 1:
                    window_start = window_end - len(chunk)
            offsets = (rows[PRED_ROW].cast(pl.Int64) - window_start).alias("offset")
            aligned = join_chunks(window).gather(offsets)
        yield pl.concat([rows.drop(PRED_ROW), aligned], how="horizontal")
    for _ in chunks:  # let the workers finish and the pool close
        pass


def _tool_verdicts(rows: pl.DataFrame, contract: Contract, catalog: ToolCatalog) -> pl.DataFrame:
    """Example columns of tool-call outputs (:mod:`evalkit.contract.tool_verdicts`) + slices."""
    from evalkit.contract.tool_parse import UNPARSABLE_CALL
    from evalkit.contract.tool_verdicts import tool_example_columns

    rows = _override_errors(rows, UNPARSABLE_CALL)
    frame = tool_example_columns(rows, contract, catalog)
    slices = []
    for item in contract.slices:
        where = {GOLD_PREFIX + column: value for column, value in item.where.items()}
        slices.append(slice_mask(where, rows.schema).alias(f"slice.{item.name}"))
    return frame.hstack(rows.select(slices).get_columns()) if slices else frame


def build_examples(
    contract: Contract,
    table: pl.DataFrame,
    parsing: ParsedOutputs,
    catalog: ToolCatalog | None = None,
) -> pl.DataFrame:
    """One row per gold item: verdicts, matches, slices; sorted by id.

    ``table`` has one row per gold item: ``id``, the ``gold:<column>``
    columns, and its prediction's ``pred_row`` (row of the parsed outputs),
    ``request_error``, ``invalid_utf8`` and ``has_prediction`` (all null
    when there is none). Rows are matched in batches of ``VERDICT_ROWS``.
    ``catalog`` holds the gold's tools (``parse: tool_calls`` only).
    """
    import polars as pl

    if contract.output.parse == "tool_calls":
        assert catalog is not None, "tool_calls contracts need their tools catalog"
        parts = [_tool_verdicts(batch, contract, catalog) for batch in _batches(table, parsing)]
        return _sorted(pl.concat(parts, how="vertical", rechunk=False))
    invalid_category = UNKNOWN_LABEL if contract.output.parse == "label" else INVALID_JSON
    parts = [_verdicts(batch, contract, invalid_category) for batch in _batches(table, parsing)]
    return _sorted(pl.concat(parts, how="vertical", rechunk=False))


def _sorted(examples: pl.DataFrame) -> pl.DataFrame:
    if not examples["id"].is_sorted():
        examples = examples.sort("id")
    return examples  # chunked; the writer fixes the row groups, so the bytes do not depend on it
