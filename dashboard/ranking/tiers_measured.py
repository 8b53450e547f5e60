"""The tiers of the LLM rankings: measured figures set them (tests/test_llm_interactivity.py)."""

from __future__ import annotations

from collections.abc import Mapping

from dashboard.ranking.maths import tier_for


def tiers_measured_first(values: Mapping[str, tuple[float | None, bool]]) -> dict[str, str]:
    """key -> tier from (value, measured) pairs: the best *measured* value is the 100 % mark and
    the tiers are fractions of it; an estimate is placed on the same scale but never above tier A
    (a model's figure cannot be the one the others are judged against). No measured value: no tiers."""
    measured = [v for v, is_measured in values.values() if is_measured and v is not None and v > 0]
    if not measured:
        return {}
    best = max(measured)
    out: dict[str, str] = {}
    for key, (value, is_measured) in values.items():
        if value is None or value <= 0:
            continue
        tier = tier_for(value / best)
        out[key] = "A" if tier == "S" and not is_measured else tier
    return out
