"""``evalkit card``'s one call: the card of a folder, an adapter's or a checkpoint's.

A Trainer ``checkpoint-N`` folder gets a :class:`~evalkit.records.CheckpointCard`
(:func:`~evalkit.provenance.checkpoint.checkpoint_card`), any other folder an
:class:`~evalkit.records.AdapterCard` (:func:`~evalkit.provenance.card.adapter_card`);
with ``json`` the card is written as the command writes it.
"""

from __future__ import annotations

import os
from typing import Any

from evalkit.options import takes
from evalkit.provenance.card_options import CardParams
from evalkit.records._card import AdapterCard
from evalkit.records._checkpoint import CheckpointCard


@takes(CardParams)
def card(
    folder: str | os.PathLike[str],
    params: CardParams | None = None,
    /,
    *,
    json: str | os.PathLike[str] | None = None,
    force: bool = False,
    **values: Any,
) -> AdapterCard | CheckpointCard:
    """The card of ``folder``: a checkpoint card for a Trainer checkpoint, else an adapter card.

    The options are :func:`~evalkit.provenance.card.adapter_card`'s (for a
    checkpoint, they apply to the adapter it holds). With ``json`` the card
    is written there too, as ``evalkit card --json`` writes it (which is
    this call): atomically, never over the folder, ``base`` or ``training``,
    and over an existing file only with ``force`` (checked before anything
    is read).
    """
    from pathlib import Path

    from evalkit.io import ReportFile
    from evalkit.provenance.card import adapter_card, card_json
    from evalkit.provenance.checkpoint import checkpoint_card, checkpoint_json, is_checkpoint

    given = CardParams.build(params, values)
    target = ReportFile.checked(json, force=force, inputs=(folder, given.base, given.training))
    found: AdapterCard | CheckpointCard
    if is_checkpoint(Path(folder)):
        found = checkpoint_card(folder, given)
        target.write(checkpoint_json(found))
    else:
        found = adapter_card(folder, given)
        target.write(card_json(found))
    return found
