"""Text normalisation: what "the same text" means for duplicate detection.

Two texts are exact duplicates when they are equal after Unicode NFKC
normalisation (full-width letters, ligatures, non-breaking spaces and other
compatibility forms become their plain equivalents), lower-casing (Unicode,
not only ASCII) and collapsing every run of whitespace to one space with none
at the ends. Punctuation is kept: "refund." and "refund" are different words,
which keeps the check conservative.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import polars as pl


def as_text_series(texts: pl.Series | Sequence[str | None]) -> pl.Series:
    """``texts`` as a polars String series (None stays null; other scalars become text)."""
    import polars as pl

    series = texts if isinstance(texts, pl.Series) else pl.Series(list(texts), dtype=pl.String)
    if series.dtype == pl.String:
        return series
    if series.dtype.is_nested() or series.dtype == pl.Object:
        raise TypeError(f"texts must be strings, got a series of {series.dtype}")
    return series.cast(pl.String, strict=False)


def normalize_texts(texts: pl.Series | Sequence[str | None]) -> pl.Series:
    """Normalise every text (NFKC, lower case, single spaces, trimmed).

    A null or a text that is empty after normalisation becomes null: an empty
    text says nothing about its item, so it is never anyone's duplicate.
    """
    import polars as pl

    series = as_text_series(texts).alias("text")
    # NFKC changes nothing in pure ASCII, and most texts are: normalise only the others.
    non_ascii = series.str.contains(r"[^\x00-\x7f]").fill_null(False).arg_true()
    if len(non_ascii):
        series = series.scatter(non_ascii, series.gather(non_ascii).str.normalize("NFKC"))
    # Rewrite only what differs from a single space: runs of 2+ blanks, tabs, newlines, ...
    text = pl.col("text").str.to_lowercase().str.replace_all(r"\s{2,}|[^\S ]", " ")
    text = text.str.strip_chars(" ")
    frame = series.to_frame()
    return frame.select(pl.when(text != "").then(text).alias("normalized")).to_series()


def normalize_text(text: str | None) -> str | None:
    """Normalise one text exactly as :func:`normalize_texts` does (for people and tests)."""
    value = normalize_texts([text])[0]
    return value if isinstance(value, str) else None
