"""Measured LLM serving points and the stored fit of the serving model.

A ``ServingPoint`` is one measured throughput of a model on a GPU configuration, a point on the
curve of output tokens/s per GPU against tokens/s per user. Points are derived from stored
benchmark results (MLPerf Inference, TensorRT-LLM's performance overview, llama.cpp tables, our
client's ``llm-decode``) by ``llm.services.serving_points.serving_points_rebuild``; each keeps its
source result, so it can be traced back and rebuilt at any time. Never edited by hand.
"""

from __future__ import annotations

from django.db import models
from django.db.models import F, Q
from django.utils.translation import gettext_lazy as _

from benchmarks_app.models import BenchmarkResult, SourceKind, TrustLabel
from benchmarks_app.services.energy import MIN_ENERGY_WINDOW_S
from catalog.models import Gpu


class Interconnect(models.TextChoices):
    NVLINK = "nvlink", _("NVLink-class fabric")
    PCIE = "pcie", _("PCIe")
    NONE = "none", _("None (one GPU)")
    UNKNOWN = "unknown", _("Unknown")


class PrecisionStatus(models.TextChoices):
    STATED = "stated", _("As stated by the source (plausible)")
    CORRECTED = "corrected", _("Corrected from a cited source")
    UNKNOWN = "unknown", _("Unknown (the stated precision is implausible and no source corrects it)")


class EngineClass(models.TextChoices):
    TENSORRT_LLM = "tensorrt-llm", "TensorRT-LLM"
    VLLM_SGLANG = "vllm-sglang", "vLLM / SGLang"
    LLAMA_CPP = "llama.cpp", "llama.cpp"
    PYTORCH = "pytorch", "PyTorch"
    OTHER = "other", _("Other")


class Scenario(models.TextChoices):
    OFFLINE = "offline", _("Offline (maximum throughput)")
    SERVER = "server", _("Server (latency-bounded)")
    INTERACTIVE = "interactive", _("Interactive (tight latency bounds)")
    CONCURRENCY = "concurrency", _("Fixed concurrency")
    SINGLE_STREAM = "single-stream", _("Single stream")


class PerUserBasis(models.TextChoices):
    MEASURED = "measured", _("Measured per user")
    LATENCY_FLOOR = "latency-floor", _("At least 1000 / the per-token latency limit (a floor)")
    ONE_STREAM = "one-stream", _("One stream: the configuration's whole rate")
    UNDEFINED = "undefined", _("Not defined (throughput run without a latency bound)")


class ServingPointQuerySet(models.QuerySet["ServingPoint"]):
    def trusted(self) -> ServingPointQuerySet:
        """Points that count as measurements: their result is trusted (lab or community) and the
        precision they ran at is known (stated and plausible, or corrected from a cited source).
        A point whose precision is unknown is kept for curators and never ranked."""
        return self.filter(result__trust__in=[TrustLabel.LAB, TrustLabel.COMMUNITY]).exclude(
            precision_status=PrecisionStatus.UNKNOWN
        )

    def for_model(self, model: str) -> ServingPointQuerySet:
        """Points of one model key (``llm.serving.shapes.MODEL_SHAPES``, e.g. ``llama-3.1-70b``)."""
        return self.filter(model=model)

    def for_models(self, models_: list[str] | tuple[str, ...]) -> ServingPointQuerySet:
        """Points of any of the model keys (a size class's members)."""
        return self.filter(model__in=list(models_))

    def with_measured_energy(self) -> ServingPointQuerySet:
        """Points that carry a measured energy: read over at least 5 s with every GPU's average
        power within its board limit (the rest were refused at derivation and carry none)."""
        return self.filter(joules_per_token__isnull=False)

    def at_precisions(self, precisions: list[str] | tuple[str, ...]) -> ServingPointQuerySet:
        """Points whose weights ran in one of the precisions (as run: after any correction)."""
        return self.filter(weight_precision__in=list(precisions))


class ServingPoint(models.Model):
    """One measured LLM throughput point, derived from its source result (rebuildable)."""

    result = models.OneToOneField(
        BenchmarkResult,
        on_delete=models.CASCADE,
        related_name="serving_point",
        help_text=_("The stored result this point is derived from."),
    )
    source_kind = models.CharField(max_length=16, choices=SourceKind.choices)
    gpu = models.ForeignKey(Gpu, on_delete=models.CASCADE, related_name="serving_points")
    gpu_count = models.PositiveSmallIntegerField()
    interconnect = models.CharField(max_length=8, choices=Interconnect.choices)
    model = models.CharField(max_length=40, help_text=_("Model key, e.g. llama-3.1-70b."))
    weight_precision = models.CharField(max_length=8, help_text=_("Weight format as run (after any correction)."))
    weight_precision_stated = models.CharField(max_length=8, blank=True, help_text=_("As the source stated it."))
    quant = models.CharField(max_length=16, blank=True, help_text=_("GGUF type, where the source names one."))
    kv_cache_precision = models.CharField(max_length=8, blank=True, help_text=_("Empty where not known."))
    precision_status = models.CharField(max_length=10, choices=PrecisionStatus.choices)
    precision_note = models.TextField(
        blank=True, help_text=_("Why the stated precision was corrected (with the citation) or is unknown.")
    )
    precision_source_url = models.URLField(max_length=500, blank=True)
    engine = models.CharField(max_length=120, help_text=_("Engine as named by the source, e.g. TensorRT-LLM."))
    engine_class = models.CharField(max_length=16, choices=EngineClass.choices)
    engine_version = models.CharField(max_length=60, blank=True)
    input_tokens = models.PositiveIntegerField(
        null=True, blank=True, help_text=_("Input (prompt) length, tokens; a mean where lengths vary.")
    )
    output_tokens = models.PositiveIntegerField(
        null=True, blank=True, help_text=_("Output length, tokens; a mean where lengths vary.")
    )
    lengths_note = models.CharField(
        max_length=300, blank=True, help_text=_("Where the lengths come from, or why one is not known.")
    )
    scenario = models.CharField(max_length=16, choices=Scenario.choices)
    concurrency = models.PositiveIntegerField(null=True, blank=True, help_text=_("Sequences in flight, where fixed."))
    ttft_limit_ms = models.FloatField(null=True, blank=True, help_text=_("First-token latency limit (ms)."))
    tpot_limit_ms = models.FloatField(null=True, blank=True, help_text=_("Per-output-token latency limit (ms)."))
    limits_note = models.TextField(blank=True, help_text=_("Where the limits come from, or why there are none."))
    tokens_per_s_per_gpu = models.FloatField(help_text=_("Output tokens/s per GPU."))
    tokens_per_s_per_user = models.FloatField(null=True, blank=True, help_text=_("Output tokens/s of one user."))
    per_user_basis = models.CharField(max_length=16, choices=PerUserBasis.choices)
    ttft_ms = models.FloatField(null=True, blank=True, help_text=_("Measured time to first token (ms)."))
    # Measured energy, where the source measured it and it passed benchmarks_app.services.energy
    # (a window of at least 5 s, every GPU's average power within its board limit); else all empty.
    joules_per_token = models.FloatField(
        null=True, blank=True, help_text=_("Measured energy per output token, all GPUs of the configuration (J).")
    )
    power_w = models.FloatField(
        null=True, blank=True, help_text=_("Measured average power per GPU over the window (W).")
    )
    power_limit_w = models.FloatField(
        null=True, blank=True, help_text=_("The board power limit the average power was checked against (W).")
    )
    energy_window_s = models.FloatField(null=True, blank=True, help_text=_("Length of the energy window (s)."))
    energy_samples = models.PositiveIntegerField(
        null=True, blank=True, help_text=_("Readings taken over the energy window.")
    )
    energy_source = models.CharField(
        max_length=24, blank=True, help_text=_("What the energy was read from, e.g. nvml-total-energy.")
    )
    measured_on = models.DateField()
    date_estimated = models.BooleanField(
        default=False, help_text=_("The source gives no date for the run: the date of its publication is used.")
    )
    source = models.CharField(max_length=500, help_text=_("The source key (catalog.citations)."))
    source_title = models.CharField(max_length=300)
    source_url = models.URLField(max_length=500, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = ServingPointQuerySet.as_manager()

    class Meta:
        ordering = ["model", "gpu", "gpu_count", "scenario"]
        constraints = [
            models.CheckConstraint(condition=Q(tokens_per_s_per_gpu__gt=0), name="serving_point_rate_positive"),
            models.CheckConstraint(condition=Q(gpu_count__gte=1), name="serving_point_gpu_count_positive"),
            models.CheckConstraint(
                condition=Q(tokens_per_s_per_user__isnull=True) | Q(tokens_per_s_per_user__gt=0),
                name="serving_point_user_rate_positive",
            ),
            models.CheckConstraint(
                condition=Q(tokens_per_s_per_user__isnull=True, per_user_basis=PerUserBasis.UNDEFINED)
                | (Q(tokens_per_s_per_user__isnull=False) & ~Q(per_user_basis=PerUserBasis.UNDEFINED)),
                name="serving_point_user_rate_has_basis",
            ),
            models.CheckConstraint(
                condition=Q(
                    joules_per_token__isnull=True,
                    power_w__isnull=True,
                    power_limit_w__isnull=True,
                    energy_window_s__isnull=True,
                )
                | Q(  # IS NOT NULL as well: a comparison with NULL would let the row through
                    joules_per_token__isnull=False,
                    power_w__isnull=False,
                    power_limit_w__isnull=False,
                    energy_window_s__isnull=False,
                    joules_per_token__gt=0,
                    power_w__gt=0,
                    power_limit_w__gte=F("power_w"),
                    energy_window_s__gte=MIN_ENERGY_WINDOW_S,
                ),
                name="serving_point_energy_within_limit",
            ),
        ]
        indexes = [models.Index(fields=["model", "weight_precision"]), models.Index(fields=["gpu", "model"])]

    def __str__(self) -> str:
        return f"{self.gpu} x{self.gpu_count} {self.model} {self.weight_precision} {self.scenario}"


class ServingModelFitQuerySet(models.QuerySet["ServingModelFit"]):
    def newest(self) -> ServingModelFit | None:
        """The fit the pages use: the most recent one."""
        return self.order_by("-fitted_at", "-id").first()


class ServingModelFit(models.Model):
    """The serving model's fitted constants and their error table, stored when its inputs change
    (never fitted on a read)."""

    constants = models.JSONField(help_text=_("The fitted constants."))
    errors = models.JSONField(
        default=dict,
        help_text=_("Leave-one-GPU-out and leave-one-model-out error per scenario and engine class."),
    )
    fitted_at = models.DateTimeField()
    points = models.PositiveIntegerField(help_text=_("Serving points the fit used."))
    inputs_digest = models.CharField(max_length=64, help_text=_("sha256 of the fit's inputs."))

    objects = ServingModelFitQuerySet.as_manager()

    class Meta:
        ordering = ["-fitted_at"]
        get_latest_by = "fitted_at"

    def __str__(self) -> str:
        return f"serving model fit {self.fitted_at:%Y-%m-%d %H:%M} ({self.points} points)"
