"""The options of ``evalkit.adapter_card`` and ``evalkit card``, defined once.

Light on purpose (stdlib and :mod:`evalkit.options`): ``evalkit card --help``
builds its options from :class:`CardParams` without reading a weights file.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from evalkit.options import Params, option


@dataclass(frozen=True, kw_only=True)
class CardParams(Params):
    """What the card is checked against beyond the adapter folder itself."""

    base: Path | None = option(
        None,
        help="Local base model folder: check shapes, target coverage and vocabulary against it.",
    )
    base_revision: str | None = option(
        None,
        metavar="SHA",
        help="The base's commit (40 hex), when adapter_config.json has no revision.",
    )
    training: Path | None = option(
        None,
        help="JSON or YAML of training settings (learning rate, steps, batch size, seed, data "
        "sha256, …); training_args.json and trainer_state.json in the folder are read anyway.",
    )
