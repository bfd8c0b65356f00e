"""Paired comparison of scored results and the CI gate built on it.

A baseline and one or more candidates, each a folder written by ``evalkit
score``, are paired example by example (``paired``), summarised per scope with
small-sample statistics (``statistics``), judged against the contract's
``gate`` rules (``rules``, ``verdict``) and, when there are several
candidates, ranked (``ranking``). ``api`` holds the two public entry points,
:func:`evalkit.compare` and :func:`evalkit.gate`; rendering for people lives in
:mod:`evalkit.report`.
"""
