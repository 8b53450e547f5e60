"""GPU names from drivers, runtimes and clouds -> catalogue GPUs (see matcher.py)."""

from catalog.matching.matcher import (
    AMBIGUOUS,
    CONFLICT,
    MATCHED,
    MEMORY_SNAP_TOLERANCE,
    UNMATCHED,
    Candidate,
    GpuFacts,
    GpuMatcher,
    MatchResult,
)

__all__ = [
    "AMBIGUOUS",
    "CONFLICT",
    "MATCHED",
    "MEMORY_SNAP_TOLERANCE",
    "UNMATCHED",
    "Candidate",
    "GpuFacts",
    "GpuMatcher",
    "MatchResult",
]
