"""The data version's stored copy: the one the cache keys are derived from (gpuatlas/data_version.py)."""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _


class DataVersion(models.Model):
    """The current version of the data behind cached pages: one row, replaced by every bump.

    The cache holds a copy for speed; this row is what the copy is read back from when the cache
    dropped it (an LRU eviction, a full local-memory cache culling its oldest entries), so that a
    dropped copy costs one query, not a new version that makes every cached page cold.
    """

    token = models.CharField(max_length=32, help_text=_("A random token, new at every bump."))
    changed_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return self.token
