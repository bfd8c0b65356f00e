"""Evaluation contracts: the model, loading, output parsing, matching and fingerprint.

Public entry points (also re-exported from :mod:`evalkit`):
:func:`load_contract`, :class:`Contract`, :func:`contract_fingerprint`,
:func:`normalized_contract`.
"""

from evalkit.contract.fingerprint import contract_fingerprint, normalized_contract
from evalkit.contract.load import load_contract
from evalkit.contract.model import Contract

__all__ = ["Contract", "contract_fingerprint", "load_contract", "normalized_contract"]
