"""How every human-readable report writes a number: rounded for reading, one style.

``report.json`` keeps the exact values; Markdown and HTML round them the same
way, so a reader comparing the two sees the same figures.
"""

from __future__ import annotations


def rate(value: float | None) -> str:
    """A rate in [0, 1] to three decimals; ``–`` when undefined (an empty scope)."""
    return "–" if value is None else f"{value:.3f}"


def signed(value: float | None) -> str:
    """A change with its sign: ``+0.261``, ``-0.600``; ``–`` when undefined."""
    return "–" if value is None else f"{value:+.3f}"


def p_value(value: float | None) -> str:
    """A p-value to three significant digits; ``<0.0001`` below that."""
    if value is None:
        return "–"
    return "<0.0001" if value < 1e-4 else f"{value:.3g}"


def with_ci(value: float | None, interval: tuple[float, float] | None) -> str:
    """A change with its interval: ``+0.261 (+0.178, +0.344)``."""
    if interval is None:
        return signed(value)
    return f"{signed(value)} ({signed(interval[0])}, {signed(interval[1])})"


def rate_ci(value: float | None, interval: tuple[float, float] | None) -> str:
    """A rate with its interval: ``0.644 [0.572, 0.711]``."""
    if interval is None:
        return rate(value)
    return f"{rate(value)} [{rate(interval[0])}, {rate(interval[1])}]"
