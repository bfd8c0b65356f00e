"""Evaluation contracts: the model, loading, output parsing, matching and fingerprint.

Public entry points (also re-exported from :mod:`evalkit`):
:func:`load_contract`, :class:`Contract`, :func:`contract_fingerprint`,
:func:`normalized_contract`; the matcher registry (:class:`Matcher`,
:func:`register_matcher`, :data:`MATCHERS`, :class:`FieldColumns`) is the
extension point for a new ``match:`` rule. They are imported lazily, so that a parsing
worker (which needs only :mod:`evalkit.contract.parse`) does not load pydantic.
"""

from __future__ import annotations

from evalkit._lazy import lazy_exports

_EXPORTS = {
    "Contract": "evalkit.contract.model",
    "FieldColumns": "evalkit.contract.matchers",
    "MATCHERS": "evalkit.contract.matchers",
    "Matcher": "evalkit.contract.matchers",
    "register_matcher": "evalkit.contract.matchers",
    "contract_fingerprint": "evalkit.contract.fingerprint",
    "load_contract": "evalkit.contract.load",
    "normalized_contract": "evalkit.contract.fingerprint",
}

# Not cached: a name may also be a submodule's (rescore), rebound on import.
__getattr__, __dir__, __all__ = lazy_exports(__name__, _EXPORTS, cache=False)
