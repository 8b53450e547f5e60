"""Derived state of the dashboard, computed on write and stored for the pages' cold reads."""

from __future__ import annotations

from django.db import models

from catalog.models import Gpu


class StoredStanding(models.Model):
    """A GPU's standing in one use case at the rankings' default parameters in USD: its row of the
    full graded ranking (dashboard/selectors/standings.py), stored so that a cold GPU page reads
    its few rows instead of computing six rankings from every result.

    Written for every GPU of the catalogue (``row`` is None where the GPU has no row in the use
    case) by ``dashboard.services.stored_standings_refresh``; ``data_version`` and ``day`` are
    the version and the UTC day they were computed at (a row's price says how many days old it
    is): a reader that finds another version or day computes the standings instead.
    """

    use_case = models.CharField(max_length=32)
    gpu = models.ForeignKey(Gpu, on_delete=models.CASCADE, related_name="+")
    data_version = models.CharField(max_length=32)
    day = models.DateField()
    baseline_name = models.CharField(max_length=200, blank=True)
    # The pickled RankingRow: written and read by this app only, so that the page shows exactly
    # the ranking's row (nested prices, dates, intervals) without a second schema to keep in step.
    row = models.BinaryField(null=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["use_case", "gpu"], name="stored_standing_unique")]

    def __str__(self) -> str:
        return f"{self.gpu_id} in {self.use_case} at {self.data_version}"
