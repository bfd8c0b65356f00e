"""The evalkit version, recorded in every output it writes."""

__version__ = "0.1.0"
