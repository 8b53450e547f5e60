"""Performance per unit of price: the arithmetic the rankings, compare and the LLM figures share."""

from __future__ import annotations


def per_price(perf: float | None, price: float | None, *, scale: float = 1.0) -> float | None:
    """Performance per unit of price (per ``scale`` units: 1,000 for purchase prices)."""
    if perf is None or price is None or price <= 0:
        return None
    return perf / (price / scale)
