"""Evaluation contracts: the model, loading, output parsing, matching and fingerprint.

Public entry points (also re-exported from :mod:`evalkit`):
:func:`load_contract`, :class:`Contract`, :func:`contract_fingerprint`,
:func:`normalized_contract`. They are imported lazily, so that a parsing
worker (which needs only :mod:`evalkit.contract.parse`) does not load pydantic.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Contract": "evalkit.contract.model",
    "contract_fingerprint": "evalkit.contract.fingerprint",
    "load_contract": "evalkit.contract.load",
    "normalized_contract": "evalkit.contract.fingerprint",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'evalkit.contract' has no attribute {name!r}")
