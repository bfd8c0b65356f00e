"""What a score's parameters name beyond its values: the tables' split, the card, the base.

One place for ``evalkit.score`` and ``evalkit score``: a DatasetDict folder
is read at ``hf_split``; ``card`` (a ``card.json``, an
:class:`~evalkit.AdapterCard` or its data) or ``adapter`` (a folder whose
card is made) record where the predictions came from, ``base_model`` and
``base_revision`` the base of a prompt-only run. The card's models load only
when one is named.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from evalkit.errors import ParameterError
from evalkit.io import is_path
from evalkit.scoring.options import ScoreParams

if TYPE_CHECKING:
    from evalkit.records._card import AdapterCard
    from evalkit.records._summary import BaseModelInfo


def score_tables(gold: Any, predictions: Any, hf_split: str | None) -> tuple[Any, Any]:
    """``gold`` and ``predictions``, a Hugging Face DatasetDict folder read at ``hf_split``.

    ``hf_split`` applies to whichever of the two is a DatasetDict folder; it is
    refused when neither is, and a DatasetDict without it is refused.
    """
    from evalkit.io import is_hf_dataset_dict, resolve_hf_split

    def dataset_dict(table: Any) -> bool:
        return is_path(table) and is_hf_dataset_dict(Path(table))

    gold_dict, pred_dict = dataset_dict(gold), dataset_dict(predictions)
    if hf_split is not None and not (gold_dict or pred_dict):
        raise ParameterError(
            "hf_split",
            f"{hf_split}: neither {{gold}} nor {{predictions}} is a Hugging Face DatasetDict "
            "folder; leave it out",
            refs=["gold", "predictions"],
        )
    if is_path(gold):
        gold = resolve_hf_split(Path(gold), hf_split if gold_dict else None)
    if is_path(predictions):
        predictions = resolve_hf_split(Path(predictions), hf_split if pred_dict else None)
    return gold, predictions


def made_card(given: ScoreParams) -> AdapterCard | None:
    """The card a ``card.json`` (``card``) or an adapter folder (``adapter``) gives, or None."""
    if isinstance(given.card, Path):
        from evalkit.provenance.card import load_card

        return load_card(given.card)
    if given.adapter is not None:
        from evalkit.provenance.card import adapter_card

        return adapter_card(given.adapter, base_revision=given.base_revision)
    return None


def score_card(given: ScoreParams) -> AdapterCard | Mapping[str, Any] | None:
    """The card ``given`` names: read from ``card.json``, made from ``adapter``, or as given."""
    made = made_card(given)
    return made if made is not None else cast(Any, given.card)  # an AdapterCard or its data


def score_base(given: ScoreParams) -> BaseModelInfo | None:
    """The base of a prompt-only run (``base_model``, ``base_revision``), or None."""
    if given.base_model is None:
        return None
    from evalkit.provenance.records import options_base
    from evalkit.records._summary import BaseModelInfo

    return BaseModelInfo(**options_base(given.base_model, given.base_revision))
