"""Provenance: what an adapter is (its card) and how often a test set was looked at (its ledger).

``card`` reads a PEFT adapter folder without torch (``adapter_config.json``
and the safetensors weights' header and bytes); ``ledger`` appends and
reads the hash-chained log of looks at a gold file. Both are small and
import nothing heavy, so ``evalkit score`` can use them on its own path.
"""
