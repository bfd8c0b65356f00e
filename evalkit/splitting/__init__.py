"""Splitting a data set into train, validation and test (``evalkit split``).

The library call is :func:`evalkit.split` (:mod:`evalkit.splitting.api`); the manifest
it writes is :class:`evalkit.records.SplitManifest`.
"""
