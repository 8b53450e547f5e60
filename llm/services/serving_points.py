"""Derive the measured LLM serving points from the stored results (rebuildable, derive on write).

``serving_points_rebuild`` replaces the points of one source (or of all) by those derived from
the stored results, in one transaction. The imports (MLPerf, llama.cpp/Ollama, TensorRT-LLM),
the client ingest and ``rebuild_results`` call it at the end of their own transaction.

What a result becomes:

==================================  ====================  ==============================================
result (workload)                   scenario              tokens/s per user
==================================  ====================  ==============================================
``mlperf-<llm>-offline-tokens``      offline               not defined (no latency bound)
``mlperf-<llm>-server-tokens``       server                at least 1000 / the round's TPOT limit (floor)
``mlperf-<llm>-interactive-tokens``  interactive           at least 1000 / the round's TPOT limit (floor)
``trtllm-throughput``               offline               not defined (requests at an unbounded rate)
``trtllm-serving``                  server (offline: INF)  1000 / the published mean inter-token latency
                                                          (no point where rate-limited: a lower bound)
``trtllm-guide``                    concurrency (stated)  the report's per-user output throughput (no
                                                          point for a run with speculative decoding)
``llamacpp-tg``, ``llm-eval-rate``  single-stream         the stream's rate (one user)
``llm-decode`` (decode, serve)      concurrency (batch)   1 / the decode step (the client's own figure)
``llm-decode-tp``                   concurrency (batch)   1 / the decode step, over its tensor-parallel group
``inferencex-serving``              concurrency (fixed)   InferenceX's median interactivity (1 / TPOT)
==================================  ====================  ==============================================

Tokens/s per GPU is the result's value where the result is per GPU (MLPerf, TensorRT-LLM), the
configuration's rate divided by its GPU count otherwise. Every point's precision is checked
(``llm.precision``). Results of models without a shape (``llm.serving.shapes``) give no point.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.db.models import Q

from benchmarks_app.models import BenchmarkResult, SourceKind
from benchmarks_app.services.energy import energy_verdict
from catalog.interconnect import pcie_peak_gbs
from llm.mlperf_rules import mlperf_benchmark, mlperf_latency_limits
from llm.models import EngineClass, Interconnect, PerUserBasis, Scenario, ServingPoint
from llm.precision import precision_assess
from llm.selectors.rows import (
    CLIENT_TP_WORKLOAD,
    CLIENT_WORKLOAD,
    EVAL_RATE_MODELS,
    llamacpp_section_title,
    model_slug_normalise,
)
from llm.serving.comm import FABRIC_VARIANTS
from llm.serving.datasets import mlperf_dataset_lengths
from llm.serving.shapes import MODEL_SHAPES

_MLPERF = re.compile(r"^mlperf-(?P<bench>.+)-(?P<scenario>offline|server|interactive)-tokens$")
_KV = re.compile(r"(fp8|fp16|bf16|fp4|int8|int4)\s*kv", re.IGNORECASE)
_VERSION = re.compile(r"(\d+(?:\.\d+)+)")

RESULTS_Q: dict[str, Q] = {
    SourceKind.MLPERF: Q(workload__slug__startswith="mlperf-", workload__slug__endswith="-tokens"),
    SourceKind.TRTLLM: Q(workload__slug__in=["trtllm-throughput", "trtllm-serving"]),
    SourceKind.TRTLLM_GUIDE: Q(workload__slug="trtllm-guide"),
    SourceKind.LLAMACPP: Q(workload__slug="llamacpp-tg"),
    SourceKind.EVAL_RATE: Q(workload__slug="llm-eval-rate"),
    SourceKind.CLIENT: Q(workload__slug__in=[CLIENT_WORKLOAD, CLIENT_TP_WORKLOAD]),
    SourceKind.INFERENCEX: Q(workload__slug="inferencex-serving"),
}


@dataclass
class ServingPointsSummary:
    points: Counter[str] = field(default_factory=Counter)  # source kind -> points written
    precision: Counter[str] = field(default_factory=Counter)  # precision status -> points
    skipped: Counter[str] = field(default_factory=Counter)  # reason -> results without a point

    def as_lines(self) -> list[str]:
        lines = [
            "serving points: " + (", ".join(f"{k} {v}" for k, v in sorted(self.points.items())) or "none"),
            "precision: " + ", ".join(f"{k} {v}" for k, v in sorted(self.precision.items())),
        ]
        lines.extend(f"  no point: {reason} ({n})" for reason, n in self.skipped.most_common())
        return lines


def interconnect_of(*, gpu_count: int, interconnect_gbs: float | None, variant: str, bus_interface: str) -> str:
    """How the GPUs of a configuration talk: none for one GPU; an NVLink-class fabric where the
    catalogue lists one (or the form factor has one: SXM, OAM); PCIe where it names the bus."""
    if gpu_count <= 1:
        return Interconnect.NONE
    if interconnect_gbs or variant.strip().lower() in FABRIC_VARIANTS:
        return Interconnect.NVLINK
    if pcie_peak_gbs(bus_interface):
        return Interconnect.PCIE
    return Interconnect.UNKNOWN


def engine_class_of(engine: str) -> str:
    """The engine class of an engine's name (MLPerf's framework text, a table's engine)."""
    lowered = engine.lower()
    if "tensorrt" in lowered or "trt-llm" in lowered:
        return EngineClass.TENSORRT_LLM
    if "vllm" in lowered or "sglang" in lowered:
        return EngineClass.VLLM_SGLANG
    if "llama.cpp" in lowered or "ollama" in lowered or "gguf" in lowered:
        return EngineClass.LLAMA_CPP
    if "pytorch" in lowered or "gpuatlas-bench" in lowered:
        return EngineClass.PYTORCH
    return EngineClass.OTHER


@transaction.atomic
def serving_points_rebuild(*, source: str | None = None) -> ServingPointsSummary:
    """Replace the serving points of ``source`` (a SourceKind; None: every source) with those
    derived from the stored results."""
    kinds = [SourceKind(source)] if source else list(SourceKind)
    ServingPoint.objects.filter(source_kind__in=kinds).delete()
    summary = ServingPointsSummary()
    points: list[ServingPoint] = []
    for kind in kinds:
        results = BenchmarkResult.objects.filter(RESULTS_Q[kind]).select_related("gpu", "workload")
        for result in results.order_by("id").iterator(chunk_size=500):
            point, reason = _derive(kind, result)
            if point is None:
                summary.skipped[f"{kind}: {reason}"] += 1
                continue
            points.append(point)
            summary.points[kind] += 1
            summary.precision[point.precision_status] += 1
    ServingPoint.objects.bulk_create(points, batch_size=500)
    return summary


def _derive(kind: str, result: BenchmarkResult) -> tuple[ServingPoint | None, str]:
    params, env = result.params or {}, result.environment or {}
    if kind == SourceKind.MLPERF:
        return _mlperf(result, params, env)
    if kind == SourceKind.TRTLLM:
        return _trtllm(result, params, env)
    if kind == SourceKind.TRTLLM_GUIDE:
        return _trtllm_guide(result, params, env)
    if kind in (SourceKind.LLAMACPP, SourceKind.EVAL_RATE):
        return _one_stream(kind, result, params, env)
    if kind == SourceKind.INFERENCEX:
        return _inferencex(result, params, env)
    return _client(result, params, env)


def _point(result: BenchmarkResult, *, model: str, sequence_tokens: int | None, facts: dict[str, str],
           quant: str = "", **fields: Any) -> ServingPoint:  # fmt: skip
    gpu = result.gpu
    assessment = precision_assess(
        model=model, stated=result.precision, quant=quant, memory_gib=gpu.memory_gib, gpu_count=result.gpu_count,
        sequence_tokens=sequence_tokens, facts=facts,
    )  # fmt: skip
    fields.setdefault(
        "interconnect",
        interconnect_of(
            gpu_count=result.gpu_count,
            interconnect_gbs=gpu.interconnect_gbs,
            variant=gpu.variant,
            bus_interface=gpu.bus_interface,
        ),  # fmt: skip
    )
    return ServingPoint(
        result=result, gpu=gpu, gpu_count=result.gpu_count, model=model, quant=quant,
        weight_precision=assessment.precision, weight_precision_stated=result.precision,
        precision_status=assessment.status, precision_note=assessment.note[:4000],
        precision_source_url=assessment.source_url, measured_on=result.measured_at.date(), source=result.source,
        **fields,
    )  # fmt: skip


def _mlperf(result: BenchmarkResult, params: dict[str, Any], env: dict[str, Any]) -> tuple[ServingPoint | None, str]:
    found = _MLPERF.match(result.workload.slug)
    if found is None:
        return None, "not an LLM throughput"
    benchmark = str(env.get("benchmark") or found["bench"])
    family = mlperf_benchmark(benchmark)
    model = family.model if family else model_slug_normalise(re.sub(r"-(99(\.9)?|interactive)$", "", benchmark))
    if model is None or model not in MODEL_SHAPES:
        return None, f"benchmark {benchmark} runs a model without a shape"
    round_ = result.workload.version
    scenario = found["scenario"]
    limits = mlperf_latency_limits(round_=round_, benchmark=benchmark, scenario=scenario)
    framework = str(env.get("framework", ""))
    floor = limits.user_rate_floor
    output_tokens = family.output_tokens if family else None
    # The prompt length enters only where MLCommons publishes the dataset's mean (lengths.json).
    lengths = mlperf_dataset_lengths().get(family.key) if family else None
    input_tokens = round(lengths.mean_input_tokens) if lengths and lengths.mean_input_tokens else None
    system = f"{env.get('submitter', '')}, {env.get('system', '')}"
    return (
        _point(
            result,
            model=model,
            sequence_tokens=None,
            facts={
                "source_kind": SourceKind.MLPERF,
                "round": round_,
                "benchmark": benchmark,
                "framework": framework,
                "accelerator": str(env.get("accelerator_name", "")),
                "submitter": str(env.get("submitter", "")),
            },
            source_kind=SourceKind.MLPERF,
            kv_cache_precision=_kv_precision(str(env.get("weight_data_types", ""))),
            engine=framework[:120] or "not stated",
            engine_class=engine_class_of(framework),
            engine_version=(_VERSION.search(framework) or [""])[0][:60],
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            lengths_note=(
                f"mean output tokens per sample of the benchmark: {family.output_source}; "
                + (
                    f"mean input tokens: {lengths.input_source}"
                    if input_tokens and lengths
                    else "input lengths vary per sample (MLCommons publishes no mean: llm/data/mlperf_datasets)"
                )
            )
            if output_tokens and family
            else "the benchmark's lengths vary per sample; no published mean in the table",
            scenario=scenario,
            concurrency=None,
            ttft_limit_ms=limits.ttft_ms,
            tpot_limit_ms=limits.tpot_ms,
            limits_note=limits.note,
            tokens_per_s_per_gpu=result.value,
            tokens_per_s_per_user=floor,
            per_user_basis=PerUserBasis.LATENCY_FLOOR if floor else PerUserBasis.UNDEFINED,
            ttft_ms=None,
            date_estimated=False,
            source_title=f"MLPerf Inference v{round_} · {benchmark} {scenario.title()} · {system}"[:300],
            source_url=str(env.get("url", ""))[:500],
        ),  # fmt: skip
        "",
    )


def _trtllm(result: BenchmarkResult, params: dict[str, Any], env: dict[str, Any]) -> tuple[ServingPoint | None, str]:
    model = str(params.get("model", ""))
    if model not in MODEL_SHAPES:
        return None, f"model {model} has no shape"
    serving = result.workload.slug == "trtllm-serving"
    if serving and env.get("rate_limited"):
        # Its throughput is the offered rate, not what the GPUs do (llm.trtllm.TrtllmRow.rate_limited):
        # neither a measured answer nor a fit may read it as a capacity.
        return None, "rate-limited serving row (fewer than one request in flight): throughput is a lower bound"
    itl, qps = env.get("itl_ms"), params.get("qps")
    per_user = 1000.0 / float(itl) if serving and itl else None
    input_tokens, output_tokens = int(params["input_tokens"]), int(params["output_tokens"])
    release = result.workload.version
    if serving:
        scenario = Scenario.OFFLINE if qps == "INF" else Scenario.SERVER
        limits_note = (
            f"no latency bound: requests at {'an unbounded rate' if qps == 'INF' else f'{qps} per second'}; "
            "tokens/s per user = 1000 / the published mean inter-token latency"
        )
    else:
        scenario, limits_note = Scenario.OFFLINE, "no latency bound: requests at an unbounded rate (maximum throughput)"
    parallel = str(env.get("parallelism") or "") or f"TP{params.get('tensor_parallel')}" + (
        f",PP{params.get('pipeline_parallel')}" if int(params.get("pipeline_parallel", 1)) > 1 else ""
    )
    return (
        _point(
            result,
            model=model,
            sequence_tokens=input_tokens + output_tokens,
            facts={
                "source_kind": SourceKind.TRTLLM,
                "round": release,
                "benchmark": model,
                "accelerator": str(env.get("gpu_name", "")),
            },
            source_kind=SourceKind.TRTLLM,
            kv_cache_precision="",
            engine="TensorRT-LLM",
            engine_class=EngineClass.TENSORRT_LLM,
            engine_version=release,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            lengths_note="fixed lengths (synthetic requests, standard deviation 0)",
            scenario=scenario,
            concurrency=None,
            ttft_limit_ms=None,
            tpot_limit_ms=None,
            limits_note=limits_note,
            tokens_per_s_per_gpu=result.value,
            tokens_per_s_per_user=per_user,
            per_user_basis=PerUserBasis.MEASURED if per_user else PerUserBasis.UNDEFINED,
            ttft_ms=env.get("ttft_ms") if serving else None,
            date_estimated=bool(env.get("date_estimated", True)),
            source_title=(
                f"TensorRT-LLM {release} performance overview · {env.get('model_name', model)} · "
                f"{env.get('gpu_name', '')} {parallel} · {input_tokens}/{output_tokens}"
            )[:300],
            source_url=str(env.get("url", ""))[:500],
        ),  # fmt: skip
        "",
    )


def _trtllm_guide(
    result: BenchmarkResult, params: dict[str, Any], env: dict[str, Any]
) -> tuple[ServingPoint | None, str]:
    model = str(params.get("model", ""))
    if model not in MODEL_SHAPES:
        return None, f"model {model} has no shape"
    if params.get("speculative"):
        return None, "speculative decoding (draft tokens): the serving model does not price it"
    concurrency = params.get("concurrency")
    if not concurrency:
        return None, "no --concurrency: the requests in flight are not stated"
    input_tokens, output_tokens = int(params["input_tokens"]), int(params["output_tokens"])
    per_user = _float(env.get("tokens_per_s_per_user"))
    per_rank = params.get("max_batch_size_per_rank")
    return (
        _point(
            result,
            model=model,
            sequence_tokens=input_tokens + output_tokens,
            facts={"source_kind": SourceKind.TRTLLM_GUIDE, "benchmark": model},
            source_kind=SourceKind.TRTLLM_GUIDE,
            kv_cache_precision=str(params.get("kv_cache_precision", ""))[:8],
            engine="TensorRT-LLM",
            engine_class=EngineClass.TENSORRT_LLM,
            engine_version="",
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            lengths_note=(
                "fixed lengths (synthetic requests, standard deviation 0)"
                if env.get("fixed_lengths")
                else "mean lengths of the guide's dataset"
            ),
            scenario=Scenario.CONCURRENCY,
            concurrency=int(concurrency),
            ttft_limit_ms=None,
            tpot_limit_ms=None,
            limits_note=(
                f"no latency bound: {concurrency} requests in flight (--concurrency)"
                + (f", at most {per_rank} per rank (--max_batch_size)" if per_rank else "")
                + "; tokens/s per user = output tokens / the whole request's time (the report's per-user figure)"
            ),
            tokens_per_s_per_gpu=result.value,
            tokens_per_s_per_user=per_user,
            per_user_basis=PerUserBasis.MEASURED if per_user else PerUserBasis.UNDEFINED,
            ttft_ms=None,
            date_estimated=bool(env.get("date_estimated", True)),
            source_title=(
                f"{env.get('guide', 'TensorRT-LLM performance guide')} · {env.get('section', '')} · "
                f"{env.get('gpu_name', '')} {env.get('parallelism', '')} · {input_tokens}/{output_tokens}"
            )[:300],
            source_url=str(env.get("url", ""))[:500],
        ),  # fmt: skip
        "",
    )


def _one_stream(
    kind: str, result: BenchmarkResult, params: dict[str, Any], env: dict[str, Any]
) -> tuple[ServingPoint | None, str]:
    if kind == SourceKind.LLAMACPP:
        model, quant = str(params.get("model", "")), str(params.get("quant", ""))
        output_tokens = int(params.get("tokens") or 0) or None
        title = " · ".join(
            (
                llamacpp_section_title(str(params.get("section", ""))),
                quant,
                f"tg {params.get('tokens', '')}",
                str(env.get("config", "")),
            )  # fmt: skip
        )
        engine, input_tokens, lengths = (
            "llama.cpp (llama-bench)",
            0,
            "llama-bench tg: tokens generated from an empty prompt",
        )
    else:
        model, quant = EVAL_RATE_MODELS.get(str(params.get("model", "")), ""), "Q4_K_M"
        output_tokens, input_tokens = None, None
        title = f"Jeff Geerling's AI benchmarks · {params.get('model', '')} · {params.get('host', '')}"
        engine, lengths = "Ollama (llama.cpp)", "Ollama eval rate of one request; lengths not published"
    if model not in MODEL_SHAPES:
        return None, f"model {model or params.get('model')} has no shape"
    month = str(env.get("snapshot_month", ""))
    return (
        _point(
            result,
            model=model,
            quant=quant,
            sequence_tokens=(output_tokens or 0) + (input_tokens or 0) or None,
            facts={"source_kind": kind, "benchmark": model},
            source_kind=kind,
            kv_cache_precision="",
            engine=engine,
            engine_class=EngineClass.LLAMA_CPP,
            engine_version="",
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            lengths_note=lengths,
            scenario=Scenario.SINGLE_STREAM,
            concurrency=1,
            ttft_limit_ms=None,
            tpot_limit_ms=None,
            limits_note="one stream: no latency bound",
            tokens_per_s_per_gpu=result.value / result.gpu_count,
            tokens_per_s_per_user=result.value,
            per_user_basis=PerUserBasis.ONE_STREAM,
            ttft_ms=None,
            date_estimated=True,
            source_title=(f"{title} (table of {month})" if month else title)[:300],
            source_url=str(env.get("issue_url") or env.get("url", ""))[:500],
        ),  # fmt: skip
        "",
    )


def _inferencex(result: BenchmarkResult, params: dict[str, Any],
                env: dict[str, Any]) -> tuple[ServingPoint | None, str]:  # fmt: skip
    model = str(params.get("model", ""))
    if model not in MODEL_SHAPES:
        return None, f"model {model} has no shape"
    input_tokens, output_tokens = int(params["input_tokens"]), int(params["output_tokens"])
    engine = str(env.get("engine", ""))
    layout = str(env.get("parallelism", ""))
    return (
        _point(
            result,
            model=model,
            sequence_tokens=input_tokens + output_tokens,
            facts={"source_kind": SourceKind.INFERENCEX, "benchmark": model, "framework": engine},
            source_kind=SourceKind.INFERENCEX,
            kv_cache_precision="",
            engine=engine[:120] or "not stated",
            engine_class=engine_class_of(engine),
            engine_version=str(env.get("image", ""))[:60],
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            lengths_note="fixed lengths (InferenceX's random prompts of exactly these lengths)",
            scenario=Scenario.CONCURRENCY,
            concurrency=int(params["concurrency"]),
            ttft_limit_ms=None,
            tpot_limit_ms=None,
            limits_note="no latency bound: a fixed number of requests in flight",
            tokens_per_s_per_gpu=result.value,
            tokens_per_s_per_user=env.get("median_interactivity"),
            per_user_basis=PerUserBasis.MEASURED,
            ttft_ms=env.get("median_ttft_ms"),
            date_estimated=False,
            source_title=(
                f"InferenceX · DeepSeek-R1 {result.precision.upper()} · {env.get('hardware', '')} {layout} · "
                f"{engine} · {input_tokens}/{output_tokens} · {params['concurrency']} in flight"
            )[:300],
            source_url=str(env.get("run_url", ""))[:500],
        ),  # fmt: skip
        "",
    )


def _client(result: BenchmarkResult, params: dict[str, Any], env: dict[str, Any]) -> tuple[ServingPoint | None, str]:
    """A decode configuration of our client: a fixed batch decoding from a KV cache.

    The serving sweep (``phase: serve``) and the tensor-parallel sweep hold ``context_len`` tokens
    in the cache and time single decode steps, so the rates are the client's own per-step figures
    (``extra``); the older ``phase: decode`` rows time a whole generation from a prompt."""
    phase = str(params.get("phase", "serve" if result.workload.slug == CLIENT_TP_WORKLOAD else "decode")).lower()
    if phase not in ("decode", "serve"):
        return None, "prefill result (no decode rate)"
    model = model_slug_normalise(str(params.get("model", "")))
    if model is None:
        return None, f"model {params.get('model')} has no shape"
    batch = _int(params.get("concurrency", params.get("batch", params.get("batch_size"))), 1)
    prompt = _int(params.get("context_len", params.get("prompt_len", params.get("prompt_tokens"))), 0)
    generated = _int(params.get("generated_tokens"), 0)
    interconnect = str(params.get("interconnect", ""))
    extra = {"interconnect": interconnect} if interconnect in Interconnect.values else {}
    extra_env = env.get("extra")
    figures: dict[str, Any] = extra_env if isinstance(extra_env, dict) else {}
    per_gpu = _float(figures.get("tokens_per_s_per_gpu")) or result.value / result.gpu_count
    per_user = _float(figures.get("tokens_per_s_per_user")) or result.value / batch
    if phase == "serve":
        lengths = f"{prompt} tokens of context in the cache; single decode steps timed"
        title = f"gpuatlas-bench {result.workload.slug} · concurrency {batch} · context {prompt} tokens"
    else:
        lengths = "prompt and generated tokens of the run (params)"
        title = f"gpuatlas-bench {result.workload.slug} · batch {batch} · prompt {prompt} tokens"
    if result.gpu_count > 1:
        title += f" · TP{result.gpu_count}"
    return (
        _point(
            result,
            model=model,
            sequence_tokens=prompt + generated or None,
            facts={"source_kind": SourceKind.CLIENT, "benchmark": model},
            source_kind=SourceKind.CLIENT,
            # The client keeps its KV cache in bf16 whatever the weight format.
            kv_cache_precision=str(params.get("kv_precision", "bf16"))[:8],
            engine=f"gpuatlas-bench {result.workload.slug}",
            engine_class=EngineClass.PYTORCH,
            engine_version=result.workload.version,
            input_tokens=prompt,
            output_tokens=generated or None,
            lengths_note=lengths,
            scenario=Scenario.CONCURRENCY,
            concurrency=batch,
            ttft_limit_ms=None,
            tpot_limit_ms=None,
            limits_note="fixed batch: every sequence gets one token per decode step",
            tokens_per_s_per_gpu=per_gpu,
            tokens_per_s_per_user=per_user,
            per_user_basis=PerUserBasis.MEASURED,
            ttft_ms=None,
            date_estimated=False,
            source_title=title[:300],
            source_url="",
            **extra,
            **_client_energy(result, figures, env),
        ),  # fmt: skip
        "",
    )


def _client_energy(result: BenchmarkResult, figures: dict[str, Any], env: dict[str, Any]) -> dict[str, Any]:
    """The point's measured energy fields, where the figure passes benchmarks_app.services.energy."""
    verdict = energy_verdict(
        extra=figures,
        tokens_per_s=result.value,
        gpu_count=result.gpu_count,
        reported_limit_w=env.get("power_limit_w"),
        tdp_w=result.gpu.tdp_w,
    )
    if verdict is None or not verdict.published:
        return {}
    return {
        "joules_per_token": verdict.joules_per_token,
        "power_w": verdict.power_w,
        "power_limit_w": verdict.power_limit_w,
        "energy_window_s": verdict.window_s,
        "energy_samples": verdict.samples,
        "energy_source": verdict.source,
    }


def _float(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if number > 0 else None


def _kv_precision(weight_data_types: str) -> str:
    """The KV cache format a row names ("NVFP4 weights; FP8 KV cache" -> fp8), else empty."""
    found = _KV.search(weight_data_types)
    return found[1].lower() if found else ""


def _int(value: Any, default: int) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


@transaction.atomic
def serving_points_add_for_submissions(*, submission_ids: list[int]) -> int:
    """Derive the points of these submissions' results (the live ingest: new results, no other
    source's points touched); returns how many were written."""
    results = (
        BenchmarkResult.objects.filter(RESULTS_Q[SourceKind.CLIENT], submission_id__in=submission_ids)
        .select_related("gpu", "workload")
        .order_by("id")
    )
    ServingPoint.objects.filter(result__in=results).delete()
    points = [p for p, _ in (_derive(SourceKind.CLIENT, r) for r in results) if p is not None]
    ServingPoint.objects.bulk_create(points)
    return len(points)
