"""Reads of the serving model: a GPU's curve of tokens/s per GPU against tokens/s per user for a
model, precision and configuration, at the stored fitted constants (never fitted on a read).

Stable interface (llmrank and the fit calculator build on it; change only by adding fields)
-----------------------------------------------------------------------------------------
``serving_curve(*, gpu, model, precision, gpu_count, tp, input_len, output_len, engine, fit,
links) -> ServingEstimate``
    The model's curve for ``gpu_count`` GPUs of ``gpu`` (a catalogue ``Gpu`` with its
    architecture loaded) running ``model`` (a slug of ``llm.serving.shapes.MODEL_SHAPES``) at
    ``precision`` (fp8, bf16, fp16, fp4, int4, or a GGUF type such as Q4_K_M) split by tensor over
    ``tp`` GPUs per replica. ``fit``: the stored fit (``serving_fit_current()``); ``links``: the
    measured all-reduce figures (``allreduce_measured(gpu_ids=...)``), both read once by the
    caller for many curves. The estimate carries the error that applies to it and which
    all-reduce figure it used.
``curve_at_interactivity(points, target) -> CurvePoint | None``
    The most tokens/s per GPU at which every user gets ``target`` tokens/s (None: the maximum).
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from statistics import median

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from benchmarks_app.models import BenchmarkResult, SourceKind
from catalog.models import Gpu, TensorPeak
from llm.models import PerUserBasis, ServingModelFit, ServingPoint
from llm.serving.comm import LINK_COLUMNS, GpuLink, catalogue_link
from llm.serving.fit import MeasuredCoverage, MeasuredPoint, ServingFit
from llm.serving.heldout import interval_for
from llm.serving.physics import (
    AllReduce,
    CurvePoint,
    Hardware,
    ServingConstants,
    ServingCurve,
    Workload,
    constants_from_dict,
    curve_at_interactivity,
    hardware_class,
    serving_curve_compute,
)
from llm.serving.shapes import GGUF_BYTES_PER_WEIGHT, MODEL_SHAPES, bytes_per_weight
from llm.trtllm import BENCH_DEFAULT_MAX_BATCH

__all__ = [
    "MeasuredAllReduce",
    "ServingEstimate",
    "allreduce_measured",
    "curve_at_interactivity",
    "serving_curve",
    "serving_hardware",
    "serving_fit_current",
    "serving_link",
    "serving_points_for_fit",
]

ALLREDUCE_WORKLOAD = "allreduce-busbw"
LINK_LABELS = {
    "fabric": gettext_lazy("NVLink-class links"),
    "nvlink": gettext_lazy("NVLink"),
    "nvlink-bridge": gettext_lazy("NVLink bridge"),
    "infinity-fabric": gettext_lazy("AMD Infinity Fabric"),
    "roce": gettext_lazy("on-die RoCE Ethernet"),
    "hccs": gettext_lazy("HCCS"),
    "pcie_p2p": gettext_lazy("PCIe, GPU to GPU"),
    "pcie_host": gettext_lazy("PCIe through host memory (no peer-to-peer)"),
}
# The client's interconnect label -> the link kind of llm.serving.comm it measures.
_LINK_OF_INTERCONNECT = {"nvlink": "fabric", "pcie": "pcie"}


@dataclass(frozen=True)
class MeasuredAllReduce:
    """Median bus bandwidth by message size of a GPU's all-reduce runs on ``gpu_count`` GPUs over
    one interconnect, and the runs it comes from."""

    gpu_count: int
    interconnect: str
    points: tuple[tuple[float, float], ...]  # (message bytes, bus GB/s)
    runs: int
    latest: dt.date | None


def allreduce_measured(*, gpu_ids: Iterable[int]) -> dict[int, list[MeasuredAllReduce]]:
    """gpu id -> its measured all-reduce curves (trusted ``allreduce-busbw`` results; one query)."""
    rows = (
        BenchmarkResult.objects.trusted()
        .filter(gpu_id__in=list(gpu_ids), workload__slug=ALLREDUCE_WORKLOAD, gpu_count__gte=2)
        .order_by()
        .values("gpu_id", "gpu_count", "params", "value", "submission_id", "id", "measured_at")
    )
    grouped: dict[tuple[int, int, str], dict[float, list[float]]] = defaultdict(lambda: defaultdict(list))
    runs: dict[tuple[int, int, str], set[int]] = defaultdict(set)
    latest: dict[tuple[int, int, str], dt.date] = {}
    for row in rows:
        params = row["params"] if isinstance(row["params"], dict) else {}
        size, interconnect = params.get("bytes"), str(params.get("interconnect") or "unknown")
        if not isinstance(size, int | float) or size <= 0 or not row["value"] or row["value"] <= 0:
            continue
        key = (row["gpu_id"], row["gpu_count"], interconnect)
        grouped[key][float(size)].append(float(row["value"]))
        runs[key].add(row["submission_id"] if row["submission_id"] is not None else -row["id"])
        when = row["measured_at"].date() if row["measured_at"] else None
        if when and (key not in latest or when > latest[key]):
            latest[key] = when
    out: dict[int, list[MeasuredAllReduce]] = defaultdict(list)
    for (gpu_id, count, interconnect), sizes in sorted(grouped.items()):
        points = tuple(sorted((size, median(values)) for size, values in sizes.items()))
        out[gpu_id].append(
            MeasuredAllReduce(
                count,
                interconnect,
                points,
                len(runs[(gpu_id, count, interconnect)]),
                latest.get((gpu_id, count, interconnect)),
            )  # fmt: skip
        )
    return dict(out)


def gpu_link_for(gpu: Gpu) -> GpuLink:
    """How a catalogue GPU reaches its neighbours (llm.serving.comm.catalogue_link): its scale-up
    link and the GPUs it joins, its host link's PCIe peak, and whether its driver allows
    peer-to-peer transfers."""
    return catalogue_link({column: getattr(gpu, column) for column in LINK_COLUMNS})


def serving_hardware(gpu: Gpu, *, peaks: Mapping[str, float | None] | None = None) -> Hardware:
    """A catalogue GPU's datasheet figures for the serving model (dense tensor peaks; the vector
    FP16 rate where there is no tensor path)."""
    if peaks is None:
        peaks = {
            p.precision: (p.dense_tflops if p.supported else None)
            for p in TensorPeak.objects.filter(gpu_id=gpu.id).only("precision", "dense_tflops", "supported")
        }
    tensor = dict(peaks)
    tensor.setdefault("fp16_nontensor", gpu.fp16_tflops)
    architecture = gpu.architecture.slug if gpu.architecture else ""
    return Hardware(
        memory_gib=float(gpu.memory_gib or 0.0),
        bandwidth_gbs=float(gpu.memory_bandwidth_gbs or 0.0),
        tensor_tflops=tensor,
        hardware_class=hardware_class(architecture=architecture, segment=gpu.segment),
    )


def serving_link(gpu: Gpu, *, tp: int, measured: Sequence[MeasuredAllReduce] = ()) -> AllReduce:
    """The all-reduce figure for ``tp`` GPUs of ``gpu``: a measured run on that many GPUs over the
    link the datasheet says they use, else the datasheet link's figure (llm.serving.comm)."""
    link = gpu_link_for(gpu)
    kind = link.kind(tp)
    for run in measured:
        if run.gpu_count == tp and _LINK_OF_INTERCONNECT.get(run.interconnect) == _kind_family(kind):
            when = run.latest.isoformat() if run.latest else ""
            return AllReduce(
                measured=run.points,
                source=_("measured: all-reduce on %(count)d× %(gpu)s over %(link)s (%(runs)d run(s), %(date)s)")
                % {"count": tp, "gpu": gpu.name, "link": run.interconnect, "runs": run.runs, "date": when},
            )
    bus = link.bus_gbs(tp)
    if bus is None:
        return AllReduce(
            source=_("no estimate above one GPU: the catalogue has no figure for the link between these GPUs")
            if tp > 1
            else ""
        )
    label = LINK_LABELS.get(link.fabric_link if kind == "fabric" else kind, kind)
    return AllReduce(
        bus_gbs=bus,
        latency_s=link.latency_s(tp),
        source=_("datasheet: %(link)s, %(bus).0f GB/s bus bandwidth (measured share of the line rate)")
        % {"link": label, "bus": bus},
    )


def _kind_family(kind: str) -> str:
    return "pcie" if kind.startswith("pcie") else kind


@dataclass(frozen=True)
class ServingEstimate:
    """The model's curve for one GPU, model, precision and configuration.

    ``points``: per replica of ``tp`` GPUs (concurrency = sequences of one replica; tokens/s per
    GPU is the same for every replica); ``error_pct``: the held-out median error that applies
    (None: no fit stored); ``inside``: whether the measured points cover its hardware class,
    engine class and kind of configuration; ``allreduce_source``: which all-reduce figure it used.
    ``interval``: the 80 % interval as factors on the estimate (``low x estimate`` to ``high x
    estimate``), from the held-out checks of the kind of extrapolation it makes that is widest
    (``interval_kind``); None where no fit with intervals is stored.
    """

    gpu_slug: str
    model: str
    precision: str
    engine: str
    gpu_count: int
    tp: int
    input_len: int
    output_len: int
    curve: ServingCurve
    error_pct: float | None
    inside: bool
    allreduce_source: str
    allreduce_measured: bool
    allreduce_priced: bool = True  # False: several GPUs over a link the catalogue has no figure for
    workload: Workload | None = None  # what the curve was computed for (the roofline of an anchor)
    interval: tuple[float, float] | None = None
    interval_kind: str = ""

    @property
    def points(self) -> tuple[CurvePoint, ...]:
        return self.curve.points

    @property
    def fits(self) -> bool:
        return self.curve.fits

    @property
    def replicas(self) -> int:
        return max(1, self.gpu_count // self.tp)

    def at(self, target_tokens_per_s_per_user: float | None) -> CurvePoint | None:
        return curve_at_interactivity(self.curve.points, target_tokens_per_s_per_user)

    def interval_at(self, value: float) -> tuple[float, float] | None:
        """The 80 % interval of an estimated figure of this curve (tokens/s per GPU), or None."""
        if self.interval is None:
            return None
        return value * self.interval[0], value * self.interval[1]


def weight_format(precision: str) -> tuple[str, float]:
    """(the weight precision the model computes with, bytes per weight) of a precision or GGUF type."""
    quant = precision.upper()
    if quant in GGUF_BYTES_PER_WEIGHT:
        base = "fp16" if quant == "F16" else "int8" if quant.startswith("Q8") else "int4"
        return base, GGUF_BYTES_PER_WEIGHT[quant]
    return precision.lower(), bytes_per_weight(precision=precision.lower())


def serving_curve(
    *,
    gpu: Gpu,
    model: str,
    precision: str,
    gpu_count: int,
    tp: int,
    input_len: int,
    output_len: int,
    engine: str = "vllm-sglang",
    fit: ServingFit | None,
    links: Mapping[int, Sequence[MeasuredAllReduce]] | None = None,
    hardware: Hardware | None = None,
    scenario: str = "server",
    ep: int = 1,
) -> ServingEstimate:
    """The model's curve (module doc). Raises ValueError naming the argument that is wrong."""
    if model not in MODEL_SHAPES:
        raise ValueError(f"model: unknown model {model!r}")
    if tp < 1 or gpu_count < tp or gpu_count % tp:
        raise ValueError(f"tp: {tp} must divide gpu_count {gpu_count}")
    if ep < 1 or gpu_count % ep or (ep > 1 and (tp != 1 or not MODEL_SHAPES[model].experts)):
        raise ValueError(f"ep: {ep} must divide gpu_count {gpu_count}, with tp 1 and a mixture-of-experts model")
    if input_len < 1 or output_len < 1:
        raise ValueError("input_len and output_len must be at least 1")
    weight_precision, bpw = weight_format(precision)
    hw = hardware or serving_hardware(gpu)
    group = max(tp, ep)
    link = serving_link(gpu, tp=group, measured=(links or {}).get(gpu.id, ()))
    constants = fit.constants if fit else ServingConstants()
    w = Workload(MODEL_SHAPES[model], weight_precision, bpw, input_len, output_len, tp=tp, engine=engine, ep=ep)
    curve = serving_curve_compute(w=w, hw=hw, c=constants, link=link)
    if group > 1 and not link.known:
        # Communication over a link with no figure would cost nothing: no estimate, not a free one.
        curve = replace(curve, points=(), reason=link.source)
    inside = bool(fit and fit.inside(hardware_class=hw.hardware_class, engine=engine, tp=tp, ep=ep))
    error = fit.error_pct(scenario=scenario, engine=engine, inside=inside) if fit else None
    interval, interval_kind = None, ""
    if fit and fit.intervals:
        kinds = fit.coverage.kinds(gpu_key=gpu.slug, model_key=model, engine=engine, hardware_class=hw.hardware_class,
                                   input_len=input_len, output_len=output_len)  # fmt: skip
        found = interval_for(fit.intervals, kinds)
        if found is not None:
            # p10 and p90 are of estimate / measured: the measured figure lies in [e / p90, e / p10].
            interval, interval_kind = (1.0 / found[1], 1.0 / found[0]), found[2]
    return ServingEstimate(gpu.slug, model, precision, engine, gpu_count, tp, input_len, output_len, curve, error,
                           inside, link.source if group > 1 else "", link.is_measured and group > 1,
                           group == 1 or link.known, w, interval, interval_kind)  # fmt: skip


# -- the measured points the model is fitted on -------------------------------------------------

_FIT_SCENARIOS = {"offline", "server", "interactive", "concurrency", "single-stream"}
_KV_BYTES = {"fp8": 1.0, "int8": 1.0, "fp16": 2.0, "bf16": 2.0, "fp32": 4.0}


def tp_choose(*, gpu_count: int, hw: Hardware, model: str, precision: str, input_len: int, output_len: int,
              engine: str, link_of: Callable[[int], AllReduce]) -> int:  # fmt: skip
    """The tensor-parallel size of a measured system whose source does not give it: of the powers
    of two that divide its GPU count, the one with the most tokens/s per GPU at maximum load,
    priced at the default constants (a structural choice no fitted constant moves)."""
    weight_precision, bpw = weight_format(precision)
    best, best_rate = gpu_count, -1.0
    tp = 1
    while tp <= gpu_count:
        link = link_of(tp)
        if gpu_count % tp == 0 and (tp == 1 or link.known):
            w = Workload(MODEL_SHAPES[model], weight_precision, bpw, input_len, output_len, tp=tp, engine=engine)
            top = curve_at_interactivity(
                serving_curve_compute(w=w, hw=hw, c=ServingConstants(), link=link).points, None
            )
            if top is not None and top.tokens_per_s_per_gpu > best_rate:
                best, best_rate = tp, top.tokens_per_s_per_gpu
        tp *= 2
    return best


def serving_points_for_fit() -> list[MeasuredPoint]:
    """Every trusted measured serving point of a model the estimate knows whose prompt and output
    lengths are known and that ran tensor parallel only, as the fit's input.
    The tensor-parallel size is the source's where it gives one (``tp`` in the result's
    parameters), else :func:`tp_choose`'s. Our client's points are decode steps alone (its prompts
    are prefilled before the clock starts) and are fitted as such (``MeasuredPoint.decode_only``)."""
    rows = list(
        ServingPoint.objects.trusted()
        .filter(model__in=list(MODEL_SHAPES), scenario__in=_FIT_SCENARIOS)
        .select_related("gpu", "gpu__architecture", "result")
        .order_by("id")
    )
    gpu_ids = {r.gpu_id for r in rows}
    peaks: dict[int, dict[str, float | None]] = defaultdict(dict)
    for peak in TensorPeak.objects.filter(gpu_id__in=gpu_ids).values("gpu_id", "precision", "supported",
                                                                      "dense_tflops"):  # fmt: skip
        peaks[peak["gpu_id"]][peak["precision"]] = peak["dense_tflops"] if peak["supported"] else None
    links = allreduce_measured(gpu_ids=gpu_ids)
    hardware = {r.gpu_id: serving_hardware(r.gpu, peaks=peaks.get(r.gpu_id, {})) for r in rows}
    out: list[MeasuredPoint] = []
    for r in rows:
        hw = hardware[r.gpu_id]
        params = r.result.params if isinstance(r.result.params, dict) else {}
        # The model has a decode step per replica of tensor-parallel GPUs: a point whose lengths
        # are not known, or that ran pipeline stages, experts spread over the GPUs, attention
        # data-parallel, prefill and decode on separate GPUs or speculative decoding, is not one
        # it can be fitted on.
        # Experts spread over the GPUs with attention data parallel on each (DEPn) is a plan the
        # model prices (``Workload.ep``); experts spread under tensor-parallel attention is not.
        ep = int(params.get("expert_parallel") or 1)
        dep = ep > 1 and bool(params.get("attention_data_parallel")) and r.gpu_count % ep == 0
        if (
            r.input_tokens is None
            or r.output_tokens is None
            or int(params.get("pipeline_parallel") or 1) > 1
            or (ep > 1 and not dep)
            or (params.get("attention_data_parallel") and not dep)
            or params.get("disaggregated")
            or params.get("speculative")
        ):
            continue
        precision = r.quant or r.weight_precision
        try:
            weight_precision, bpw = weight_format(precision)
        except KeyError:
            continue
        if not hw.bandwidth_gbs or not hw.memory_gib or hw.compute_peak(weight_precision) is None:
            continue

        def link_of(tp: int, gpu: Gpu = r.gpu) -> AllReduce:
            return serving_link(gpu, tp=tp, measured=links.get(gpu.id, ()))

        given = 1 if dep else params.get("tp") or params.get("tensor_parallel")
        tp = int(given) if isinstance(given, int | float) and given >= 1 and r.gpu_count % int(given) == 0 else 0
        engine = r.engine_class
        if not tp:
            tp = tp_choose(gpu_count=r.gpu_count, hw=hw, model=r.model, precision=precision,
                           input_len=r.input_tokens, output_len=r.output_tokens, engine=engine,
                           link_of=link_of)  # fmt: skip
        group = ep if dep else tp
        if group > 1 and r.scenario != "single-stream" and not link_of(group).known:
            continue  # its all-reduces ran over a link with no figure: the fit would take them as free
        w = Workload(MODEL_SHAPES[r.model], weight_precision, bpw, r.input_tokens, r.output_tokens, tp=tp,
                     kv_bytes=_KV_BYTES.get(r.kv_cache_precision), engine=engine, ep=ep if dep else 1)  # fmt: skip
        if r.scenario == "single-stream" and r.gpu_count > 1:
            # One stream with the layers split over the GPUs (llama.cpp's default): they work in turn,
            # at one GPU's bandwidth, with all their memory: one GPU of the pooled memory.
            pooled = replace(hw, memory_gib=hw.memory_gib * r.gpu_count)
            stream = r.tokens_per_s_per_user or r.tokens_per_s_per_gpu * r.gpu_count
            out.append(MeasuredPoint(r.gpu.slug, r.model, pooled, replace(w, tp=1), r.scenario, stream, stream,
                                     concurrency=1, gpu_count=1, label=f"{r.source_title} (layers split over "
                                     f"{r.gpu_count} GPUs)", source=r.source_kind,
                                     published=r.measured_on.isoformat()))  # fmt: skip
            continue
        out.append(
            MeasuredPoint(
                gpu_key=r.gpu.slug,
                model_key=r.model,
                hardware=hw,
                workload=w,
                scenario=r.scenario,
                tokens_per_s_per_gpu=r.tokens_per_s_per_gpu,
                tokens_per_s_per_user=r.tokens_per_s_per_user,
                concurrency=r.concurrency or _in_flight(r),
                gpu_count=r.gpu_count,
                link=link_of(group),
                label=f"{r.source_title}: {r.gpu.name} x{r.gpu_count} {r.model} {precision} {r.scenario} "
                f"{r.input_tokens}/{r.output_tokens}",
                source=r.source_kind,
                published=r.measured_on.isoformat(),
                decode_only=r.source_kind == SourceKind.CLIENT,
                max_batch=_bench_batch_cap(r),
            )
        )
    return out


def _bench_batch_cap(r: ServingPoint) -> int | None:
    """The sequences per replica trtllm-bench let a throughput run hold where it did not size the
    batch from the KV cache: a model whose only checkpoint is MXFP4 (``llm.trtllm``)."""
    untuned = MODEL_SHAPES[r.model].published_formats == ("fp4",)
    throughput_run = r.source_kind == SourceKind.TRTLLM and r.scenario == "offline"
    return BENCH_DEFAULT_MAX_BATCH if throughput_run and untuned else None


def _in_flight(r: ServingPoint) -> int | None:
    """Requests in flight at a fixed request rate, by Little's law, where the rate, the time to the
    first token and the time per output token were all measured (TensorRT-LLM's online-serving
    table): rate x (TTFT + (output - 1) x time per token). Such a run is not at the most throughput
    its tokens/s per user allow (at 2 requests per second the GPUs idle between requests), so the
    model is asked for the requests it actually had in flight."""
    if (
        r.scenario != "server"
        or r.per_user_basis != PerUserBasis.MEASURED
        or not r.ttft_ms
        or not r.tokens_per_s_per_user
        or not r.output_tokens
    ):
        return None
    requests_per_s = r.tokens_per_s_per_gpu * r.gpu_count / r.output_tokens
    life_s = r.ttft_ms / 1000.0 + (r.output_tokens - 1) / r.tokens_per_s_per_user
    return max(1, round(requests_per_s * life_s))


def serving_fit_current() -> ServingFit | None:
    """The stored fit the pages use (the newest), or None before any fit is stored."""
    stored = ServingModelFit.objects.newest()
    return serving_fit_from_stored(stored) if stored else None


def serving_fit_from_stored(stored: ServingModelFit) -> ServingFit:
    data = dict(stored.constants.get("serving", {})) if isinstance(stored.constants, dict) else {}
    regimes = frozenset(tuple(r) for r in data.pop("measured_regimes", []))
    errors = stored.errors.get("serving", {}) if isinstance(stored.errors, dict) else {}
    checks = stored.errors.get("serving_checks", {}) if isinstance(stored.errors, dict) else {}
    return ServingFit(constants_from_dict(data), errors, regimes, stored.points,  # type: ignore[arg-type]
                      intervals=dict(checks.get("intervals") or {}),
                      coverage=MeasuredCoverage.from_dict(checks.get("coverage") or {}))  # fmt: skip
