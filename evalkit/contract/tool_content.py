"""Content of tool calls: are they the right calls, by the contract's field matchers?

Two calls match when their function names match (``fields.name``'s matcher,
else exact) and their arguments do: each ``arguments.<key>`` field by its
matcher (the rules of :mod:`evalkit.contract.match`: a null or absent gold
value expects null or an absent key; ``exact`` equal JSON values, ``1 ==
1.0``; ``normalized`` strings equal after NFKC, lower-casing and whitespace
collapsing; ``number`` within ``tolerance``; ``set`` lists as sets, F1 at
least ``min_f1``: each registered matcher's ``value_match``), every other
argument exactly (present on both sides with equal canonical JSON, or absent
on both). With ``correct`` a list of fields,
only those decide.

The lists of calls match under ``calls``: ``ordered``/``one`` position by
position; ``set`` as multisets, i.e. when a perfect matching pairs every
predicted call with a gold call it matches (parallel calls in any order).
A field's own ``match.<field>`` is decided the same way with that field
alone. Most examples never come here: equal canonical texts
(:func:`~evalkit.contract.tool_rules.calls_key`) match under every matcher
and are decided by comparing two strings; this runs on the rest, once per
distinct (predicted, gold) pair.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from evalkit.contract.match_values import json_bytes as _text
from evalkit.contract.match_values import normalize_text
from evalkit.contract.matchers import matcher

if TYPE_CHECKING:
    from evalkit.contract.model import Contract, FieldSpec

_ABSENT = object()
REST = "\x00rest"
"""The pseudo-field of everything no field names (the name when unlisted, other arguments)."""


@dataclass(frozen=True)
class CallRules:
    """The matchers of one contract, ready to compare calls (see the module docstring)."""

    fields: dict[str, FieldSpec]
    correct: tuple[str, ...]
    all_correct: bool
    ordered: bool

    @classmethod
    def of(cls, contract: Contract) -> CallRules:
        """The rules of a ``parse: tool_calls`` contract."""
        return cls(
            dict(contract.fields),
            tuple(contract.correct_fields),
            contract.correct == "all",
            contract.output.calls != "set",
        )

    def scored_fields(self) -> list[str]:
        """Fields whose matcher scores each value (an ``f1.<field>`` column)."""
        return [name for name, spec in self.fields.items() if matcher(spec.match).reports_f1]

    def normalized_fields(self) -> list[str]:
        """Fields whose matcher normalises strings (their strings are normalised in bulk)."""
        return [name for name, spec in self.fields.items() if matcher(spec.match).normalizes]

    def value_match(
        self, spec: FieldSpec, predicted: Any, gold: Any, normal: dict[str, str]
    ) -> bool:
        """One field value against its gold value (``_ABSENT`` for a missing key)."""
        if gold is _ABSENT or gold is None:
            return predicted is _ABSENT or predicted is None
        if predicted is _ABSENT:
            return False
        return matcher(spec.match).value_match(spec, predicted, gold, normal)

    def pair(
        self, predicted: dict[str, Any], gold: dict[str, Any], normal: dict[str, str]
    ) -> dict[str, bool]:
        """Per field (and :data:`REST`): does it match between one predicted and one gold call?"""
        result: dict[str, bool] = {}
        p_args, g_args = predicted["arguments"], gold["arguments"]
        listed: set[str] = set()
        for name, spec in self.fields.items():
            if name == "name":
                result[name] = self.value_match(spec, predicted["name"], gold["name"], normal)
            else:
                key = name[10:]
                listed.add(key)
                result[name] = self.value_match(
                    spec, p_args.get(key, _ABSENT), g_args.get(key, _ABSENT), normal
                )
        rest = "name" in self.fields or predicted["name"] == gold["name"]
        for key in set(p_args) | set(g_args):
            if not rest:
                break
            if key not in listed:
                rest = key in p_args and key in g_args and _text(p_args[key]) == _text(g_args[key])
        result[REST] = rest
        return result

    def correct_pair(self, fields: dict[str, bool]) -> bool:
        """Whether a pair of calls counts as the same call for content correctness."""
        return all(fields[name] for name in self.correct) and (fields[REST] or not self.all_correct)


def perfect_matching(size: int, edge: Callable[[int, int], bool]) -> bool:
    """Whether every left item pairs with its own right item along ``edge`` (Kuhn's algorithm)."""
    owner: list[int | None] = [None] * size

    def place(left: int, seen: list[bool]) -> bool:
        for right in range(size):
            if not seen[right] and edge(left, right):
                seen[right] = True
                holder = owner[right]
                if holder is None or place(holder, seen):
                    owner[right] = left
                    return True
        return False

    return all(place(left, [False] * size) for left in range(size))


class CallsVerdict(NamedTuple):
    """Content of one list of calls against its gold list (one per distinct pair)."""

    correct: bool
    fields: dict[str, bool]
    """Per contract field: did it match across the calls (under ``calls``'s pairing)?"""
    f1: dict[str, float | None]
    """Per scored (``set``) field: its F1 averaged over the calls in order (null: no pairs)."""


def compare_calls(
    rules: CallRules,
    predicted: Sequence[dict[str, Any]],
    gold: Sequence[dict[str, Any]],
    normal: dict[str, str],
) -> CallsVerdict:
    """The content verdict of predicted calls against gold calls (both non-empty)."""
    names = list(rules.fields)
    scored = rules.scored_fields()
    if len(predicted) != len(gold):
        return CallsVerdict(False, dict.fromkeys(names, False), dict.fromkeys(scored))
    grid = [[rules.pair(p, g, normal) for g in gold] for p in predicted]
    f1: dict[str, float | None] = {}
    for name in scored:
        key = name[10:]
        score = matcher(rules.fields[name].match).value_score
        scores = [
            score(p["arguments"].get(key), g["arguments"].get(key))
            for p, g in zip(predicted, gold, strict=True)
        ]
        f1[name] = sum(s or 0.0 for s in scores) / len(scores)
    size = len(gold)
    if rules.ordered or size == 1:  # one call each: the only pairing
        diagonal = [grid[i][i] for i in range(size)]
        fields = {name: all(cell[name] for cell in diagonal) for name in names}
        correct = all(rules.correct_pair(cell) for cell in diagonal)
        return CallsVerdict(correct, fields, f1)
    fields = {name: perfect_matching(size, _edge(grid, name)) for name in names}
    correct = perfect_matching(size, lambda i, j: rules.correct_pair(grid[i][j]))
    return CallsVerdict(correct, fields, f1)


def _edge(grid: list[list[dict[str, bool]]], name: str) -> Callable[[int, int], bool]:
    return lambda i, j: grid[i][j][name]


def normalized_strings(
    rules: CallRules, calls: Sequence[Sequence[dict[str, Any]]]
) -> dict[str, str]:
    """Every string a ``normalized`` field compares, normalised once in bulk.

    The normalisation is the polars expression the ``normalized`` matcher
    applies to columns (:func:`evalkit.contract.match_values.normalize_text`), so
    both paths share one definition (Unicode lower-casing included).
    """
    import polars as pl

    wanted = rules.normalized_fields()
    if not wanted:
        return {}
    found: set[str] = set()
    for row in calls:
        for call in row:
            for name in wanted:
                value = call["name"] if name == "name" else call["arguments"].get(name[10:])
                if type(value) is str:
                    found.add(value)
    texts = pl.Series("text", sorted(found), dtype=pl.String)
    normal = texts.to_frame().select(normalize_text(pl.col("text"))).to_series()
    return dict(zip(texts.to_list(), normal.to_list(), strict=True))
