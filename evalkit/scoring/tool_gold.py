"""The gold of a tool-calling contract: each row's expected calls and its tools, checked.

Gold calls come from a ``gold_calls`` column (``[{name, arguments}]`` or its
JSON text; ``[]``: no call expected) or, with ``gold_answer``, from the
``tool_calls`` of each conversation's reference turn (read by
:mod:`evalkit.chat`; a reference turn without calls expects none). The row's
tools come from a gold column (read by the chat reader's tools rules) or the
contract's own list. Gold must be valid, as it must for ``parse: json``: a
tool whose ``parameters`` is not a JSON Schema, a gold call that does not
parse, names no tool of its row, breaks that tool's schema or holds a value
its field's matcher cannot compare is bad input (exit 2) naming the id.

The result is a frame in the scorer's gold shape (``id`` and ``gold:<name>``
columns): ``gold:function`` (the class), ``gold:__calls`` (the canonical text
of the calls, :func:`~evalkit.contract.tool_rules.calls_key`), ``gold:__tools``
(the tools' content hash) and the slices' columns; and the catalog of the
distinct tools, by hash.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from evalkit.contract.matchers import Matcher, matcher
from evalkit.contract.tool_names import FUNCTION_CLASS
from evalkit.contract.tool_rules import (
    ToolCatalog,
    ToolProblem,
    call_text,
    canonical_arguments,
    function_class,
    gold_calls_of,
    tools_list,
)
from evalkit.contract.tool_syntax import simple_call
from evalkit.contract.tool_verdicts import GOLD_CALLS as CALLS_COLUMN
from evalkit.contract.tool_verdicts import GOLD_TOOLS as TOOLS_COLUMN
from evalkit.errors import InvalidContract, InvalidSchema, InvalidTable, UnknownColumn

if TYPE_CHECKING:
    import polars as pl

    from evalkit.contract.model import Contract
    from evalkit.io import Table

GOLD_FIX = 'write [{"name": ..., "arguments": {...}}] ([] where no call is expected)'


@dataclass(frozen=True)
class ToolGold:
    """The gold frame of a tool-calling contract and the tools its rows name."""

    frame: pl.DataFrame
    catalog: ToolCatalog


def _where(label: str, ids: list[str], row: int) -> str:
    return f"{label}: row {row + 1} (id {ids[row]!r})"


def _row_tools(
    gold: Table, contract: Contract, ids: list[str], chat_tools: pl.Series | None
) -> tuple[pl.Series, ToolCatalog]:
    """Each row's tools digest, and the catalog of the distinct tools values.

    Each distinct tools value is checked once (a tools column usually holds a
    few lists, repeated on every row); an error names its first row.
    """
    import polars as pl

    catalog = ToolCatalog()
    tools = contract.output.tools
    if not isinstance(tools, str):
        digest = catalog.add(tools or [])
        return pl.repeat(digest, len(ids), dtype=pl.String, eager=True), catalog
    series = chat_tools if chat_tools is not None else gold.frame[tools]
    if series.dtype == pl.Null:
        series = series.cast(pl.String)
    elif series.dtype != pl.String or gold.is_nested(tools):  # read exactly, as written
        from evalkit.chat.extras import read_tools

        series = read_tools(gold, tools).texts
    firsts = (
        pl.DataFrame({"text": series})
        .with_row_index("row")
        .group_by("text", maintain_order=True)
        .agg(pl.col("row").first())
    )
    digests = []
    for text, row in firsts.iter_rows():
        try:
            digests.append(catalog.add(tools_list(text)))
        except ToolProblem as problem:
            raise InvalidSchema(
                f"{_where(gold.label, ids, row)}: column {tools!r}: {problem}; fix the tool"
            ) from None
    table = firsts.select("text", pl.Series("digest", digests, dtype=pl.String))
    return (
        pl.DataFrame({"text": series})
        .join(table, on="text", how="left", nulls_equal=True, maintain_order="left")
        .get_column("digest")
    ), catalog


GoldCall = tuple[str, str, str, dict[str, Any]]
"""A gold call: name, canonical call text, canonical arguments text, arguments."""


def _gold_call(name: str, arguments: dict[str, Any]) -> GoldCall:
    canonical = canonical_arguments(arguments)
    return name, call_text(name, canonical), canonical, arguments


def _calls_from_column(
    gold: Table, contract: Contract, ids: list[str], rows: list[int] | None = None
) -> list[list[GoldCall]]:
    """The gold calls of each row (of ``rows`` only, when given), read the exact way."""
    assert contract.gold_calls is not None
    if rows is not None and not rows:
        return []
    column = contract.gold_calls
    calls = []
    loads, decode_error = orjson.loads, orjson.JSONDecodeError
    values = gold.values(column)
    for row in range(len(values)) if rows is None else rows:
        value = values[row]
        if type(value) is str:  # the usual gold text: _fast_gold, inlined (it runs per row)
            try:
                parsed = loads(value)
            except decode_error:
                parsed = None
            if type(parsed) is list:
                fast: list[GoldCall] | None = []
                keys = 0
                for item in parsed:
                    found = simple_call(item)
                    if found is None:
                        fast = None
                        break
                    fast.append(found)  # type: ignore[union-attr]
                    keys += 2 + len(found[3])
                if fast is not None and value.count(":") == keys:
                    calls.append(fast)
                    continue
        try:
            calls.append([_gold_call(name, args) for name, args in gold_calls_of(value)])
        except ToolProblem as problem:
            raise InvalidTable(
                f"{_where(gold.label, ids, row)}: gold_calls column {column!r}: {problem}; "
                f"{GOLD_FIX}"
            ) from None
    return calls


def _calls_from_answers(
    gold: Table, contract: Contract, ids: list[str], label: str
) -> tuple[list[list[GoldCall]], pl.Series | None]:
    """The reference turn's calls per row, and the tools the chat reader read."""
    from evalkit.chat import read_chat
    from evalkit.contract.tool_syntax import _Invalid, load_json

    assert contract.gold_answer is not None
    column = contract.gold_answer.column
    tools = contract.output.tools if isinstance(contract.output.tools, str) else None
    chat = read_chat(gold, column, tools=tools)
    if not chat.is_conversation:
        raise InvalidTable(
            f"{gold.label}: column {column!r} holds text, not conversations; gold_answer in "
            f"{label} reads the tool calls of the last assistant turn of a messages column"
        )
    answers = chat.reference_answers().to_list()
    found = chat.reference_tool_calls().to_list()
    calls: list[list[GoldCall]] = []
    for row, (answer, items) in enumerate(zip(answers, found, strict=True)):
        if answer is None:
            raise InvalidTable(
                f"{_where(gold.label, ids, row)}: the conversation has no assistant turn, so "
                f"no reference answer (gold_answer in {label}); add it or use gold_calls"
            )
        row_calls = []
        for number, item in enumerate(items or []):
            try:
                arguments = load_json(item["arguments"])
            except _Invalid as problem:
                arguments = str(problem)
            if not isinstance(arguments, dict):
                raise InvalidTable(
                    f"{_where(gold.label, ids, row)}: the reference turn's tool call {number} "
                    f"({item['name']}): its arguments are not a JSON object ({arguments}); "
                    "gold must be valid"
                )
            row_calls.append(_gold_call(item["name"], arguments))
        calls.append(row_calls)
    return calls, chat.tools if tools is not None else None


def _field_problem(
    contract: Contract, arguments: dict[str, Any], wanted: dict[str, Matcher]
) -> tuple[str, Any] | None:
    """(field, value) of a gold value its field's matcher cannot compare (``number``, ``set``)."""
    for key, rule in wanted.items():
        value = arguments.get(key)
        if value is None:
            continue
        if not rule.gold_value_fits(value):
            return key, value
    return None


def _gold_keys(
    calls: list[list[GoldCall]],
    digests: list[str],
    catalog: ToolCatalog,
    contract: Contract,
    label: str,
    ids: list[str],
) -> tuple[list[str], list[str]]:
    """Each row's class and canonical calls text; every gold call checked on the way.

    A gold call must name a tool of its row and meet its ``parameters`` (each
    distinct (tools, function, arguments) validated once), and hold values its
    fields' matchers can compare; ``calls: one`` allows one call.
    """
    mode = contract.output.calls or "set"
    wanted: dict[str, Matcher] = {
        name[len("arguments.") :]: matcher(spec.match)
        for name, spec in contract.fields.items()
        if name != "name" and matcher(spec.match).gold_kinds is not None
    }
    validated: set[tuple[str, str]] = set()
    checks: dict[tuple[str, str], Any] = {}  # (tools, name) -> is_valid
    named: dict[tuple[str, ...], str] = {}  # names -> class
    classes: list[str] = []
    keys: list[str] = []
    schemas = catalog.schemas
    one, ordered = mode == "one", mode != "set"
    for row, (row_calls, digest) in enumerate(zip(calls, digests, strict=True)):
        if one and len(row_calls) > 1:
            raise InvalidTable(
                f"{_where(label, ids, row)}: the gold has {len(row_calls)} calls, but the "
                "contract says calls: one; use calls: set (or ordered) for parallel calls"
            )
        tools = schemas[digest]
        texts = []
        for number, (name, text, _, arguments) in enumerate(row_calls):
            if name not in tools:
                shown = ", ".join(tools) or "none"
                raise InvalidTable(
                    f"{_where(label, ids, row)}: gold call {number} names {name!r}, not one of "
                    f"the row's tools ({shown}); gold must be valid"
                )
            texts.append(text)
            if wanted and (problem := _field_problem(contract, arguments, wanted)) is not None:
                key, value = problem
                raise InvalidContract(
                    f"{_where(label, ids, row)}: fields.arguments.{key}: match: {wanted[key].name} "
                    f"compares {wanted[key].gold_value}, but gold "
                    f"call {number} ({name}) has {value!r}; fix the gold or use match: exact"
                )
            seen = (digest, text)
            if seen in validated:
                continue
            validated.add(seen)
            is_valid = checks.get((digest, name))
            if is_valid is None:
                is_valid = checks[(digest, name)] = catalog.validator(digest, name).is_valid
            if not is_valid(arguments):
                why = catalog.explain(digest, name, arguments)
                raise InvalidTable(
                    f"{_where(label, ids, row)}: gold call {number} ({name}) breaks the tool's "
                    f"parameters: {why}; gold must be valid"
                )
        if len(texts) == 1:
            keys.append("[" + texts[0] + "]")
            classes.append(row_calls[0][0])
            continue
        if not ordered:
            texts.sort()
        keys.append("[" + ",".join(texts) + "]")
        names = tuple(call[0] for call in row_calls)
        klass = named.get(names)
        if klass is None:
            klass = named[names] = function_class(names)
        classes.append(klass)
    return classes, keys


def _from_column(
    gold: Table, contract: Contract, ids: list[str]
) -> tuple[pl.Series, pl.Series, pl.Series, ToolCatalog]:
    """Classes, keys and tools digests of a ``gold_calls`` column, and the tools catalog.

    Rows of the common shape are read and checked in bulk
    (:mod:`evalkit.scoring.tool_gold_fast`), the others one by one; when a
    bulk check fails, every row is read the exact way, which raises the
    error of the first row that breaks a rule.
    """
    import polars as pl

    from evalkit.scoring.tool_gold_fast import bulk_gold, bulk_problem

    assert contract.gold_calls is not None
    column, ordered = contract.gold_calls, (contract.output.calls or "set") != "set"
    series = gold.frame[column]
    bulk = None
    if series.dtype == pl.String and not gold.is_nested(column):
        bulk = bulk_gold(series, ordered)
    if bulk is None or not len(bulk.rows):
        calls = _calls_from_column(gold, contract, ids)
        digests, catalog = _row_tools(gold, contract, ids, None)
        classes, keys = _gold_keys(calls, digests.to_list(), catalog, contract, gold.label, ids)
        return (
            pl.Series(classes, dtype=pl.String),
            pl.Series(keys, dtype=pl.String),
            digests,
            catalog,
        )
    positions = pl.Series(range(len(series)), dtype=pl.UInt32)
    rest = positions.filter(~positions.is_in(bulk.rows.implode()))
    calls = _calls_from_column(gold, contract, ids, rest.to_list())
    digests, catalog = _row_tools(gold, contract, ids, None)
    try:
        if bulk_problem(bulk, digests, catalog, contract):
            raise InvalidTable("a bulk gold row breaks a rule")
        classes, keys = _gold_keys(
            calls, digests.gather(rest).to_list(), catalog, contract, gold.label, ids
        )
    except (InvalidTable, InvalidContract):  # the exact reading names the first such row
        every = _calls_from_column(gold, contract, ids)
        classes, keys = _gold_keys(every, digests.to_list(), catalog, contract, gold.label, ids)
        return (
            pl.Series(classes, dtype=pl.String),
            pl.Series(keys, dtype=pl.String),
            digests,
            catalog,
        )
    frame = pl.concat(
        [
            pl.DataFrame({"at": bulk.rows, "class": bulk.classes, "key": bulk.keys}),
            pl.DataFrame(
                {
                    "at": rest,
                    "class": pl.Series(classes, dtype=pl.String),
                    "key": pl.Series(keys, dtype=pl.String),
                }
            ),
        ]
    ).sort("at")
    return frame["class"], frame["key"], digests, catalog


def read_tool_gold(gold: Table, contract: Contract, label: str) -> ToolGold:
    """The gold frame and tools catalog of a ``parse: tool_calls`` contract (see the module)."""
    import polars as pl

    from evalkit.scoring.examples import GOLD_PREFIX
    from evalkit.scoring.gold import checked_ids, contract_columns

    frame = gold.frame
    for key, column in contract_columns(contract):
        if column not in frame.columns:
            listing = ", ".join(frame.columns[:20]) or "(none)"
            raise UnknownColumn(
                f"{gold.label}: no column {column!r}, named by {key} in {label}; "
                f"the columns are: {listing}"
            )
    noun = "gold file" if gold.path is not None else "gold frame"
    if frame.height == 0:
        raise InvalidTable(f"{gold.label}: the {noun} has no rows")
    id_series = checked_ids(frame, gold.label, contract.id_column, noun)
    ids = id_series.to_list()
    if contract.gold_answer is not None:
        calls, chat_tools = _calls_from_answers(gold, contract, ids, label)
        digests, catalog = _row_tools(gold, contract, ids, chat_tools)
        classes, keys = _gold_keys(calls, digests.to_list(), catalog, contract, gold.label, ids)
        class_series = pl.Series(classes, dtype=pl.String)
        key_series = pl.Series(keys, dtype=pl.String)
    else:
        class_series, key_series, digests, catalog = _from_column(gold, contract, ids)
    columns = [
        id_series.alias("id"),
        frame[contract.id_column].alias(GOLD_PREFIX + contract.id_column),
        class_series.alias(GOLD_PREFIX + FUNCTION_CLASS),
        key_series.alias(CALLS_COLUMN),
        digests.alias(TOOLS_COLUMN),
    ]
    for _, column in contract.gold_references:
        if column not in (contract.gold_calls, contract.output.tools):
            columns.append(frame[column].alias(GOLD_PREFIX + column))
    unique = {series.name: series for series in columns}
    return ToolGold(pl.DataFrame(list(unique.values())), catalog)
