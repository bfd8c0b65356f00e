"""Suspect gold labels: items whose label every result contradicts with the same answer.

When the baseline and every candidate — models that learnt the task in
different ways — give the same format-valid class for an item and it is not
the gold class, the label is worth reading again: labelling errors are one
of the error categories the methodology asks to study when validation
stalls. The check reads only the per-example tables (``predicted_class``,
``format_valid``), so it costs a join; the first words of each input come
from the gold file, and the agreed answer's probability from ``evalkit
generate``'s recorded top logits when a result's predictions are a generate
run. It is a hint, never a verdict: models that share a shortcut share its
mistakes too (``expected_by_chance`` says how many agreements chance alone
would give).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from evalkit.comparison.answer_probability import class_field
from evalkit.comparison.results import ScoredResult
from evalkit.errors import EvalkitError, ParameterError, UnknownColumn
from evalkit.records._suspects import LabelChange, SuspectLabel, SuspectLabelCheck

if TYPE_CHECKING:
    import polars as pl

    from evalkit.io import Table

FIRST_WORDS = 12
NO_PROBABILITY = "no answer probabilities: no result's predictions were written by evalkit generate"


def _skipped(
    names: Sequence[str], field: str | None, min_agree: int, note: str
) -> SuspectLabelCheck:
    return SuspectLabelCheck(
        field=field,
        results=list(names),
        min_agree=min_agree,
        checked=0,
        suspects=0,
        by_class={},
        changes=[],
        expected_by_chance=None,
        text_column=None,
        probability_note=NO_PROBABILITY,
        note=note,
    )


def _answers(results: Sequence[ScoredResult]) -> pl.DataFrame:
    """``id, gold, a0 … a{k-1}``: each result's format-valid class per item present in all."""
    import polars as pl

    frame = results[0].examples.select("id", pl.col("class").alias("gold"))
    for index, result in enumerate(results):
        answer = pl.when(pl.col("format_valid")).then(pl.col("predicted_class").cast(pl.String))
        frame = frame.join(
            result.examples.select("id", answer.alias(f"a{index}")), on="id", how="inner"
        )
    return frame.filter(pl.col("gold").is_not_null()).sort("id")


def _expected_by_chance(frame: pl.DataFrame, count: int) -> float | None:
    """n · Π wrong_k / (C − 1)^(K − 1): all K wrong alike by chance, wrong answers uniform."""
    import polars as pl

    columns = [f"a{index}" for index in range(count)]
    labels = set(frame["gold"].unique().to_list())
    for column in columns:
        labels |= set(frame[column].drop_nulls().unique().to_list())
    if frame.height == 0 or len(labels) < 2:
        return None
    product = 1.0
    for column in columns:
        wrong = frame.select(
            (pl.col(column).is_not_null() & (pl.col(column) != pl.col("gold"))).sum()
        ).item()
        product *= int(wrong) / frame.height
    return frame.height * product / (len(labels) - 1) ** (count - 1)


def _first_words(text: str | None) -> str | None:
    if text is None:
        return None
    words = text.split()
    shown = " ".join(words[:FIRST_WORDS])
    return shown + (" …" if len(words) > FIRST_WORDS else "")


def _texts(
    result: ScoredResult, ids: list[str], column: str | None
) -> tuple[dict[str, str | None], str | None, str | None]:
    """(first words by id, the column read, a note) from the gold file a result recorded."""
    from evalkit.comparison.recorded import locate
    from evalkit.io import read_table

    gold = result.summary.gold
    path = locate(gold.path, result.path)
    if path is None or not path.is_file():
        return {}, None, f"the gold file {gold.path} is not found from here: no input shown"
    table = read_table(path, name="gold")
    if table.sha256 != gold.sha256:
        return {}, None, f"{gold.path} changed since it was scored: no input shown"
    normalized = result.summary.contract.normalized
    id_column = str(normalized.get("id"))
    frame = table.frame
    if column is None:
        answer = normalized.get("gold_answer") or {}
        column = "text" if "text" in frame.columns else answer.get("column")
    if column is None:
        return {}, None, None
    if column not in frame.columns:
        listing = ", ".join(frame.columns[:20])
        raise UnknownColumn(
            f"{path}: no column {column!r} ({{text}}); the columns are: {listing}",
            refs=["text"],
        )
    texts = _column_text(table, column)
    keyed = dict(zip(frame[id_column].cast(str).to_list(), texts, strict=True))
    return {i: _first_words(keyed.get(i)) for i in ids}, column, None


def _column_text(table: Table, column: str) -> list[str | None]:
    """The text of a column: itself, or a conversation's user turns (read by evalkit.chat)."""
    import polars as pl

    if table.frame[column].dtype == pl.String and not table.is_nested(column):
        return table.frame[column].to_list()
    from evalkit.chat import read_chat

    chat = read_chat(table, column)
    if chat.is_conversation:
        return chat.compared_text(["user"]).to_list()
    return chat.full_text().to_list()


def find_suspects(
    results: Sequence[ScoredResult],
    names: Sequence[str],
    *,
    min_agree: int | None = None,
    text_column: str | None = None,
) -> tuple[list[SuspectLabel], SuspectLabelCheck]:
    """Items whose gold class every result (at least ``min_agree``) contradicts alike.

    ``results`` are the baseline and the candidates, ``names`` their names in
    the report. An item is a suspect when at least ``min_agree`` results
    (default: all) give a format-valid answer for the class field, all those
    answers are the same, and it is not the gold class; invalid or missing
    outputs abstain. Suspects are ranked by how many results agree, then by id.
    """
    import polars as pl

    count = len(results)
    wanted = count if min_agree is None else min_agree
    if not 2 <= wanted <= count:
        raise ParameterError(
            "suspect_min_agree",
            f"{wanted}: give a number from 2 to the {count} results compared",
        )
    normalized = results[0].summary.contract.normalized
    column, field = class_field(normalized)
    if column is None or field is None:
        why = "the contract names no class column, so there is no class answer to compare"
        return [], _skipped(names, None, wanted, why)
    lacking = [
        n
        for n, r in zip(names, results, strict=True)
        if "predicted_class" not in r.examples.columns
    ]
    if lacking:
        why = (
            f"{lacking[0]} does not record predicted_class (an older evalkit wrote it); re-score it"
        )
        return [], _skipped(names, field, wanted, why)
    frame = _answers(results)
    answers = pl.concat_list([f"a{index}" for index in range(count)]).list.drop_nulls()
    found = (
        frame.with_columns(answers.alias("answers"))
        .with_columns(
            pl.col("answers").list.len().alias("n_agree"),
            pl.col("answers").list.first().alias("agreed"),
        )
        .filter(
            (pl.col("n_agree") >= wanted)
            & (pl.col("answers").list.n_unique() == 1)
            & (pl.col("agreed") != pl.col("gold"))
        )
        .sort(["n_agree", "id"], descending=[True, False])
    )
    ids = found["id"].to_list()
    note: str | None = None
    texts: dict[str, str | None] = {}
    read_column: str | None = None
    if ids or text_column is not None:  # a --text given is checked even with no suspect
        try:
            texts, read_column, note = _texts(results[0], ids, text_column)
        except UnknownColumn:
            raise  # --text named a column the gold file lacks
        except EvalkitError as error:
            note = f"the inputs could not be read: {error.message}"
    suspects = [
        SuspectLabel(id=i, gold=gold, agreed=agreed, n_agree=n, text=texts.get(i))
        for i, gold, agreed, n in found.select("id", "gold", "agreed", "n_agree").iter_rows()
    ]
    probability_note = NO_PROBABILITY
    if suspects:
        from evalkit.comparison.answer_probability import with_probabilities

        suspects, probability_note = with_probabilities(suspects, results, names, normalized)
    pairs = found.group_by("gold", "agreed").agg(pl.len().alias("count"))
    pairs = pairs.sort(["count", "gold", "agreed"], descending=[True, False, False])
    by_class = found.group_by("gold").agg(pl.len().alias("n")).sort("gold")
    check = SuspectLabelCheck(
        field=field,
        results=list(names),
        min_agree=wanted,
        checked=frame.height,
        suspects=len(suspects),
        by_class=dict(zip(by_class["gold"].to_list(), by_class["n"].to_list(), strict=True)),
        changes=[LabelChange(gold=g, agreed=a, count=c) for g, a, c in pairs.iter_rows()],
        expected_by_chance=_expected_by_chance(frame, count) if wanted == count else None,
        text_column=read_column,
        probability_note=probability_note,
        note=note,
    )
    return suspects, check
