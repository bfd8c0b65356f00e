"""The options of ``evalkit.score`` and ``evalkit.rescore``: one object each, defined once.

:class:`LookParams` holds what both take (the parsing processes, and the
ledger a look is recorded in, with its purpose); :class:`ScoreParams` and
:class:`RescoreParams` add their own. The click commands are built from the
same classes (:func:`evalkit.cli._params.params_options`).

Light on purpose: ``evalkit --help`` imports it, so only the standard library
and evalkit's own light modules are imported here.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from evalkit import params
from evalkit.errors import ParameterError
from evalkit.options import Params, option
from evalkit.vocabulary import hf_split_field, id_field

PredFormat = Literal["auto", "jsonl", "json", "csv", "parquet", "openai-batch", "lm-eval", "hf"]
OnDuplicate = Literal["error", "first", "last"]


@dataclass(frozen=True, kw_only=True)
class LookParams(Params):
    """What ``score`` and ``rescore`` share: parsing processes, and where the look is recorded.

    ``ledger`` None is the default ledger (``score``: ``evalkit-ledger.jsonl``
    beside a gold file; ``rescore``: the one the result recorded);
    ``no_ledger`` records nothing.
    """

    workers: int | None = option(
        None,
        metavar="N",
        check=functools.partial(params.positive, unit="processes"),
        help="Parsing processes (default: all cores for large inputs, else 1).",
    )
    ledger: Path | None = option(
        None,
        metavar="FILE",
        path_file=True,
        help="Test-set ledger to record the look in (gate counts one elsewhere only when the "
        "gold file has none beside it).",
        default_help="the gold file's, evalkit-ledger.jsonl beside it (rescore: the one each "
        "result recorded)",
    )
    no_ledger: bool = option(
        False, help="Record no look (e.g. when scoring a validation split elsewhere)."
    )
    purpose: str | None = option(
        None, metavar="TEXT", help="Why this look, kept in its ledger line."
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.no_ledger and self.ledger is not None:
            raise ParameterError(
                "no_ledger", "and {ledger} are both given: give one, not both", refs=["ledger"]
            )


@dataclass(frozen=True, kw_only=True)
class ScoreParams(LookParams):
    """The options of ``evalkit.score`` and ``evalkit score``.

    ``card`` is a ``card.json`` (or, from Python, an
    :class:`~evalkit.AdapterCard` or its JSON data); ``adapter`` an adapter
    folder whose card is made; ``base_model``/``base_revision`` the base of a
    prompt-only run. Which of them go together is checked when the object is
    made: it needs no file.
    """

    name: str | None = option(
        None, help="Name of this result (default: the predictions file's stem)."
    )
    pred_format: PredFormat = option(
        "auto", help="Shape of the predictions; auto recognises each from the file."
    )
    id_column: str | None = id_field(
        "Id column of the predictions, a dotted path for nested records (doc.qid). "
        "Default: the contract's id (doc.<id> for lm-eval; custom_id for openai-batch).",
        aliases=("--id-col",),
        renamed=("id_col",),
    )
    output_column: str | None = option(
        None,
        flag="--output-col",
        metavar="COL",
        renamed=("output_col",),
        help="Column with the raw model text (default: output).",
    )
    on_duplicate: OnDuplicate = option(
        "error", help="What to do when an id has several predictions."
    )
    card: Path | Mapping[str, Any] | None = option(
        None,
        path_file=True,
        help="card.json of the adapter that produced the predictions (from evalkit card).",
    )
    adapter: Path | None = option(
        None,
        metavar="DIRECTORY",
        help="The adapter folder itself: its card is made and recorded (instead of --card).",
    )
    base_model: str | None = option(
        None,
        metavar="ID",
        help="Base model of a prompt-only run (no adapter), recorded so gate can refuse "
        "another base.",
    )
    base_revision: str | None = option(
        None,
        metavar="SHA",
        help="The base's commit, with --base-model, or for an --adapter whose config has none.",
    )
    hf_split: str | None = hf_split_field()

    def __post_init__(self) -> None:
        super().__post_init__()
        card, adapter = self.card is not None, self.adapter is not None
        if self.base_model is not None and not self.base_model.strip():  # what gate compares
            raise ParameterError("base_model", "is empty; pass the base's hub id or local path")
        if card and adapter:
            raise ParameterError(
                "card",
                "and {adapter} are both given: give one, not both (the card describes the adapter)",
                refs=["adapter"],
            )
        if self.base_model is not None and (card or adapter):
            raise ParameterError(
                "base_model", "is for a prompt-only run; an adapter's base comes from its card"
            )
        if self.base_revision is not None and card:
            raise ParameterError(
                "base_revision",
                "cannot change a card; pass it to evalkit card, or use {adapter}",
                refs=["adapter"],
            )
        if self.base_revision is not None and self.base_model is None and not adapter:
            raise ParameterError(
                "base_revision", "needs {base_model} (or {adapter})", refs=["base_model", "adapter"]
            )


@dataclass(frozen=True, kw_only=True)
class RescoreParams(LookParams):
    """The options of ``evalkit.rescore`` and ``evalkit rescore``.

    A re-score reads its predictions as they were scored (format, id and
    output columns, duplicate rule, card or base, name: all recorded), so
    only what :class:`LookParams` holds is chosen again.
    """
