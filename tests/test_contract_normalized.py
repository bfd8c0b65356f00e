"""The ``normalized`` matcher normalises only the strings that differ, with the same verdicts."""

from __future__ import annotations

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from evalkit.contract.match import field_match
from evalkit.contract.match_values import normalized_equal_column
from evalkit.contract.model import FieldSpec
from evalkit.contract.parse import ABSENT, ARRAY, NULL, NUMBER, STRING

SPEC = FieldSpec(gold="gold", match="normalized")
STRINGS = [
    "ord-12",
    "ORD-12",
    "ＯＲＤ-１２",
    " ord-12 ",
    "ord -12",
    "ß",
    "SS",
    "ss",
    "İ",
    "i̇",
    "",
    " ",
]


def _both(frame: pl.DataFrame) -> tuple[list[bool], list[bool]]:
    """Matches computed by the full expression and with the precomputed column."""
    full = field_match(SPEC, 0, "gold", pl.String, "fields.x")
    column = normalized_equal_column(frame, "gold", 0)
    fast = field_match(SPEC, 0, "gold", pl.String, "fields.x", {"normalized_equal": column})
    return frame.select(full).to_series().to_list(), frame.select(fast).to_series().to_list()


def _frame(rows: list[tuple[str | None, int, str | None, str | None]]) -> pl.DataFrame:
    return pl.DataFrame(
        rows,
        schema={"error": pl.String, "k0": pl.UInt8, "v0": pl.String, "gold": pl.String},
        orient="row",
    )


def test_precomputed_normalisation_gives_the_same_matches() -> None:
    rows = [(None, STRING, left, right) for left in STRINGS for right in STRINGS]
    rows += [(None, kind, text, gold) for kind, text, gold in [
        (NULL, "null", None), (ABSENT, None, None), (NULL, "null", "x"), (ABSENT, None, "x"),
        (NUMBER, "12", "12"), (ARRAY, '["a"]', '["a"]'), (STRING, "x", None),
    ]]  # fmt: skip
    rows += [("no_json", ABSENT, None, "x"), ("invalid_json", STRING, "x", "x")]
    full, fast = _both(_frame(rows))
    assert fast == full
    assert any(full) and not all(full)  # the cases are not all one way
    assert _both(_frame([]))[0] == []


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from([None, "no_json"]),
            st.sampled_from([STRING, NULL, ABSENT, NUMBER]),
            st.sampled_from([*STRINGS, None]) | st.text(max_size=6),
            st.sampled_from([*STRINGS, None]) | st.text(max_size=6),
        ),
        max_size=20,
    )
)
def test_precomputed_normalisation_on_fuzzed_rows(rows) -> None:
    full, fast = _both(_frame(rows))
    assert fast == full
