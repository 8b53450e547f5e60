"""Workloads, raw submissions (immutable), derived results and their aggregates."""

from __future__ import annotations

import datetime as dt
import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _
from simple_history.models import HistoricalRecords

from catalog.models import Gpu, Precision


class Workload(models.Model):
    class Category(models.TextChoices):
        TRAINING = "training", _("Training")
        INFERENCE = "inference", _("Inference")
        MICRO = "micro", _("Micro-benchmark")

    slug = models.SlugField(max_length=80, help_text=_("Workload id, as the client writes it."))
    version = models.CharField(max_length=16, help_text=_("major.minor"))
    name = models.CharField(max_length=200)
    unit = models.CharField(max_length=32)
    higher_is_better = models.BooleanField(default=True)
    category = models.CharField(max_length=16, choices=Category.choices)
    description = models.TextField(blank=True)
    source = models.CharField(max_length=500, blank=True)
    submission_rules = models.JSONField(
        null=True,
        blank=True,
        help_text=_(
            "What a submitted result may carry (precisions, params, results per run), from the client's "
            "workloads.json; empty for lab-only workloads, whose results are not accepted from submissions."
        ),
    )
    history = HistoricalRecords()

    class Meta:
        ordering = ["category", "slug", "version"]
        constraints = [models.UniqueConstraint(fields=["slug", "version"], name="workload_unique_version")]

    def __str__(self) -> str:
        return f"{self.slug} v{self.version}"


class SubmissionStatus(models.TextChoices):
    RECEIVED = "received", _("Received")
    PROCESSING = "processing", _("Processing")
    ACCEPTED = "accepted", _("Accepted")
    FLAGGED = "flagged", _("Flagged")
    ON_HOLD = "on_hold", _("On hold: the GPU needs checking")
    REJECTED = "rejected", _("Rejected")


class RawSubmissionQuerySet(models.QuerySet["RawSubmission"]):
    def needing_moderation(self) -> RawSubmissionQuerySet:
        return self.filter(status__in=[SubmissionStatus.FLAGGED, SubmissionStatus.ON_HOLD])

    def stuck(self, *, older_than: dt.datetime) -> RawSubmissionQuerySet:
        """Received before ``older_than`` and still waiting for their ingest."""
        return self.filter(status=SubmissionStatus.RECEIVED, received_at__lt=older_than)


class RawSubmission(models.Model):
    """A benchmark run exactly as received. ``payload`` is never modified after insert."""

    class Channel(models.TextChoices):
        API = "api", _("API")
        FORM = "form", _("Upload form")
        LAB = "lab", _("Lab import")

    run_uuid = models.UUIDField(unique=True, default=uuid.uuid4)
    payload = models.TextField(help_text=_("The body as received (UTF-8)."))
    sha256 = models.CharField(max_length=64)
    received_at = models.DateTimeField(auto_now_add=True, db_index=True)
    submitter = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="submissions"
    )
    channel = models.CharField(max_length=8, choices=Channel.choices, default=Channel.API)
    status = models.CharField(
        max_length=16, choices=SubmissionStatus.choices, default=SubmissionStatus.RECEIVED
    )  # indexed by (status, id) below, which also serves lookups by status alone
    reasons = models.JSONField(default=list, blank=True, help_text=_("Why it was flagged, held or rejected."))
    gpu = models.ForeignKey(Gpu, on_delete=models.SET_NULL, null=True, blank=True, related_name="submissions")
    gpu_name_reported = models.CharField(max_length=200, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    claimed_at = models.DateTimeField(null=True, blank=True)
    processed_at = models.DateTimeField(null=True, blank=True)
    moderated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    objects = RawSubmissionQuerySet.as_manager()

    class Meta:
        ordering = ["-received_at"]
        # The ingest claims the oldest received rows: (status, id) finds them without a sort.
        indexes = [models.Index(fields=["status", "id"], name="rawsubmission_status_id")]

    def __str__(self) -> str:
        return f"{self.run_uuid} ({self.status})"


class TrustLabel(models.TextChoices):
    LAB = "lab", _("Lab import")
    COMMUNITY = "community", _("Community")
    FLAGGED = "flagged", _("Flagged")


class SourceKind(models.TextChoices):
    """The sources of LLM measurements, each read by its own rule into serving points (llm)."""

    MLPERF = "mlperf", "MLPerf Inference"
    TRTLLM = "trtllm", _("TensorRT-LLM performance overview")
    TRTLLM_GUIDE = "trtllm-guide", _("TensorRT-LLM performance guides")
    LLAMACPP = "llamacpp", _("llama.cpp tables")
    EVAL_RATE = "eval-rate", _("Ollama eval rates")
    CLIENT = "client", "gpuatlas-bench"
    INFERENCEX = "inferencex", _("InferenceX (SemiAnalysis)")


class BenchmarkResultQuerySet(models.QuerySet["BenchmarkResult"]):
    def trusted(self) -> BenchmarkResultQuerySet:
        return self.filter(trust__in=[TrustLabel.LAB, TrustLabel.COMMUNITY])


class BenchmarkResult(models.Model):
    """One workload measurement derived from a submission (or a lab import); rebuildable."""

    submission = models.ForeignKey(
        RawSubmission, on_delete=models.CASCADE, null=True, blank=True, related_name="results"
    )
    # gpu, comparison_key and trust are indexed together (Meta): each index more costs every
    # result the ingest writes (17 per submission), and these three alone served no query.
    gpu = models.ForeignKey(Gpu, on_delete=models.PROTECT, related_name="results", db_index=False)
    workload = models.ForeignKey(Workload, on_delete=models.PROTECT, related_name="results")
    precision = models.CharField(max_length=8, choices=Precision.choices)
    gpu_count = models.PositiveSmallIntegerField(default=1)
    params = models.JSONField(default=dict, blank=True)
    comparison_key = models.CharField(max_length=64, help_text=_("sha256 of the key fields."))
    comparison_label = models.CharField(max_length=300)
    value = models.FloatField(help_text=_("Median over repetitions, in the workload's unit."))
    repetitions = models.JSONField(default=list, blank=True)
    spread_pct = models.FloatField(null=True, blank=True)
    trust = models.CharField(max_length=16, choices=TrustLabel.choices)
    submitter = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    submitter_key = models.CharField(
        max_length=64, blank=True, help_text=_("Distinct-submitter identity: user id or lab source.")
    )
    source = models.CharField(max_length=500, blank=True)
    environment = models.JSONField(default=dict, blank=True)
    measured_at = models.DateTimeField()
    created_at = models.DateTimeField(auto_now_add=True)

    objects = BenchmarkResultQuerySet.as_manager()

    class Meta:
        ordering = ["-measured_at"]
        constraints = [
            models.CheckConstraint(condition=Q(value__gt=0), name="result_value_positive"),
            models.CheckConstraint(condition=Q(gpu_count__gte=1), name="result_gpu_count_positive"),
        ]
        indexes = [
            models.Index(fields=["gpu", "comparison_key", "trust"]),
            # A few GPUs' results of a few workloads (the multi-GPU figures): read in proportion to
            # those rows, not to every result of the GPUs.
            models.Index(fields=["workload", "gpu"], name="result_workload_gpu_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.gpu} {self.comparison_label} = {self.value}"


class ResultAggregate(models.Model):
    """Summary of trusted results per GPU and comparison key, maintained by the ingest."""

    gpu = models.ForeignKey(Gpu, on_delete=models.CASCADE, related_name="aggregates")
    workload = models.ForeignKey(Workload, on_delete=models.CASCADE, related_name="aggregates")
    precision = models.CharField(max_length=8, choices=Precision.choices)
    gpu_count = models.PositiveSmallIntegerField(default=1)
    comparison_key = models.CharField(max_length=64)
    comparison_label = models.CharField(max_length=300)
    n = models.PositiveIntegerField()
    distinct_submitters = models.PositiveIntegerField()
    median = models.FloatField()
    q1 = models.FloatField()
    q3 = models.FloatField()
    minimum = models.FloatField()
    maximum = models.FloatField()
    has_lab = models.BooleanField(default=False)
    # Its results' parameters (one comparison key, one set of parameters; comparison_keys.py):
    # stored so that readers of the workload's shapes (the fit calculator) need no result.
    params = models.JSONField(default=dict, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["gpu", "comparison_label"]
        constraints = [
            models.UniqueConstraint(fields=["gpu", "comparison_key"], name="aggregate_unique_key"),
            models.CheckConstraint(condition=Q(n__gte=1), name="aggregate_n_positive"),
        ]
        indexes = [models.Index(fields=["comparison_key"])]

    def __str__(self) -> str:
        return f"{self.gpu} {self.comparison_label}: {self.median} (n={self.n})"


class ScopeSubmitters(models.Model):
    """How many distinct submitters stand behind a GPU's trusted results of a set of workloads and
    precisions (a ranking's scope): a count over results, so derived after writes
    (``benchmarks_app.services.scope_submitters``) and read by the rankings, which would otherwise
    read most results of the use case.

    ``fingerprint`` is the digest of the GPU's aggregates in the scope when the count was taken
    (``scope_fingerprints``): every change to a GPU's trusted results rewrites one of its
    aggregates, so a reader that finds another fingerprint knows the count is stale.
    """

    scope = models.CharField(max_length=16)  # scope_digest(workload ids, precisions)
    gpu = models.ForeignKey(Gpu, on_delete=models.CASCADE, related_name="+")
    fingerprint = models.CharField(max_length=24)
    submitters = models.PositiveIntegerField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["scope", "gpu"], name="scope_submitters_unique")]

    def __str__(self) -> str:
        return f"{self.gpu_id} in {self.scope}: {self.submitters}"


class LabImportRow(models.Model):
    """A row of an imported lab table that is not a result: kept with its reason.

    Out-of-memory cells are evidence that a model does not fit on that GPU count (never a zero
    throughput); unmatched or heterogeneous accelerator names and CPU-only rows are kept for
    curators. Each import replaces the rows of its dataset.
    """

    class Outcome(models.TextChoices):
        DOES_NOT_FIT = "does_not_fit", _("Does not fit (out of memory)")
        UNMATCHED = "unmatched", _("Accelerator name not in the catalogue")
        HETEROGENEOUS = "heterogeneous", _("Several accelerator types in one system")
        NO_ACCELERATOR = "no_accelerator", _("No accelerator (CPU only)")
        NOT_A_CATALOGUE_GPU = "not_catalogue_gpu", _("System outside the GPU catalogue")
        SKIPPED = "skipped", _("Skipped")

    dataset = models.CharField(max_length=80, db_index=True, help_text=_("The import that wrote the row."))
    outcome = models.CharField(max_length=24, choices=Outcome.choices)
    name_reported = models.CharField(max_length=300, blank=True)
    gpu = models.ForeignKey(Gpu, on_delete=models.CASCADE, null=True, blank=True, related_name="lab_import_rows")
    gpu_count = models.PositiveIntegerField(null=True, blank=True)
    workload_slug = models.CharField(max_length=80, blank=True)
    precision = models.CharField(max_length=8, blank=True)
    params = models.JSONField(default=dict, blank=True)
    row = models.JSONField(default=dict, blank=True, help_text=_("The row as read."))
    reason = models.TextField(blank=True)
    source = models.CharField(max_length=500, blank=True)
    measured_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["dataset", "outcome", "name_reported"]
        indexes = [models.Index(fields=["outcome", "gpu"])]

    def __str__(self) -> str:
        return f"{self.dataset}: {self.name_reported} ({self.outcome})"


class TrainingRun(models.Model):
    """One system's MLPerf Training result for one benchmark, with the rates derived from it.

    Rows whose accelerator the catalogue lacks are kept with no GPU (and no rates) so that the
    import can be read back whole. Where the benchmark's tokens are documented (LLM benchmarks),
    the rates are: tokens/s per GPU over the time to train, the model FLOP/s per GPU that implies
    and its share of the GPU's dense peak in the format the run trained in (MFU).
    """

    round = models.CharField(max_length=8, help_text=_("MLPerf Training round, e.g. 5.1."))
    submitter = models.CharField(max_length=100)
    system_id = models.CharField(max_length=200, help_text=_("The system's file name in the results repository."))
    system_name = models.CharField(max_length=300)
    division = models.CharField(max_length=16)
    availability = models.CharField(max_length=100)
    benchmark = models.CharField(max_length=64)
    accelerator_name = models.CharField(max_length=200)
    gpu = models.ForeignKey(Gpu, on_delete=models.CASCADE, null=True, blank=True, related_name="training_runs")
    match_note = models.CharField(max_length=300, blank=True)
    gpus = models.PositiveIntegerField()
    nodes = models.PositiveIntegerField()
    gpus_per_node = models.PositiveIntegerField()
    scale_up = models.CharField(max_length=200, blank=True, help_text=_("Accelerator interconnect as published."))
    scale_out = models.CharField(max_length=300, blank=True, help_text=_("Host networking as published."))
    framework = models.CharField(max_length=300, blank=True)
    runs = models.PositiveSmallIntegerField()
    time_to_train_min = models.FloatField(help_text=_("MLPerf score: mean of the runs less fastest and slowest."))
    samples_per_run = models.PositiveBigIntegerField(null=True, blank=True)
    tokens_per_sample = models.PositiveIntegerField(null=True, blank=True)
    model_params = models.FloatField(null=True, blank=True, help_text=_("Parameters of the benchmark's model."))
    flops_per_token = models.FloatField(null=True, blank=True)
    precision = models.CharField(max_length=8, choices=Precision.choices, blank=True)
    peak_tflops = models.FloatField(null=True, blank=True, help_text=_("Dense peak per GPU in the run's format."))
    tokens_per_s_per_gpu = models.FloatField(null=True, blank=True)
    achieved_tflops_per_gpu = models.FloatField(null=True, blank=True)
    mfu = models.FloatField(null=True, blank=True, help_text=_("Achieved model FLOP/s over the dense peak."))
    source_url = models.URLField(max_length=500)
    commit = models.CharField(max_length=40)
    published = models.DateField()

    class Meta:
        ordering = ["-round", "benchmark", "gpus"]
        constraints = [
            models.UniqueConstraint(
                fields=["round", "submitter", "system_id", "benchmark"], name="trainingrun_unique_result"
            ),
            models.CheckConstraint(condition=Q(time_to_train_min__gt=0), name="trainingrun_time_positive"),
            models.CheckConstraint(condition=Q(gpus__gt=0), name="trainingrun_gpus_positive"),
            # A run faster than its GPU's peak is a wrong match or a wrong token count, never stored.
            models.CheckConstraint(
                condition=Q(achieved_tflops_per_gpu__isnull=True)
                | (
                    Q(peak_tflops__gt=0)
                    & Q(achieved_tflops_per_gpu__gt=0)
                    & Q(achieved_tflops_per_gpu__lte=models.F("peak_tflops"))
                ),  # fmt: skip
                name="trainingrun_within_peak",
            ),
            models.CheckConstraint(
                condition=Q(mfu__isnull=True) | (Q(mfu__gt=0) & Q(mfu__lte=1)), name="trainingrun_mfu_fraction"
            ),
        ]

    def __str__(self) -> str:
        return f"MLPerf Training v{self.round} {self.benchmark}: {self.submitter} {self.system_name}"


class TrainingMfuFit(models.Model):
    """Model FLOP utilisation of LLM training, fitted on the imported MLPerf Training runs when they
    are written (a read never fits): of one GPU model (``gpu``: its own runs, the figure a GPU
    with runs is anchored on), of one architecture (``architecture``: for the GPUs of it without
    runs), or of every run together (neither), each over one MLPerf benchmark (``benchmark``: a
    job is read at the benchmark nearest to it, as MFU grows with the model's matrices) and over
    all of them (``benchmark`` empty). ``estimate_error``: on the architecture and pooled rows of
    all benchmarks, the median relative error of that figure for the GPUs with runs of their own,
    each GPU's runs left out of it (what an estimate from it is typically off by)."""

    architecture = models.ForeignKey(
        "catalog.Architecture", on_delete=models.CASCADE, null=True, blank=True, related_name="training_mfus"
    )
    gpu = models.ForeignKey(
        "catalog.Gpu", on_delete=models.CASCADE, null=True, blank=True, related_name="training_mfus"
    )
    benchmark = models.CharField(max_length=64, blank=True, help_text=_("MLPerf benchmark; empty: every benchmark."))
    mfu = models.FloatField()
    runs = models.PositiveIntegerField()
    low = models.FloatField(help_text=_("Lowest MFU of the runs fitted."))
    high = models.FloatField(help_text=_("Highest MFU of the runs fitted."))
    estimate_error = models.FloatField(
        null=True, blank=True, help_text=_("Median relative error for a GPU left out (architecture and pooled rows).")
    )
    fitted_at = models.DateTimeField()

    class Meta:
        ordering = ["architecture", "gpu", "benchmark"]
        constraints = [
            models.CheckConstraint(condition=Q(mfu__gt=0) & Q(mfu__lte=1), name="trainingmfufit_fraction"),
            models.CheckConstraint(condition=Q(runs__gt=0), name="trainingmfufit_runs_positive"),
            models.CheckConstraint(
                condition=Q(architecture__isnull=True) | Q(gpu__isnull=True), name="trainingmfufit_gpu_or_architecture"
            ),
            models.UniqueConstraint(
                fields=["gpu", "benchmark"], condition=Q(gpu__isnull=False), name="trainingmfufit_one_per_gpu"
            ),
            models.UniqueConstraint(
                fields=["architecture", "benchmark"],
                condition=Q(architecture__isnull=False),
                name="trainingmfufit_one_per_architecture",
            ),
            models.UniqueConstraint(
                fields=["benchmark"],
                condition=Q(architecture__isnull=True, gpu__isnull=True),
                name="trainingmfufit_one_pooled",
            ),
        ]

    def __str__(self) -> str:
        scope = self.gpu or self.architecture or "all architectures"
        return f"{scope} {self.benchmark or 'all benchmarks'}: MFU {self.mfu:.3f} ({self.runs} runs)"
