"""Rendering results for people and machines.

Each renderer takes a typed result and returns text; nothing here computes a
statistic or writes a file (the command line writes, atomically), so every
format shows the same numbers. Import the module you need
(``evalkit.report.markdown``, ``junit``, ``json_report``, ``github``,
``split_summary``, ``html.compare``, ``html.score``): this package imports
nothing itself, so that one command does not pay for another's renderers.
"""
