"""Reads for the fit calculator: every GPU as :class:`fitcalc.plan.GpuFacts` for one request.

``fit_gpu_facts_list`` reads every curated GPU with a memory size, its rental price per GPU-hour
by the chosen rule (``catalog.selectors.prices.gpu_rent_prices``: typical, the median of the
providers' cheapest current on-demand offers, or the cheapest one; with provider, observation
date and age), its purchase price, TDP, and its throughput in the job's unit: for LLM inference,
the rate of each GPU count by the serving model, measured figures first
(``fitcalc.selectors.llm_jobs``); for training, one GPU's rate by one method for every GPU (its
fine-tuning ranking figure made a rate by the anchor GPU's measured FLOP rate: fitcalc.throughput)
and the rate of each count with its communication priced over the GPU's link, measured where the
client measured it (fitcalc.parallel). GPUs that cannot run a training job's format natively (BF16,
FP8) are left out, and a warning names them. A fixed number of queries, whatever the number of GPUs.
:func:`fitcalc.selectors.fit.fit_compute` adds the pure calculation (fit, time, cost, buy versus rent).
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any, cast

from django.db.models import Max, Q
from django.utils.translation import gettext as _

from benchmarks_app.comparison_rules import MIN_COMMUNITY_N
from benchmarks_app.models import ResultAggregate
from benchmarks_app.selectors import TrainingMfu, TrainingMfus, job_benchmark, training_mfus
from catalog.models import Gpu, Offer, PriceSnapshot, TensorPeak
from catalog.models.gpus import gpu_display_name
from catalog.selectors.prices import GpuRentPrice, display_rate, exchange_rates, gpu_purchase_prices, gpu_rent_prices
from dashboard.ranking.use_cases import PRECISION_NAMES, ArchitectureSupport, precision_supported
from dashboard.selectors.scaling import MultiGpuFigures, multi_gpu_by_gpu
from fitcalc.llm import LlmMeasured
from fitcalc.memory import GIB, TRAINING_MODES, MemoryBreakdown, Mode
from fitcalc.parallel import TrainingJob, link_figures, training_count_rates
from fitcalc.plan import (
    DEFAULT_COUNTS,
    CountRate,
    GpuFacts,
)
from fitcalc.presets import ModelSpec
from fitcalc.request import FitRequest
from fitcalc.selectors.llm_jobs import (
    LlmJobContext,
    llm_gpu,
    llm_job_context,
    llm_job_facts,
)
from fitcalc.throughput import (
    LAMBDA_MODES,
    LAMBDA_WORKLOAD_FOR_PRESET,
    TRANSFORMER_INFER,
    Basis,
    GpuMeasurements,
    GpuSpecs,
    block_flops_per_token,
    throughput_resolve,
)
from llm.question import PRECISION_CLASS, ServingQuestion
from llm.selectors.answers import MAX_GPUS as SERVING_MAX_GPUS
from llm.selectors.answers import GpuAnswers, serving_answers
from llm.selectors.serving import serving_fit_current
from llm.serving.answer import MEASURED
from llm.serving.comm import catalogue_link
from llm.serving.physics import ServingConstants
from llm.serving.shapes import MODEL_SHAPES
from llm.serving.single_stream import stream_usable_bytes

# GpuFacts bounds (fitcalc.plan checks them): values outside are dropped, never passed on.
_MAX_MEMORY_GIB = 1e5
_MAX_THROUGHPUT = 1e15
_MAX_PRICE_PER_HOUR = 1e5
_MAX_PURCHASE = 1e8
_MAX_TDP = 1e5


def _within(value: float | None, *, low: float, high: float, inclusive_low: bool = False) -> float | None:
    if value is None or not math.isfinite(value):
        return None
    if value < low or (value == low and not inclusive_low) or value > high:
        return None
    return value


# --- reads -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class PriceOrigin:
    """Where a GPU's rental price comes from: the offer the rule picked, its provider, when it was
    observed (the newest snapshot that listed it), whether that date is an estimate, its age, and
    the spread over the providers' cheapest offers (in the page currency)."""

    rule: str
    provider: str
    provider_slug: str
    instance_type: str
    region: str
    observed_at: dt.datetime
    age_days: float | None  # None where the date is an estimate
    date_basis: str
    date_is_estimate: bool
    date_note: str
    source: str
    minimum: float | None
    maximum: float | None
    providers: int
    offers: int

    @property
    def date_basis_label(self) -> str:
        """How the observation date is known, in the page's language."""
        try:
            return str(PriceSnapshot.DateBasis(self.date_basis).label)
        except ValueError:
            return self.date_basis

    def to_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "provider": self.provider,
            "provider_slug": self.provider_slug,
            "instance_type": self.instance_type,
            "region": self.region,
            "observed_at": self.observed_at.isoformat(),
            "age_days": self.age_days,
            "date_basis": self.date_basis,
            "date_is_estimate": self.date_is_estimate,
            "date_note": self.date_note,
            "source": self.source,
            "minimum": self.minimum,
            "maximum": self.maximum,
            "providers": self.providers,
            "offers": self.offers,
        }


@dataclass(frozen=True)
class GpuDetail:
    """What the page and the API show beside a GPU's plan: where its figures come from."""

    slug: str
    name: str
    throughput_unit: str
    throughput_basis: Basis
    throughput_note: str
    purchase_price_source: str
    throughput_typical_error: float | None = None
    price: PriceOrigin | None = None
    measured_source: str = ""
    measured_url: str = ""
    measured_n: int | None = None

    @property
    def typical_error_percent(self) -> int | None:
        return None if self.throughput_typical_error is None else round(self.throughput_typical_error * 100)


@dataclass(frozen=True)
class FitGpuFacts:
    gpus: list[GpuFacts]
    details: dict[str, GpuDetail]
    currency: str
    exchange_rate: dict[str, Any] | None
    warnings: list[str]
    llm: LlmJobContext | None = None


def _measurements(*, gpu_ids: list[int], model: ModelSpec, breakdown: MemoryBreakdown) -> dict[int, GpuMeasurements]:
    """Per GPU: achieved block FLOP rates and Lambda rates. One query: the block's shapes are its
    aggregates' stored parameters."""
    training = breakdown.mode in TRAINING_MODES
    # Training rates come from the time model (fitcalc.throughput, item 2): only Lambda's runs of
    # the preset's own model are read for them.
    slugs = [] if training else [TRANSFORMER_INFER]
    lambda_slug = LAMBDA_WORKLOAD_FOR_PRESET.get(model.slug) if breakdown.mode in LAMBDA_MODES else None
    if lambda_slug:
        slugs.append(lambda_slug)
    rows: list[dict[str, Any]] = [
        dict(row)
        for row in ResultAggregate.objects.filter(gpu_id__in=gpu_ids, gpu_count=1, workload__slug__in=slugs)
        .filter(Q(has_lab=True) | Q(n__gte=MIN_COMMUNITY_N))
        .order_by()
        .values("gpu_id", "workload__slug", "workload__version", "precision", "median", "n", "params")
    ]

    best: dict[tuple[int, str, str], dict[str, Any]] = {}
    for row in rows:
        slug = row["workload__slug"]
        pick = (row["gpu_id"], slug, row["precision"] if slug == lambda_slug else "")
        if slug == TRANSFORMER_INFER and row["precision"] != "bf16":
            continue
        current = best.get(pick)
        rank = (row["workload__version"], row["n"])
        if current is None or rank > (current["workload__version"], current["n"]):
            best[pick] = row

    found: dict[int, dict[str, Any]] = {}
    for (gpu_id, slug, precision), row in best.items():
        entry = found.setdefault(gpu_id, {"lambda_per_s": {}})
        if slug == lambda_slug:
            entry["lambda_per_s"][precision] = row["median"]
        else:
            block = block_flops_per_token(
                params=row["params"] if isinstance(row["params"], dict) else {}, training=False
            )
            if block is not None:
                entry["infer_flops"] = row["median"] * block
    return {gpu_id: GpuMeasurements(**entry) for gpu_id, entry in found.items()}


def max_count_offered(*, gpu_ids: list[int]) -> dict[int, int]:
    """gpu id -> the most of that GPU one current on-demand offer puts in one machine. One query."""
    rows = (
        Offer.objects.current()
        .sku_level()
        .filter(gpu_id__in=gpu_ids, is_spot=False)
        .order_by()
        .values("gpu_id")
        .annotate(most=Max("gpu_count"))
        .values_list("gpu_id", "most")
    )
    return {gpu_id: int(most) for gpu_id, most in rows if most and most >= 1}


def _price_origin(rent: GpuRentPrice, money: Any) -> PriceOrigin:
    origin = rent.provenance
    return PriceOrigin(
        rule=rent.rule,
        provider=origin.provider,
        provider_slug=origin.provider_slug,
        instance_type=origin.instance_type,
        region=origin.region,
        observed_at=origin.observed_at,
        age_days=origin.age_days,
        date_basis=origin.date_basis,
        date_is_estimate=origin.date_is_estimate,
        date_note=origin.date_note,
        source=origin.source,
        minimum=money(rent.minimum_usd, _MAX_PRICE_PER_HOUR),
        maximum=money(rent.maximum_usd, _MAX_PRICE_PER_HOUR),
        providers=rent.providers,
        offers=rent.offers,
    )


def _first_rate(rates: dict[int, CountRate], *, per_gpu: bool) -> CountRate | None:
    """The fewest GPUs with a figure: one GPU's share of it (batched), or the stream's rate."""
    for count in sorted(rates):
        rate = rates[count]
        if rate.per_s:
            return replace(rate, per_s=rate.per_s / count if per_gpu else rate.per_s)  # fmt: skip
    return None


#: Formats a GPU must run natively to be offered for training in them.
NATIVE_FORMATS = ("bf16", "fp8")


def _lacks_format(precision: str, row: Mapping[str, Any], peaks: Mapping[str, float | None]) -> bool:
    """Whether the GPU is known not to run the job's format natively (dashboard.ranking.use_cases)."""
    if precision not in NATIVE_FORMATS:
        return False
    architecture = (
        ArchitectureSupport(
            vendor_slug=row["vendor__slug"] or "",
            tensor_core_generation=row["architecture__tensor_core_generation"],
            bf16=bool(row["architecture__supports_bf16"]),
            fp8=bool(row["architecture__supports_fp8"]),
        )
        if row["architecture__slug"]
        else None
    )
    return precision_supported(precision, peaks=peaks, architecture=architecture) is False


#: The catalogue columns the fit calculator reads of each GPU.
GPU_COLUMNS = (
    "id", "slug", "name", "name_zh", "memory_gib", "memory_bandwidth_gbs", "tdp_w", "fp32_tflops", "fp16_tflops",
    "launch_price_usd", "variant", "segment", "interconnect_gbs", "scale_up_link", "scale_up_gpus",
    "pcie_peer_to_peer", "bus_interface", "vendor__slug", "memory_type",
    "architecture__slug", "architecture__tensor_core_generation", "architecture__supports_bf16",
    "architecture__supports_fp8",
)  # fmt: skip


@dataclass(frozen=True)
class Money:
    """USD amounts in the request's currency at the newest exchange rate; None without a rate."""

    currency: str
    units_per_usd: float | None
    exchange_rate: dict[str, Any] | None

    def __call__(self, usd: float | Decimal | None, high: float) -> float | None:
        if usd is None or self.units_per_usd is None:
            return None
        return _within(float(usd) * self.units_per_usd, low=0, high=high)


def _money(*, currency: str, rates: Any) -> Money:
    rate = display_rate(currency=currency, rates=rates)
    units_per_usd: float | None = None if rate["missing"] else float(rate["units_per_usd"])
    exchange = (
        None
        if currency == "USD" or units_per_usd is None
        else {"units_per_usd": units_per_usd, "date": rate["rate_date"], "source": rate["source"]}
    )
    return Money(currency=currency, units_per_usd=units_per_usd, exchange_rate=exchange)


def _tensor_peaks(*, gpu_ids: list[int]) -> dict[int, dict[str, float | None]]:
    """gpu id -> precision -> dense TFLOPS (None where the format is not supported). One query."""
    peaks: dict[int, dict[str, float | None]] = {}
    for row in (
        TensorPeak.objects.filter(gpu_id__in=gpu_ids)
        .order_by()
        .values("gpu_id", "precision", "supported", "dense_tflops")
    ):
        peaks.setdefault(row["gpu_id"], {})[row["precision"]] = row["dense_tflops"] if row["supported"] else None
    return peaks


@dataclass(frozen=True)
class FitJobInputs:
    """What every GPU's facts are computed from, read once for all GPUs."""

    peaks: dict[int, dict[str, float | None]]
    rent: dict[int, GpuRentPrice]
    offered: dict[int, int]
    purchase_usd: dict[int, tuple[float, str]]
    training: bool
    llm: LlmJobContext | None
    measured: dict[int, GpuMeasurements]
    serving: dict[int, GpuAnswers] | None  # batched LLM serving: the serving model's answers per GPU
    serving_usable_gib: dict[int, float]  # memory per GPU the serving model lets a job use
    multi_gpu: dict[int, MultiGpuFigures]
    specs_by_id: dict[int, GpuSpecs]
    job: TrainingJob


def serving_model_of(model: ModelSpec) -> str | None:
    """The serving model's key for a calculator preset: its own, else the one network of the same
    shape (DeepSeek-V3 is DeepSeek-R1's: layers, width, experts and parameters), else None."""
    if model.slug in MODEL_SHAPES:
        return model.slug
    for slug, shape in MODEL_SHAPES.items():
        if (
            shape.layers == model.layers
            and shape.hidden == model.hidden
            and (shape.experts or None) == (model.experts or None)
            and (shape.active_experts or None) == (model.experts_active or None)
            and abs(shape.total_params_b * 1e9 / model.params - 1.0) < 0.01
        ):
            return slug
    return None


def serving_question_of(request: FitRequest) -> ServingQuestion | None:
    """The serving question a batched LLM job asks (llm.question), or None where the serving
    model cannot answer it: a model it has no shape of, a weight format outside its precisions,
    one stream, or a fixed number of users (a concurrency, not a rate per user)."""
    model, breakdown = request.model, request.breakdown
    precision = breakdown.precision.value
    if not (breakdown.is_inference and model.kind == "decoder") or request.serving == "single":
        return None
    served = serving_model_of(model)
    if request.users is not None or served is None or precision not in PRECISION_CLASS:
        return None
    return ServingQuestion(served, request.input_len, request.output_len, precision, None)


def _serving_inputs(
    *, request: FitRequest, gpu_ids: list[int], peaks: Mapping[int, Mapping[str, float | None]], counts: tuple[int, ...]
) -> tuple[dict[int, GpuAnswers] | None, dict[int, float]]:
    """The serving model's answers at the calculator's counts (up to one server) and the memory
    per GPU it lets a job use (what the GPU exposes less the runtime reserve)."""
    question = serving_question_of(request)
    if question is None:
        return None, {}
    fit = serving_fit_current()
    constants = fit.constants if fit is not None else ServingConstants()
    gpus = list(Gpu.objects.curated().with_related().filter(id__in=gpu_ids))
    in_one_server = frozenset(c for c in counts if c <= SERVING_MAX_GPUS)
    answers = serving_answers(
        question=question, gpus=gpus, rented={g.id: in_one_server for g in gpus}, peaks_by_gpu=peaks, fit=fit
    )
    usable = {g.id: constants.usable_bytes(float(g.memory_gib or 0.0)) / GIB for g in gpus}
    return answers, usable


def _mfu_fields(mfu: TrainingMfu | None) -> dict[str, Any]:
    """GpuSpecs' training MFU fields from a stored fit (none: the time model's published fallback)."""
    if mfu is None:
        return {}
    return {
        "training_mfu": mfu.mfu,
        "training_mfu_basis": mfu.basis,
        "training_mfu_runs": mfu.runs,
        "training_mfu_error": mfu.error,
    }


def _llm_usable_gib(*, request: FitRequest, gpus: list[dict[str, Any]]) -> dict[int, float]:
    """Memory per GPU an LLM job the serving answers do not cover may use, as the same model lets
    it: one stream what the GPU exposes less the runtime reserve, batched serving also less the KV
    pool's margin (``ServingConstants.usable_bytes``)."""
    fit = serving_fit_current()
    constants = fit.constants if fit is not None else ServingConstants()
    if request.serving == "single":
        return {g["id"]: stream_usable_bytes(float(g["memory_gib"] or 0.0), constants) / GIB for g in gpus}
    return {g["id"]: constants.usable_bytes(float(g["memory_gib"] or 0.0)) / GIB for g in gpus}


def _job_inputs(
    *, request: FitRequest, gpus: list[dict[str, Any]], rates: Any, counts: tuple[int, ...] = DEFAULT_COUNTS
) -> FitJobInputs:
    """The prices, peaks, measurements and job shape the per-GPU figures need, in a fixed number of queries."""
    model, breakdown = request.model, request.breakdown
    gpu_ids = [g["id"] for g in gpus]
    peaks = _tensor_peaks(gpu_ids=gpu_ids)
    llm_inference = breakdown.is_inference and model.kind == "decoder"
    serving, serving_usable_gib = _serving_inputs(request=request, gpu_ids=gpu_ids, peaks=peaks, counts=counts)
    if llm_inference and serving is None:
        serving_usable_gib = _llm_usable_gib(request=request, gpus=gpus)
    training = breakdown.mode in TRAINING_MODES
    measured = {} if llm_inference else _measurements(gpu_ids=gpu_ids, model=model, breakdown=breakdown)
    mfus = training_mfus() if training else TrainingMfus()
    benchmark = job_benchmark(params=model.compute_params, lora=breakdown.mode in (Mode.LORA, Mode.QLORA))
    specs_by_id = {
        g["id"]: GpuSpecs(
            peaks=peaks.get(g["id"], {}),
            fp32_tflops=g["fp32_tflops"],
            bandwidth_gbs=g["memory_bandwidth_gbs"],
            **_mfu_fields(mfus.for_gpu(g["id"], g["architecture__slug"], benchmark)),
        )
        for g in gpus
    }
    return FitJobInputs(
        peaks=peaks,
        rent=gpu_rent_prices(gpu_ids=gpu_ids, rule=request.price_rule),
        offered=max_count_offered(gpu_ids=gpu_ids),
        purchase_usd={
            gpu_id: (price.usd_now, f"{price.condition} price {price.observed_on:%Y-%m-%d}, {price.source}")
            for gpu_id, price in gpu_purchase_prices(gpu_ids=gpu_ids, condition=request.condition, rates=rates).items()
            if price.usd_now is not None
        },
        training=training,
        llm=llm_job_context(
            model=model,
            breakdown=breakdown,
            serving=request.serving,
            users=request.users,
            gpu_ids=gpu_ids,
            input_len=request.input_len,
            output_len=request.output_len,
        )
        if llm_inference
        else None,
        measured=measured,
        serving=serving,
        serving_usable_gib=serving_usable_gib,
        multi_gpu=multi_gpu_by_gpu(gpu_ids=gpu_ids) if training else {},
        specs_by_id=specs_by_id,
        job=TrainingJob(
            tokens_per_step=breakdown.batch * breakdown.context,
            weight_bytes=breakdown.weights_gib * GIB,
            gradient_bytes=breakdown.gradients_gib * GIB,
            layers=model.layers,
            hidden=model.hidden,
            checkpointing=breakdown.activation_checkpointing,
        ),
    )


@dataclass(frozen=True)
class GpuRates:
    """One GPU's throughput for the job: the figure of the fewest GPUs, and the rate of each count."""

    unit: str
    per_s: float | None
    basis: str  # a Basis; CountRate's basis is a plain string
    note: str
    typical_error: float | None
    count_rates: dict[int, CountRate]
    measured_llm: LlmMeasured | None = None


def _llm_rates(
    *, request: FitRequest, inputs: FitJobInputs, llm: LlmJobContext, gpu: dict[str, Any], counts: tuple[int, ...]
) -> GpuRates:
    """LLM inference: batched serving from the serving model's answers (the rankings' figures),
    one stream and a fixed number of users from the same model (fitcalc.llm), one stream anchored on measurements."""
    if inputs.serving is not None and gpu["id"] in inputs.serving:
        return _serving_rates(inputs.serving[gpu["id"]], counts=counts)
    gpu_peaks = inputs.peaks.get(gpu["id"], {})
    precision = request.breakdown.precision.value
    job_facts = llm_job_facts(
        job=llm,
        gpu_id=gpu["id"],
        gpu=llm_gpu(row=gpu, peaks=gpu_peaks),
        counts=counts,
        no_bf16=precision == "bf16" and "bf16" in gpu_peaks and gpu_peaks["bf16"] is None,
    )
    count_rates = job_facts.count_rates
    first = _first_rate(count_rates, per_gpu=llm.mode != "single")
    return GpuRates(
        unit="tokens/s",
        per_s=first.per_s if first else None,
        basis=first.basis if first else "none",
        note=first.note if first else next(iter(count_rates.values())).note,
        typical_error=first.typical_error if first else None,
        count_rates=count_rates,
        measured_llm=job_facts.measured,
    )


def _serving_rates(answers: GpuAnswers, *, counts: tuple[int, ...]) -> GpuRates:
    """Each count's tokens/s (all its GPUs together) as the serving model answers it: the best
    tensor-parallel split at maximum throughput, measured at this workload or anchored."""
    by_count = {a.gpu_count: a for a in answers.by_count}
    count_rates: dict[int, CountRate] = {}
    for count in counts:
        scaling = "single" if count == 1 else "tensor-parallel"
        answer = by_count.get(count)
        if count > SERVING_MAX_GPUS:
            count_rates[count] = CountRate(None, "none", scaling, _("tensor parallelism stays within one server"))
        elif answer is None or answer.tokens_per_s_per_gpu is None:
            why = answers.not_fitting_reason or _("the serving model has no figure for this count")
            count_rates[count] = CountRate(None, "none", scaling, why)
        else:
            count_rates[count] = CountRate(
                answer.tokens_per_s_per_gpu * count,
                "measured" if answer.basis == MEASURED else "estimated",
                scaling,
                answer.source,
                None if answer.error_pct is None else answer.error_pct / 100,
                () if answer.inside else (_("outside the measured range"),),
                "single" if answer.tp == 1 else f"tp{answer.tp}",
            )
    first = _first_rate(count_rates, per_gpu=True)
    return GpuRates(
        unit="tokens/s",
        per_s=first.per_s if first else None,
        basis=first.basis if first else "none",
        note=first.note if first else next(iter(count_rates.values())).note,
        typical_error=first.typical_error if first else None,
        count_rates=count_rates,
    )


def _other_rates(
    *, request: FitRequest, inputs: FitJobInputs, gpu: dict[str, Any], memory: float, counts: tuple[int, ...]
) -> GpuRates:
    """Training and non-LLM inference: one GPU's rate by one method; training's counts priced over the link."""
    breakdown = request.breakdown
    throughput = throughput_resolve(
        model=request.model,
        breakdown=breakdown,
        specs=inputs.specs_by_id[gpu["id"]],
        measured=inputs.measured.get(gpu["id"], GpuMeasurements()),
    )
    count_rates: dict[int, CountRate] = {}
    if inputs.training:
        figures = inputs.multi_gpu.get(gpu["id"], MultiGpuFigures())
        link = catalogue_link(gpu)
        count_rates = training_count_rates(
            per_gpu=_within(throughput.per_s, low=0, high=_MAX_THROUGHPUT),
            basis=throughput.basis,
            counts=counts,
            job=inputs.job,
            link=link_figures(link=link, allreduce=figures.allreduce, training=figures.training, counts=counts),
            fits_whole=breakdown.total_gib <= memory,
            typical_error=throughput.typical_error,
            note=throughput.note,
        )
    return GpuRates(
        unit=throughput.unit,
        per_s=throughput.per_s,
        basis=throughput.basis,
        note=throughput.note,
        typical_error=throughput.typical_error,
        count_rates=count_rates,
    )


def _bounded_rates(count_rates: dict[int, CountRate]) -> dict[int, CountRate]:
    """Each count's rate, with a figure out of GpuFacts' bounds dropped (its scaling and note kept)."""
    return {
        count: rate if rate.per_s is None or _within(rate.per_s, low=0, high=_MAX_THROUGHPUT) else
        CountRate(None, "none", rate.scaling, rate.note)
        for count, rate in count_rates.items()
    }  # fmt: skip


def _gpu_facts(
    *, request: FitRequest, inputs: FitJobInputs, money: Money, gpu: dict[str, Any], memory: float, rates: GpuRates
) -> tuple[GpuFacts, GpuDetail]:
    """One GPU's facts for the plan and the detail shown beside it, in the request's currency."""
    per_s = _within(rates.per_s, low=0, high=_MAX_THROUGHPUT)
    basis = rates.basis if per_s is not None else "none"
    purchase, purchase_source = inputs.purchase_usd.get(gpu["id"], (None, ""))
    if purchase is None and request.condition == "new" and gpu["launch_price_usd"]:
        purchase, purchase_source = float(gpu["launch_price_usd"]), _("launch price")
    gpu_rent = inputs.rent.get(gpu["id"])
    measured_llm = rates.measured_llm
    facts = GpuFacts(
        slug=gpu["slug"],
        name=gpu_display_name(name=gpu["name"], name_zh=gpu["name_zh"]),
        memory_gib=memory,
        throughput_per_s=per_s,
        throughput_is_estimate=rates.basis == "estimated",
        price_per_gpu_hour=money(gpu_rent.price_usd, _MAX_PRICE_PER_HOUR) if gpu_rent else None,
        purchase_price=money(purchase, _MAX_PURCHASE),
        tdp_w=_within(float(gpu["tdp_w"]) if gpu["tdp_w"] else None, low=0, high=_MAX_TDP),
        throughput_basis=basis,
        count_rates=_bounded_rates(rates.count_rates),
        max_count_offered=inputs.offered.get(gpu["id"]),
    )
    detail = GpuDetail(
        slug=gpu["slug"],
        name=gpu_display_name(name=gpu["name"], name_zh=gpu["name_zh"]),
        throughput_unit=rates.unit,
        throughput_basis=cast(Basis, basis),
        throughput_note=rates.note,
        purchase_price_source=purchase_source,
        throughput_typical_error=rates.typical_error,
        price=_price_origin(gpu_rent, money) if gpu_rent and money.units_per_usd is not None else None,
        measured_source=measured_llm.source if measured_llm else "",
        measured_url=measured_llm.url if measured_llm else "",
        measured_n=measured_llm.n if measured_llm else None,
    )
    return facts, detail


def _lacking_warning(*, precision: str, lacking: list[str]) -> str:
    return _("Not offered: %(count)d GPUs that cannot train in %(format)s natively (%(names)s).") % {
        "count": len(lacking),
        "format": PRECISION_NAMES.get(precision, precision.upper()),
        "names": ", ".join(lacking),
    }


def fit_gpu_facts_list(*, request: FitRequest, counts: tuple[int, ...] = DEFAULT_COUNTS) -> FitGpuFacts:
    """Every curated GPU with a memory size, as plain facts in the request's currency, in a fixed
    number of queries.

    Money: the rental price per GPU-hour by ``request.price_rule`` with its provenance, and the
    newest ``request.condition`` purchase price (new cards without one: the launch price),
    converted from USD at the newest exchange rate. Without a rate for the currency, prices are
    left out and ``warnings`` says so. Throughput: see the module docstring.
    """
    gpus = list(Gpu.objects.curated().filter(memory_gib__gt=0).order_by("name").values(*GPU_COLUMNS))
    rates = exchange_rates()
    inputs = _job_inputs(request=request, gpus=gpus, rates=rates, counts=counts)
    money = _money(currency=request.currency, rates=rates)
    warnings: list[str] = []
    if money.units_per_usd is None:
        warnings.append(
            _("no exchange rate for %(currency)s: prices and costs are left out") % {"currency": request.currency}
        )
    precision = request.breakdown.precision.value
    facts: list[GpuFacts] = []
    details: dict[str, GpuDetail] = {}
    lacking: list[str] = []
    for gpu in gpus:
        # A served model fits in what the serving model lets it use, as on the rankings.
        memory = _within(inputs.serving_usable_gib.get(gpu["id"], gpu["memory_gib"]), low=0, high=_MAX_MEMORY_GIB)
        if memory is None:
            continue
        if inputs.training and _lacks_format(precision, gpu, inputs.peaks.get(gpu["id"], {})):
            lacking.append(gpu_display_name(name=gpu["name"], name_zh=gpu["name_zh"]))
            continue
        gpu_rates = (
            _llm_rates(request=request, inputs=inputs, llm=inputs.llm, gpu=gpu, counts=counts)
            if inputs.llm is not None
            else _other_rates(request=request, inputs=inputs, gpu=gpu, memory=memory, counts=counts)
        )
        gpu_facts, detail = _gpu_facts(
            request=request, inputs=inputs, money=money, gpu=gpu, memory=memory, rates=gpu_rates
        )
        facts.append(gpu_facts)
        details[gpu["slug"]] = detail
    if lacking:
        warnings.append(_lacking_warning(precision=precision, lacking=lacking))
    return FitGpuFacts(
        gpus=facts,
        details=details,
        currency=request.currency,
        exchange_rate=money.exchange_rate,
        warnings=warnings,
        llm=inputs.llm,
    )
