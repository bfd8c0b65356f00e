"""The options of a leakage audit, as given: ``evalkit.audit``'s and ``evalkit audit``'s.

Defined once here, as the fields of :class:`AuditParams`: the library takes
the object (or keywords that build it) and the command line is built from it.
Stdlib only: ``evalkit audit --help`` imports this module, not polars.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from evalkit.errors import ParameterError
from evalkit.options import Params, option
from evalkit.vocabulary import (
    check_engine,
    engine_field,
    id_field,
    near_dup_field,
    ray_address_field,
    seed_field,
    system_field,
    tools_field,
)

DEFAULT_NEAR_DUP = 0.8
DEFAULT_OPENING_WORDS = 5
MAX_OPENING_WORDS = 100  # an opening is a text's first words; more only costs memory
Engine = Literal["local", "ray"]


def _columns(value: tuple[str, ...], parameter: str) -> tuple[str, ...]:
    if not value or len(value) > 3:
        raise ParameterError(
            parameter,
            "must name one column, two (prompt and completion) or three (Alpaca's "
            f"instruction, input and output); got {len(value)}",
        )
    return value


def _opening_words(value: object, parameter: str) -> int:
    """1 to ``MAX_OPENING_WORDS`` (a pattern of 100,000 words outgrew the regex engine)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_OPENING_WORDS:
        raise ParameterError(parameter, f"must be 1 to {MAX_OPENING_WORDS} words, got {value!r}")
    return int(value)


@dataclass(frozen=True, kw_only=True)
class AuditParams(Params):
    """The options of a leakage audit (:func:`evalkit.audit`, ``evalkit audit``).

    A single column name is taken for ``text`` and ``group`` as well as
    a list; ``roles`` is comma-separated text or a list of roles; ``near_dup``
    None (or ``exact_only``) skips the near-duplicate search.
    """

    id_column: str = id_field("Id column of every split.", required=True)
    text: tuple[str, ...] = option(
        metavar="COL",
        check=_columns,
        renamed=("text_column",),
        help="Text or conversation column (messages, ShareGPT; nested or as JSON text) to "
        "compare; twice for prompt-completion (--text prompt --text completion), three times "
        "for Alpaca (--text instruction --text input --text output).",
    )
    roles: str | tuple[str, ...] | None = option(
        None,
        metavar="ROLES",
        help="Conversation turns compared (their text and their tool calls' names and "
        "arguments), comma-separated [default: user,assistant,tool - every role but system]. "
        "Exit 2 when --text holds plain text.",
    )
    system: str | None = system_field()
    tools: str | None = tools_field("checked")
    group: tuple[str, ...] = option(
        (),
        metavar="COL",
        help="Group column (conversation, document, source); repeat for a composite key.",
    )
    stratify: str | None = option(None, metavar="COL", help="Class column: coverage per split.")
    near_dup: float | None = near_dup_field(
        "Jaccard threshold (word 3-shingles) for near duplicates.", default=DEFAULT_NEAR_DUP
    )
    exact_only: bool = option(False, help="Skip the near-duplicate search.")
    seed: int = seed_field("Seed of the MinHash.")
    within: bool = option(
        False, help="List the exact and near-duplicate pairs inside each split too (in --json)."
    )
    opening_words: int = option(
        DEFAULT_OPENING_WORDS,
        metavar="N",
        check=_opening_words,
        help="Words of an opening, for the most repeated openings of each split.",
    )
    engine: Engine = engine_field()
    ray_address: str | None = ray_address_field()

    def __post_init__(self) -> None:
        if isinstance(self.roles, list):
            object.__setattr__(self, "roles", tuple(self.roles))
        super().__post_init__()
        check_engine(self.engine, self.ray_address)

    @property
    def threshold(self) -> float | None:
        """The near-duplicate threshold the audit uses: None when the search is skipped."""
        return None if self.exact_only else self.near_dup
