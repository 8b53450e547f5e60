"""The training MFU fitted on the MLPerf Training runs, as stored when they were imported."""

from __future__ import annotations

from dataclasses import dataclass, field

from benchmarks_app.models import TrainingMfuFit


@dataclass(frozen=True)
class TrainingMfus:
    """MFU per architecture slug, and over every architecture for the others (None: nothing fitted)."""

    by_architecture: dict[str, float] = field(default_factory=dict)
    pooled: float | None = None

    def for_architecture(self, slug: str | None) -> float | None:
        return self.by_architecture.get(slug or "", self.pooled)


def training_mfus() -> TrainingMfus:
    """The stored fits, one query."""
    by_architecture: dict[str, float] = {}
    pooled = None
    for slug, mfu in TrainingMfuFit.objects.values_list("architecture__slug", "mfu"):
        if slug is None:
            pooled = mfu
        else:
            by_architecture[slug] = mfu
    return TrainingMfus(by_architecture, pooled)
