"""Gold from reference answers: a test split in training format, scored as it is.

With the contract key ``gold_answer: {column: messages, turn: last_assistant}``
the gold of each item is the content of its conversation's last assistant
turn, parsed by the contract's ``output`` rules with **strict** extraction
(gold is written by people or scripts, not sampled: a fence or a stray word
in it is a mistake to fix, not something to work around). ``class``,
``fields.*.gold`` and the slices then name keys of that answer (``label`` for
``parse: label``). A reference answer that does not parse, or breaks the
schema, is bad input naming the id: gold must be valid.

The answers become a table of gold columns the same way a JSONL gold file
would (each answer is one record, typed by polars over all of them), so the
figures equal those of the same data scored from flat columns. A name that no
answer has but the gold file has as a column (a slice on a metadata column,
say) reads that column.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalkit.chat import read_chat
from evalkit.contract.model import LABEL_KEY
from evalkit.errors import InvalidTable, UnknownColumn

if TYPE_CHECKING:
    import polars as pl

    from evalkit.contract.model import Contract
    from evalkit.io import Table


def file_columns(contract: Contract, present: list[str]) -> list[str]:
    """The columns of the gold file that reading answers may need (a Parquet projection):
    the id, the conversations, and any gold name that is also a column."""
    assert contract.gold_answer is not None
    wanted = [contract.id_column, contract.gold_answer.column, *contract.gold_columns]
    return [name for name in dict.fromkeys(wanted) if name in present]


def required_columns(contract: Contract) -> list[tuple[str, str]]:
    """(contract key, column) of the columns the gold file must have."""
    assert contract.gold_answer is not None
    return [("id", contract.id_column), ("gold_answer.column", contract.gold_answer.column)]


def _parsed_answers(
    answers: list[str | None],
    ids: list[str],
    contract: Contract,
    path: Path | str,
    label: str,
    calls_tools: list[bool] | None = None,
) -> list[dict[str, Any]]:
    """Each reference answer parsed strictly under the contract; bad gold is an error."""
    assert contract.gold_answer is not None
    column = contract.gold_answer.column
    where = f"the last assistant turn of column {column!r}"
    for identifier, answer in zip(ids, answers, strict=True):
        if answer is None:
            raise InvalidTable(
                f"{path}: id {identifier!r}: the conversation has no assistant turn, so no "
                f"reference answer (gold_answer in {label} reads {where}); add the answer "
                "or score against gold columns"
            )
    if contract.output.parse == "label":
        return _parsed_labels(answers, ids, contract, path, label, where)
    from evalkit.contract.parse import OutputParser, ParserSpec

    schema = contract.output.json_schema
    assert schema is not None, "load_contract inlines the schema"
    parser = OutputParser(ParserSpec("strict", schema, tuple(contract.fields)))
    parsed: list[dict[str, Any]] = []
    for identifier, answer in zip(ids, answers, strict=True):
        error, detail, value = parser.parse(answer)
        if error is None and not isinstance(value, dict):
            kind = type(value).__name__
            error, detail = "not_an_object", f"it is JSON but not an object ({kind})"
        if error is not None:
            hint = ""
            if calls_tools is not None and calls_tools[len(parsed)]:
                hint = " (the reference turn calls tools: use output.parse: tool_calls)"
            raise InvalidTable(
                f"{path}: id {identifier!r}: the reference answer ({where}) does not parse "
                f"under {label} with strict extraction: {error}: {detail}; gold must be "
                f"valid{hint}"
            )
        parsed.append(value)
    return parsed


def _parsed_labels(
    answers: list[str | None],
    ids: list[str],
    contract: Contract,
    path: Path | str,
    label: str,
    where: str,
) -> list[dict[str, Any]]:
    import polars as pl

    from evalkit.contract.labels import parse_labels

    strict = contract.model_copy(
        update={"output": contract.output.model_copy(update={"extract": "strict"})}
    )
    frame = parse_labels(pl.Series("output", answers, dtype=pl.String), strict)
    bad = frame["error"].is_not_null()
    if bad.any():
        row = int(bad.arg_true()[0])
        raise InvalidTable(
            f"{path}: id {ids[row]!r}: the reference answer ({where}) is not one of the "
            f"labels of {label} (strict extraction: {frame['error_detail'][row]}); "
            "gold must be valid"
        )
    return [{LABEL_KEY: value} for value in frame["v0"].to_list()]


def _answer_table(parsed: list[dict[str, Any]], keys: list[str], path: Path | str) -> pl.DataFrame:
    """The answers' ``keys`` as columns, typed as polars types a JSONL file of them."""
    import orjson
    import polars as pl

    lines = b"\n".join(orjson.dumps({key: answer.get(key) for key in keys}) for answer in parsed)
    try:
        return pl.read_ndjson(io.BytesIO(lines), infer_schema_length=None)
    except pl.exceptions.PolarsError:
        for key in keys:  # find the key whose values have no common type
            one = b"\n".join(orjson.dumps({key: answer.get(key)}) for answer in parsed)
            try:
                pl.read_ndjson(io.BytesIO(one), infer_schema_length=None)
            except pl.exceptions.PolarsError:
                raise InvalidTable(
                    f"{path}: key {key!r} of the reference answers holds values of different "
                    "JSON types; gold of one field needs one type"
                ) from None
        raise


def read_answer_gold(gold: Table, ids: pl.Series, contract: Contract, label: str) -> pl.DataFrame:
    """``id`` and ``gold:<name>`` columns, the names read from the parsed reference answers.

    ``gold`` is the gold table, holding the columns of :func:`required_columns`;
    ``ids`` its checked ids as strings; ``label`` names the contract in errors.
    """
    import polars as pl

    from evalkit.scoring.examples import GOLD_PREFIX

    assert contract.gold_answer is not None
    column = contract.gold_answer.column
    frame, path = gold.frame, gold.label
    chat = read_chat(gold, column)
    if not chat.is_conversation:
        texts = chat.texts[0]
        held = "is null in every row" if texts.null_count() == len(texts) else "holds text"
        raise InvalidTable(
            f"{path}: column {column!r} {held}, not conversations; gold_answer in {label} "
            "reads the last assistant turn of a messages (or ShareGPT) column"
        )
    references = chat.reference_answers().to_list()
    calls_tools = chat.reference_tool_calls().list.len().fill_null(0).gt(0).to_list()
    parsed = _parsed_answers(references, ids.to_list(), contract, path, label, calls_tools)
    named = contract.gold_references
    known = {key for answer in parsed for key in answer}
    properties = (contract.output.json_schema or {}).get("properties") or {}
    from_answers = [name for _, name in named if name in known or name in properties]
    for key, name in named:
        if name in from_answers:
            continue
        if name == column or name not in frame.columns:
            shown = ", ".join(sorted(known)[:20]) or "(none)"
            raise UnknownColumn(
                f"{path}: no reference answer has key {name!r}, named by {key} in {label}, "
                f"and the gold file has no such column; the answers' keys are: {shown}"
            )
    answers = _answer_table(parsed, list(dict.fromkeys(from_answers)), path)
    gold_names = [name for name in contract.gold_columns if name != contract.id_column]
    columns = [ids.alias("id"), frame[contract.id_column].alias(GOLD_PREFIX + contract.id_column)]
    for name in gold_names:
        source = answers[name] if name in answers.columns else frame[name]
        columns.append(source.alias(GOLD_PREFIX + name))
    return pl.DataFrame(columns)
