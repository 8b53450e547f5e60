"""LLM training plans for catalogue GPUs: the time model on each GPU's stored figures (dense peak,
the MFU of its own MLPerf Training runs, else its architecture's, else every run's, scale-up link)
and its rental price. The fit calculator's rates on one node
(:func:`fitcalc.throughput.throughput_resolve`) and its plans past one node read the same figures and the same peak rule
(:func:`fitcalc.throughput.training_peak`), so both answer with one model."""

from __future__ import annotations

from dataclasses import dataclass

from benchmarks_app.selectors import TrainingMfu, job_benchmark, training_mfus
from catalog.interconnect import pcie_peak_gbs
from catalog.models import Gpu, TensorPeak
from catalog.models.gpus import gpu_display_name
from catalog.selectors.prices import gpu_rent_prices
from fitcalc.throughput import TRAINING_PEAK_PRECISIONS, training_peak, training_peak_formats
from fitcalc.training_time import (
    DEFAULT_BATCH_TOKENS,
    Cluster,
    Job,
    TrainingTime,
    gpus_for_days,
    model_parallel_min,
    nodes_for_gpus,
    training_time,
)

#: A GPU's scale-out port when the plan names none: 400 Gb/s (InfiniBand NDR or 400G RoCE, one
#: port per GPU as on NVIDIA's DGX H100/B200 and AMD's MI300X platforms) = 50 GB/s.
DEFAULT_SCALE_OUT_GBS = 50.0
#: GPUs per node when the catalogue says none: the 8-GPU baseboard (HGX, OAM).
DEFAULT_GPUS_PER_NODE = 8


class TrainingPlanError(ValueError):
    """A plan that cannot be made: the field it is about and why."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


@dataclass(frozen=True)
class TrainingPlan:
    gpu_slug: str
    gpu_name: str
    precision: str  # the format of the peak (the job's; FP8 where the GPU has it when none is asked)
    peak_tflops: float
    mfu: float
    mfu_basis: str  # "gpu": its own MLPerf Training runs; "architecture"; "pooled"
    mfu_runs: int
    nodes: int
    gpus_per_node: int
    model_parallel: int
    zero3: bool
    time: TrainingTime
    price_per_gpu_hour: float | None  # on-demand: typical USD from training_plan, the caller's else

    @property
    def cost(self) -> float | None:
        return None if self.price_per_gpu_hour is None else self.time.gpu_hours * self.price_per_gpu_hour


def _scale_up_gbs(gpu: Gpu) -> float | None:
    """One direction of the link between GPUs of a node, GB/s: the scale-up link (its catalogue
    figure is both directions together), else the PCIe bus, halved without peer-to-peer copies
    (the traffic crosses host memory: down one bus and up another)."""
    if gpu.interconnect_gbs and gpu.scale_up_link not in ("pcie", "none", ""):
        return gpu.interconnect_gbs / 2
    pcie = pcie_peak_gbs(gpu.bus_interface)
    if pcie is None:
        return None
    return pcie / 2 if gpu.pcie_peer_to_peer is False else pcie


@dataclass(frozen=True)
class _GpuFigures:
    """What the time model reads of one GPU, fetched once for one GPU or many."""

    gpu: Gpu
    peaks: dict[str, float | None]
    mfu: TrainingMfu | None


def _plan(
    figures: _GpuFigures,
    *,
    params: float,
    tokens: float,
    lora: bool,
    days: float | None,
    gpus: int | None,
    scale_out_gbs: float,
    batch_tokens: float,
    price_per_gpu_hour: float | None,
    precision: str | None = None,
    checkpointing: bool = False,
) -> TrainingPlan | None:
    """The plan on one GPU's fetched figures (training_plan's answer); no query."""
    gpu = figures.gpu
    chosen = training_peak(figures.peaks, precision)
    if chosen is None:
        wanted = "/".join(k.upper() for k in training_peak_formats(precision))
        raise TrainingPlanError("gpu", f"{gpu.name} has no {wanted} dense peak on record")
    peak_format, peak = chosen
    if figures.mfu is None:
        raise TrainingPlanError("gpu", "no MLPerf Training runs are imported: run import_mlperf_training")
    mfu = figures.mfu.mfu
    if not gpu.memory_gib:
        raise TrainingPlanError("gpu", f"{gpu.name} has no memory size on record")
    per_node = gpu.scale_up_gpus or DEFAULT_GPUS_PER_NODE
    scale_up = _scale_up_gbs(gpu)
    if scale_up is None:
        raise TrainingPlanError("gpu", f"{gpu.name} has neither a scale-up link nor a PCIe bus on record")
    model_parallel = model_parallel_min(params=params, memory_gib=gpu.memory_gib, lora=lora)
    if model_parallel > 1 and gpu.scale_up_link in ("pcie", "none", ""):
        # Tensor parallelism over PCIe is not what the fitted runs measured: the model state is
        # sharded with ZeRO-3 instead, every GPU a data-parallel replica paying the all-gathers.
        job = Job(
            params, tokens, lora=lora, model_parallel=1, zero3=True, batch_tokens=batch_tokens,
            checkpointing=checkpointing,
        )  # fmt: skip
    else:
        job = Job(
            params, tokens, lora=lora, model_parallel=model_parallel, batch_tokens=batch_tokens,
            checkpointing=checkpointing,
        )  # fmt: skip
    template = Cluster(1, per_node, peak, mfu, scale_up, scale_out_gbs)
    if days is not None:
        time = gpus_for_days(job=job, days=days, gpus_per_node=per_node, template=template)
        if time is None:
            return None
        nodes = max(1, time.gpus // per_node)
    else:
        assert gpus is not None
        if gpus < model_parallel:
            raise TrainingPlanError("gpus", f"one copy of the model needs {model_parallel} GPUs of {gpu.name}")
        nodes, per_node = nodes_for_gpus(gpus=gpus, gpus_per_node=per_node)
        time = training_time(job=job, cluster=Cluster(nodes, per_node, peak, mfu, scale_up, scale_out_gbs))
    return TrainingPlan(
        gpu_slug=gpu.slug,
        gpu_name=gpu_display_name(name=gpu.name, name_zh=gpu.name_zh),
        precision=peak_format,
        peak_tflops=peak,
        mfu=mfu,
        mfu_basis=figures.mfu.basis,
        mfu_runs=figures.mfu.runs,
        nodes=nodes,
        gpus_per_node=per_node,
        model_parallel=job.model_parallel,
        zero3=job.zero3,
        time=time,
        price_per_gpu_hour=price_per_gpu_hour,
    )


def _figures(gpus: list[Gpu], *, benchmark: str) -> list[_GpuFigures]:
    """The GPUs' dense training peaks and fitted MFUs: two queries for any number of GPUs."""
    peaks: dict[int, dict[str, float | None]] = {gpu.pk: {} for gpu in gpus}
    rows = TensorPeak.objects.filter(gpu__in=gpus, supported=True, precision__in=TRAINING_PEAK_PRECISIONS).values_list(
        "gpu_id", "precision", "dense_tflops"
    )
    for gpu_id, peak_precision, dense in rows:
        peaks[gpu_id][peak_precision] = dense
    mfus = training_mfus()
    return [
        _GpuFigures(
            gpu, peaks[gpu.pk], mfus.for_gpu(gpu.pk, gpu.architecture.slug if gpu.architecture else None, benchmark)
        )
        for gpu in gpus
    ]


def training_plan(
    *,
    gpu_slug: str,
    params: float,
    tokens: float,
    lora: bool = False,
    days: float | None = None,
    gpus: int | None = None,
    scale_out_gbs: float = DEFAULT_SCALE_OUT_GBS,
    batch_tokens: float = DEFAULT_BATCH_TOKENS,
    precision: str | None = None,
) -> TrainingPlan | None:
    """How long on ``gpus`` GPUs, or how many GPUs for ``days`` (exactly one of them); None when
    no node count up to the time model's limit finishes in time. Priced at the typical on-demand
    rental in USD. ``precision``: the job's format (None: FP8 where the GPU has it)."""
    if (days is None) == (gpus is None):
        raise TrainingPlanError("days", "give either days or gpus")
    gpu = Gpu.objects.select_related("architecture").filter(slug=gpu_slug).first()
    if gpu is None:
        raise TrainingPlanError("gpu", f"no catalogue GPU {gpu_slug!r}")
    price = gpu_rent_prices(gpu_ids=[gpu.pk]).get(gpu.pk)
    return _plan(
        _figures([gpu], benchmark=job_benchmark(params=params, lora=lora))[0],
        params=params,
        tokens=tokens,
        lora=lora,
        days=days,
        gpus=gpus,
        scale_out_gbs=scale_out_gbs,
        batch_tokens=batch_tokens,
        price_per_gpu_hour=float(price.price_usd) if price else None,
        precision=precision,
    )


def training_plans_for_days(
    *,
    prices: dict[str, float | None],
    params: float,
    tokens: float,
    lora: bool,
    days: float,
    precision: str | None = None,
    checkpointing: bool = False,
) -> list[TrainingPlan]:
    """The fewest whole nodes that finish within ``days`` on every GPU of ``prices`` (slug: price
    per GPU-hour in the caller's currency, None where there is none) that can train: those with a
    dense FP8/BF16 peak, a fitted MFU, a memory size and a link between its GPUs, and a node
    count that finishes in time, in the job's ``precision`` (None: FP8 where the GPU has it), with
    activation ``checkpointing``'s recomputed forward where the job has it. The
    cheapest first (unpriced last), then the fastest. Three queries for any number of GPUs."""
    gpus = list(Gpu.objects.select_related("architecture").filter(slug__in=list(prices)))
    plans: list[TrainingPlan] = []
    for figures in _figures(gpus, benchmark=job_benchmark(params=params, lora=lora)):
        try:
            plan = _plan(
                figures,
                params=params,
                tokens=tokens,
                lora=lora,
                days=days,
                gpus=None,
                scale_out_gbs=DEFAULT_SCALE_OUT_GBS,
                batch_tokens=DEFAULT_BATCH_TOKENS,
                price_per_gpu_hour=prices[figures.gpu.slug],
                precision=precision,
                checkpointing=checkpointing,
            )
        except TrainingPlanError:
            continue  # a GPU the time model has no figures of cannot be planned on
        if plan is not None:
            plans.append(plan)
    plans.sort(key=lambda plan: (plan.cost is None, plan.cost or 0.0, plan.time.seconds, plan.gpu_slug))
    return plans
