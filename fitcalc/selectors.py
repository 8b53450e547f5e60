"""Reads for the fit calculator: the GPUs as :class:`fitcalc.plan.GpuFacts`, and the whole answer.

``fit_gpu_facts_list`` reads every curated GPU with a memory size, its cheapest current on-demand
price per GPU-hour (``catalog.selectors_prices.cheapest_price_per_gpu``), its purchase price,
TDP, and its throughput in the job's unit, in a fixed number of queries (seven, whatever the
number of GPUs). ``fit_compute`` adds the pure calculation (fit, time, cost, buy versus rent).

Throughput of one GPU (tokens/s for transformers, samples/s for image models)
--------------------------------------------------------------------------------
In order of preference; ``throughput_basis`` says which one was used.

1. ``measured``: a Lambda training result for the same model (ResNet-50 -> ``resnet50``,
   BERT-Large -> ``bert_large_squad``; full fine-tuning and training modes; Lambda's FP16 runs
   for BF16/FP16, FP32 for FP32; single-GPU configurations). BERT's sequences/s become tokens/s
   as sequences/s x ``context`` (Lambda measured SQuAD fine-tuning at its own sequence length, so
   other contexts are approximate).
2. ``measured-scaled``: the client's ``transformer-train`` / ``transformer-infer`` benchmark (one
   GPT block in BF16, tokens/s). Its achieved FLOP rate is ``tokens/s x block FLOP per token``
   (the client's formula: forward ``2 x (4 d^2 + 2 d d_ff) + 2 x seq x d``, x3 for training),
   and the model runs at ``achieved FLOP rate / model FLOP per token``. Used for BF16/FP16 and for
   INT8/INT4 weights (weight-only quantised layers compute in 16-bit).
3. ``estimated`` from the spec sheet: ``ACHIEVABLE_COMPUTE_FRACTION x dense tensor peak / model
   FLOP per token``. The peak is the TensorPeak of the compute precision: BF16 or FP16 as chosen;
   TF32 for FP32 (seed 000: PyTorch enables TF32 on Ampere by default), else the non-tensor FP32
   figure; BF16 (else FP16) for INT8/INT4 weights.

Model FLOP per token (Kaplan et al. 2020, arXiv:2001.08361, Table 1): forward ``2 P + 2 L s
d_attn`` (``d_attn`` = heads x head dim; the second term only when the shapes are known),
training three times that (forward + backward), i.e. the familiar ``6 P`` plus attention.
LoRA and QLoRA are counted as full training FLOP, an upper bound (frozen weights need no weight
gradients).

Decoder inference is also bounded by memory bandwidth: every generated token reads the weights
and the KV cache once per step of ``batch`` sequences, so ``tokens/s <= batch x bandwidth /
(weight bytes + KV cache bytes)`` (the cache at full context: an upper bound on the bytes read).
Bandwidth is the measured ``membw-copy`` figure where there is one, else
``ACHIEVABLE_BANDWIDTH_FRACTION`` x the spec sheet's. The rate is the smaller of the compute and
the bandwidth bounds; when the bandwidth bound decides, the figure is an ``estimated`` one.

Image models (CNN, diffusion) have no spec-sheet estimate: their FLOP per sample depends on the
input resolution, which the calculator does not take. They show fit and memory only, unless a
Lambda measurement applies.

Constants
---------
* ``ACHIEVABLE_COMPUTE_FRACTION`` = 0.40: model FLOP utilisation of large BF16 training runs; the
  Llama 3 paper (arXiv:2407.21783, Table 4) reports 38-43% on H100s.
* ``ACHIEVABLE_BANDWIDTH_FRACTION`` = 0.80: an assumption (copy kernels reach roughly 80-90% of
  the spec sheet's bandwidth); replaced by the measured ``membw-copy`` where available.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Literal

from django.db.models import Q

from benchmarks_app.models import BenchmarkResult, ResultAggregate
from catalog.models import Gpu, PurchasePrice, TensorPeak
from catalog.selectors_prices import cheapest_price_per_gpu, display_rate
from catalog.services.prices.currency import NoExchangeRate, RateBook
from fitcalc.forms import FitRequest
from fitcalc.memory import GIB, TRAINING_MODES, MemoryBreakdown, Mode
from fitcalc.plan import MAX_HOURS, SCALING_EFFICIENCY_PER_DOUBLING, BuyVsRent, GpuFacts, GpuPlan, buy_vs_rent, fit_plan
from fitcalc.presets import ModelSpec

ACHIEVABLE_COMPUTE_FRACTION = 0.40
ACHIEVABLE_BANDWIDTH_FRACTION = 0.80
MIN_COMMUNITY_N = 3  # as dashboard.metrics: an aggregate counts with a lab result or >= 3 community results
BUY_VS_RENT_TOP = 5

TRANSFORMER_TRAIN = "transformer-train"
TRANSFORMER_INFER = "transformer-infer"
MEMBW_COPY = "membw-copy"
#: Lambda training workloads that measure a preset's own model.
LAMBDA_WORKLOAD_FOR_PRESET = {"resnet-50": "resnet50", "bert-large": "bert_large_squad"}
LAMBDA_MODES = frozenset({Mode.FULL_FINETUNE, Mode.TRAIN})
LAMBDA_PRECISION = {"bf16": "fp16", "fp16": "fp16", "fp32": "fp32"}
#: Precisions of the TensorPeak used for the compute bound ("fp32_nontensor" = Gpu.fp32_tflops).
COMPUTE_PEAKS: dict[str, tuple[str, ...]] = {
    "fp32": ("tf32", "fp32_nontensor"),
    "bf16": ("bf16",),
    "fp16": ("fp16",),
    "int8": ("bf16", "fp16"),
    "int4": ("bf16", "fp16"),
}
#: Precisions for which the BF16 transformer-block measurement stands for the compute rate.
BLOCK_MEASUREMENT_PRECISIONS = frozenset({"bf16", "fp16", "int8", "int4"})

# GpuFacts bounds (fitcalc.plan checks them): values outside are dropped, never passed on.
_MAX_MEMORY_GIB = 1e5
_MAX_THROUGHPUT = 1e15
_MAX_PRICE_PER_HOUR = 1e5
_MAX_PURCHASE = 1e8
_MAX_TDP = 1e5

Basis = Literal["measured", "measured-scaled", "estimated", "none"]


# --- pure arithmetic -------------------------------------------------------------------------


def model_flops_per_token(*, model: ModelSpec, context: int, training: bool) -> float:
    """Kaplan et al.'s FLOP per token: forward ``2P + 2 L s d_attn``; training x3."""
    forward = 2.0 * model.params
    if model.layers and model.heads and model.head_dim:
        forward += 2.0 * model.layers * context * model.heads * model.head_dim
    return forward * (3 if training else 1)


def block_flops_per_token(*, params: Mapping[str, Any], training: bool) -> float | None:
    """FLOP per token of the client's transformer block at its recorded shapes (None if unknown)."""
    try:
        d, d_ff, seq = int(params["d_model"]), int(params["d_ff"]), int(params["seq_len"])
    except (KeyError, TypeError, ValueError):
        return None
    if min(d, d_ff, seq) <= 0:
        return None
    forward = 2.0 * (4 * d * d + 2 * d * d_ff) + 2.0 * seq * d
    return forward * (3 if training else 1)


@dataclass(frozen=True)
class GpuSpecs:
    """Spec-sheet figures of one GPU: dense tensor peaks by precision (None: unsupported)."""

    peaks: Mapping[str, float | None]
    fp32_tflops: float | None
    bandwidth_gbs: float | None


@dataclass(frozen=True)
class GpuMeasurements:
    """What the benchmarks measured on one GPU, already reduced to rates."""

    train_flops: float | None = None  # achieved FLOP/s of the transformer-train block
    infer_flops: float | None = None  # achieved FLOP/s of the transformer-infer block
    bandwidth_gbs: float | None = None  # membw-copy
    lambda_per_s: Mapping[str, float] = field(default_factory=dict)  # lambda precision -> items/s


@dataclass(frozen=True)
class Throughput:
    per_s: float | None
    unit: str
    basis: Basis
    note: str

    @property
    def is_estimate(self) -> bool:
        return self.basis == "estimated"


def _compute_peak_flops(specs: GpuSpecs, precision: str) -> tuple[float | None, str]:
    """FLOP/s of the compute precision's dense peak and the peak's name; (None, why) if unknown."""
    for key in COMPUTE_PEAKS[precision]:
        if key == "fp32_nontensor":
            if specs.fp32_tflops:
                return specs.fp32_tflops * 1e12, "FP32 (non-tensor)"
            continue
        if key in specs.peaks:
            value = specs.peaks[key]
            if value:
                return value * 1e12, key.upper()
            if precision == key:
                return None, f"this GPU has no {key.upper()} support"
    return None, "no dense tensor peak on record for " + "/".join(k.upper() for k in COMPUTE_PEAKS[precision])


def throughput_resolve(
    *,
    model: ModelSpec,
    breakdown: MemoryBreakdown,
    specs: GpuSpecs,
    measured: GpuMeasurements,
) -> Throughput:
    """One GPU's rate for this job, per the module docstring (pure: plain data in)."""
    mode, precision = breakdown.mode, breakdown.precision.value
    context, batch = breakdown.context, breakdown.batch
    training = mode in TRAINING_MODES
    transformer = model.kind in ("decoder", "encoder")
    unit = "tokens/s" if transformer else "samples/s"

    if precision == "bf16" and "bf16" in specs.peaks and specs.peaks["bf16"] is None:
        # V100 and older: BF16 is emulated, not run on tensor cores; no figure stands for it.
        return Throughput(None, unit, "none", "this GPU has no BF16 support: choose FP16")
    lambda_precision = LAMBDA_PRECISION.get(precision)
    if model.slug in LAMBDA_WORKLOAD_FOR_PRESET and mode in LAMBDA_MODES and lambda_precision:
        per_s = measured.lambda_per_s.get(lambda_precision)
        if per_s:
            workload = LAMBDA_WORKLOAD_FOR_PRESET[model.slug]
            if transformer:
                return Throughput(
                    per_s * context,
                    unit,
                    "measured",
                    f"Lambda {workload} {lambda_precision.upper()}: {per_s:g} sequences/s x {context} tokens",
                )
            return Throughput(
                per_s, unit, "measured", f"Lambda {workload} {lambda_precision.upper()}: {per_s:g} samples/s"
            )

    if not transformer:
        return Throughput(
            None,
            unit,
            "none",
            "no measurement for this model; image models need FLOP per sample, which depend on the input size",
        )
    if model.params <= 0:
        return Throughput(None, unit, "none", "no parameters")

    flops_per_token = model_flops_per_token(model=model, context=context, training=training)
    block_rate = measured.train_flops if training else measured.infer_flops
    if block_rate and precision in BLOCK_MEASUREMENT_PRECISIONS:
        compute = block_rate / flops_per_token
        basis: Basis = "measured-scaled"
        note = (
            f"{TRANSFORMER_TRAIN if training else TRANSFORMER_INFER} block measured at {block_rate / 1e12:.1f} TFLOP/s, "
            f"scaled to {flops_per_token / 1e9:.1f} GFLOP per token"
        )
    else:
        peak, peak_name = _compute_peak_flops(specs, precision)
        if peak is None:
            return Throughput(None, unit, "none", peak_name)
        compute = ACHIEVABLE_COMPUTE_FRACTION * peak / flops_per_token
        basis = "estimated"
        note = (
            f"{ACHIEVABLE_COMPUTE_FRACTION:.0%} of the {peak_name} dense peak ({peak / 1e12:g} TFLOPS) "
            f"/ {flops_per_token / 1e9:.1f} GFLOP per token"
        )

    if mode is Mode.INFERENCE and model.kind == "decoder":
        step_bytes = (breakdown.weights_gib + breakdown.kv_cache_gib) * GIB
        if measured.bandwidth_gbs:
            bandwidth, how = measured.bandwidth_gbs * 1e9, f"measured copy bandwidth {measured.bandwidth_gbs:g} GB/s"
        elif specs.bandwidth_gbs:
            bandwidth = ACHIEVABLE_BANDWIDTH_FRACTION * specs.bandwidth_gbs * 1e9
            how = f"{ACHIEVABLE_BANDWIDTH_FRACTION:.0%} of {specs.bandwidth_gbs:g} GB/s"
        else:
            return Throughput(None, unit, "none", "no memory bandwidth on record to bound decoding")
        if step_bytes > 0:
            decode = batch * bandwidth / step_bytes
            if decode < compute:
                return Throughput(
                    decode,
                    unit,
                    "estimated",
                    f"decoding bound by memory: {batch} x {how} / {step_bytes / 1e9:.1f} GB read per step",
                )
    return Throughput(compute, unit, basis, note)


def _within(value: float | None, *, low: float, high: float, inclusive_low: bool = False) -> float | None:
    if value is None or not math.isfinite(value):
        return None
    if value < low or (value == low and not inclusive_low) or value > high:
        return None
    return value


# --- reads -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class GpuDetail:
    """What the page and the API show beside a GPU's plan: where its figures come from."""

    slug: str
    name: str
    throughput_unit: str
    throughput_basis: Basis
    throughput_note: str
    purchase_price_source: str


@dataclass(frozen=True)
class FitGpuFacts:
    gpus: list[GpuFacts]
    details: dict[str, GpuDetail]
    currency: str
    exchange_rate: dict[str, Any] | None
    warnings: list[str]


def _measurements(*, gpu_ids: list[int], model: ModelSpec, breakdown: MemoryBreakdown) -> dict[int, GpuMeasurements]:
    """Per GPU: achieved block FLOP rates, copy bandwidth, Lambda rates. Two queries."""
    training = breakdown.mode in TRAINING_MODES
    slugs = [TRANSFORMER_TRAIN] if training else [TRANSFORMER_INFER, MEMBW_COPY]
    lambda_slug = LAMBDA_WORKLOAD_FOR_PRESET.get(model.slug) if breakdown.mode in LAMBDA_MODES else None
    if lambda_slug:
        slugs.append(lambda_slug)
    rows: list[dict[str, Any]] = [
        dict(row)
        for row in ResultAggregate.objects.filter(gpu_id__in=gpu_ids, gpu_count=1, workload__slug__in=slugs)
        .filter(Q(has_lab=True) | Q(n__gte=MIN_COMMUNITY_N))
        .order_by()
        .values("gpu_id", "workload__slug", "workload__version", "precision", "median", "n", "comparison_key")
    ]
    block_keys = {r["comparison_key"] for r in rows if r["workload__slug"] in (TRANSFORMER_TRAIN, TRANSFORMER_INFER)}
    shapes: dict[str, dict[str, Any]] = {}
    if block_keys:
        for key, params in (
            BenchmarkResult.objects.filter(comparison_key__in=block_keys)
            .order_by()
            .values_list("comparison_key", "params")
        ):
            if isinstance(params, dict):
                shapes.setdefault(key, params)

    best: dict[tuple[int, str, str], dict[str, Any]] = {}
    for row in rows:
        slug = row["workload__slug"]
        pick = (row["gpu_id"], slug, row["precision"] if slug == lambda_slug else "")
        if slug in (TRANSFORMER_TRAIN, TRANSFORMER_INFER) and row["precision"] != "bf16":
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
        elif slug == MEMBW_COPY:
            entry["bandwidth_gbs"] = row["median"]
        else:
            block = block_flops_per_token(
                params=shapes.get(row["comparison_key"], {}), training=slug == TRANSFORMER_TRAIN
            )
            if block is not None:
                entry["train_flops" if slug == TRANSFORMER_TRAIN else "infer_flops"] = row["median"] * block
    return {gpu_id: GpuMeasurements(**entry) for gpu_id, entry in found.items()}


def _purchase_prices_usd(*, gpu_ids: list[int], condition: str, rates: RateBook) -> dict[int, tuple[float, str]]:
    """gpu id -> (USD at the newest rate, source): the newest purchase price of that condition. One query."""
    out: dict[int, tuple[float, str]] = {}
    rows = (
        PurchasePrice.objects.filter(gpu_id__in=gpu_ids, condition=condition)
        .order_by("gpu_id", "-observed_on")
        .values("gpu_id", "price", "currency", "observed_on", "source")
    )
    for row in rows:
        if row["gpu_id"] in out:
            continue
        try:
            usd = rates.to_usd(row["price"], row["currency"])
        except NoExchangeRate:
            continue
        out[row["gpu_id"]] = (float(usd), f"{condition} price {row['observed_on']:%Y-%m-%d}, {row['source']}")
    return out


def fit_gpu_facts_list(
    *, model: ModelSpec, breakdown: MemoryBreakdown, condition: str = "new", currency: str = "USD"
) -> FitGpuFacts:
    """Every curated GPU with a memory size, as plain facts in ``currency``, in seven queries.

    Money: the cheapest current on-demand price per GPU-hour and the newest ``condition``
    purchase price (new cards without one: the launch price), converted from USD at the newest
    exchange rate. Without a rate for ``currency``, prices are left out and ``warnings`` says so.
    Throughput: see the module docstring.
    """
    gpus = list(
        Gpu.objects.curated()
        .filter(memory_gib__gt=0)
        .order_by("name")
        .values("id", "slug", "name", "memory_gib", "memory_bandwidth_gbs", "tdp_w", "fp32_tflops", "launch_price_usd")
    )
    gpu_ids = [g["id"] for g in gpus]
    peaks: dict[int, dict[str, float | None]] = {}
    for row in (
        TensorPeak.objects.filter(gpu_id__in=gpu_ids)
        .order_by()
        .values("gpu_id", "precision", "supported", "dense_tflops")
    ):
        peaks.setdefault(row["gpu_id"], {})[row["precision"]] = row["dense_tflops"] if row["supported"] else None
    rent_usd = cheapest_price_per_gpu(spot=False)
    rates = RateBook.load()
    purchase_usd = _purchase_prices_usd(gpu_ids=gpu_ids, condition=condition, rates=rates)
    measured = _measurements(gpu_ids=gpu_ids, model=model, breakdown=breakdown)

    warnings: list[str] = []
    rate = display_rate(currency=currency, rates=rates)
    units_per_usd: float | None = None if rate["missing"] else float(rate["units_per_usd"])
    if units_per_usd is None:
        warnings.append(f"no exchange rate for {currency}: prices and costs are left out")
    exchange = (
        None
        if currency == "USD" or units_per_usd is None
        else {"units_per_usd": units_per_usd, "date": rate["rate_date"], "source": rate["source"]}
    )

    def money(usd: float | Decimal | None, high: float) -> float | None:
        if usd is None or units_per_usd is None:
            return None
        return _within(float(usd) * units_per_usd, low=0, high=high)

    facts: list[GpuFacts] = []
    details: dict[str, GpuDetail] = {}
    for gpu in gpus:
        memory = _within(gpu["memory_gib"], low=0, high=_MAX_MEMORY_GIB)
        if memory is None:
            continue
        specs = GpuSpecs(
            peaks=peaks.get(gpu["id"], {}), fp32_tflops=gpu["fp32_tflops"], bandwidth_gbs=gpu["memory_bandwidth_gbs"]
        )
        throughput = throughput_resolve(
            model=model, breakdown=breakdown, specs=specs, measured=measured.get(gpu["id"], GpuMeasurements())
        )
        per_s = _within(throughput.per_s, low=0, high=_MAX_THROUGHPUT)
        purchase, purchase_source = purchase_usd.get(gpu["id"], (None, ""))
        if purchase is None and condition == "new" and gpu["launch_price_usd"]:
            purchase, purchase_source = float(gpu["launch_price_usd"]), "launch price"
        facts.append(
            GpuFacts(
                slug=gpu["slug"],
                name=gpu["name"],
                memory_gib=memory,
                throughput_per_s=per_s,
                throughput_is_estimate=throughput.is_estimate,
                price_per_gpu_hour=money(rent_usd.get(gpu["id"]), _MAX_PRICE_PER_HOUR),
                purchase_price=money(purchase, _MAX_PURCHASE),
                tdp_w=_within(float(gpu["tdp_w"]) if gpu["tdp_w"] else None, low=0, high=_MAX_TDP),
            )
        )
        details[gpu["slug"]] = GpuDetail(
            slug=gpu["slug"],
            name=gpu["name"],
            throughput_unit=throughput.unit,
            throughput_basis=throughput.basis if per_s is not None else "none",
            throughput_note=throughput.note,
            purchase_price_source=purchase_source,
        )
    return FitGpuFacts(gpus=facts, details=details, currency=currency, exchange_rate=exchange, warnings=warnings)


# --- the whole answer ------------------------------------------------------------------------


@dataclass(frozen=True)
class BuyRentRow:
    """Buy versus rent of one GPU (per GPU; a plan on n GPUs costs n times both)."""

    slug: str
    name: str
    gpus_needed: int | None
    result: BuyVsRent | None
    notes: tuple[str, ...]


@dataclass(frozen=True)
class FitResult:
    request: FitRequest
    plans: list[GpuPlan]
    details: dict[str, GpuDetail]
    buy_vs_rent: list[BuyRentRow]
    currency: str
    exchange_rate: dict[str, Any] | None
    warnings: list[str]

    @property
    def fitting(self) -> list[GpuPlan]:
        return [plan for plan in self.plans if plan.gpus_needed is not None]

    @property
    def not_fitting(self) -> list[GpuPlan]:
        return [plan for plan in self.plans if plan.gpus_needed is None]

    @property
    def fitting_rows(self) -> list[tuple[GpuPlan, GpuDetail]]:
        """Fitting plans in rank order, each with its GPU's detail (for templates)."""
        return [(plan, self.details[plan.gpu.slug]) for plan in self.fitting]

    @property
    def assumptions(self) -> dict[str, float]:
        return {
            "achievable_compute_fraction": ACHIEVABLE_COMPUTE_FRACTION,
            "achievable_bandwidth_fraction": ACHIEVABLE_BANDWIDTH_FRACTION,
            "scaling_efficiency_per_doubling": SCALING_EFFICIENCY_PER_DOUBLING,
            "max_hours": MAX_HOURS,
        }


def _buy_vs_rent_rows(*, request: FitRequest, plans: list[GpuPlan]) -> list[BuyRentRow]:
    rows = []
    for plan in [p for p in plans if p.gpus_needed is not None][:BUY_VS_RENT_TOP]:
        gpu = plan.gpu
        notes: list[str] = []
        if gpu.purchase_price is None:
            notes.append(f"no {request.condition} purchase price on record")
        if gpu.price_per_gpu_hour is None or gpu.price_per_gpu_hour <= 0:
            notes.append("no current on-demand rental price")
        if notes:
            rows.append(BuyRentRow(gpu.slug, gpu.name, plan.gpus_needed, None, tuple(notes)))
            continue
        assert gpu.purchase_price is not None and gpu.price_per_gpu_hour is not None
        if gpu.tdp_w is None:
            notes.append("no TDP on record: power is not counted")
        if request.electricity_price_per_kwh is None:
            notes.append("no electricity price given: power is not counted")
        result = buy_vs_rent(
            purchase_price=gpu.purchase_price,
            power_w=gpu.tdp_w or 0.0,
            electricity_price_per_kwh=request.electricity_price_per_kwh or 0.0,
            hours_per_day=request.hours_per_day,
            rent_prices_per_hour=[gpu.price_per_gpu_hour],
        )
        rows.append(BuyRentRow(gpu.slug, gpu.name, plan.gpus_needed, result, tuple(notes)))
    return rows


def fit_compute(*, request: FitRequest) -> FitResult:
    """Fit, time and cost of ``request`` on every curated GPU at 1, 2, 4 and 8 GPUs, ranked,
    with buy versus rent for the best few. A fixed number of queries (see fit_gpu_facts_list).
    Raises FitInputError only for inputs the form could not check alone."""
    facts = fit_gpu_facts_list(
        model=request.model, breakdown=request.breakdown, condition=request.condition, currency=request.currency
    )
    plans = fit_plan(
        breakdown=request.breakdown,
        gpus=facts.gpus,
        work_units=request.work.work_units if request.work else None,
    )
    return FitResult(
        request=request,
        plans=plans,
        details=facts.details,
        buy_vs_rent=_buy_vs_rent_rows(request=request, plans=plans),
        currency=facts.currency,
        exchange_rate=facts.exchange_rate,
        warnings=facts.warnings,
    )
