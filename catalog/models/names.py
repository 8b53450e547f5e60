"""Rules that turn GPU names as drivers, runtimes and clouds print them into catalogue names.

The curated copy lives in ``catalog/data/curated/name_rules.toml``; ``import_catalog`` loads it
into these rows, and curators edit them in the admin. The matcher (``catalog.matching``) applies
the text rules in ``position`` order.
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _
from simple_history.models import HistoricalRecords

from catalog.models.gpus import Gpu


class GpuNameRule(models.Model):
    class Kind(models.TextChoices):
        REFUSE = "refuse", _("Refuse: the name cannot be attributed to one GPU")
        TRUNCATED = "truncated", _("Truncation mark")
        STRIP = "strip", _("Remove text")
        REPLACE = "replace", _("Replace text")
        MARKER = "marker", _("Form marker (laptop, Max-Q, embedded)")
        VENDOR = "vendor", _("Vendor word")
        VARIANT = "variant", _("Form-factor word (SXM, PCIe, NVL...)")
        QUALIFIER = "qualifier", _("Qualifier word (refresh)")
        MEMORY_TYPE = "memory_type", _("Memory type written in the name")
        BRAND = "brand", _("Brand word (GeForce, Quadro...)")
        NAME_MEMORY = "name_memory", _("Memory size written in the name")
        CANDIDATES = "candidates", _("A name shared by several GPUs")
        MEMORY_OPTION = "memory_option", _("Another memory size a GPU is sold with or reports")

    class Origin(models.TextChoices):
        CURATED = "curated", _("Curated data file")
        CURATOR = "curator", _("Added by a curator")

    position = models.PositiveIntegerField(help_text=_("Rules apply in this order."))
    kind = models.CharField(max_length=16, choices=Kind.choices)
    pattern = models.CharField(
        max_length=500, blank=True, help_text=_("Python regular expression, matched without regard to case.")
    )
    value = models.CharField(
        max_length=100,
        blank=True,
        help_text=_(
            "Replacement text (replace), marker (marker), vendor (vendor), variant (variant) "
            "or the status a refusal gives: unmatched or ambiguous (refuse)."
        ),
    )
    phrase = models.CharField(
        max_length=100, blank=True, help_text=_("Marker text as printed; completes names cut by nvidia-smi.")
    )
    memory_gib = models.FloatField(
        _("memory (GB)"), null=True, blank=True, help_text=_("Memory size (memory_option rules).")
    )
    gpus = models.ManyToManyField(Gpu, blank=True, related_name="name_rules")
    reason = models.TextField(blank=True, help_text=_("Shown in match reasons."))
    example = models.CharField(max_length=200, blank=True, help_text=_("A real name this rule was written for."))
    source = models.CharField(max_length=500, blank=True, help_text=_("Where the fact comes from (URL)."))
    origin = models.CharField(max_length=16, choices=Origin.choices, default=Origin.CURATOR)
    history = HistoricalRecords()

    class Meta:
        ordering = ["position", "id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(memory_gib__isnull=True) | Q(memory_gib__gt=0), name="gpunamerule_memory_positive"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.position} {self.kind} {self.pattern or self.memory_gib}"
