"""Reads for the fit calculator's LLM inference figures per GPU count where the serving answers
do not cover the job (one stream, a fixed number of users, a model the serving model has no
shape of); training's multi-GPU rates are fitcalc.parallel's.

LLM inference (``fitcalc.llm`` does the arithmetic):

* the constants and held-out errors are the newest stored fit's (``llm.selectors.serving``,
  ``llm.selectors.single_stream``), as on the rankings and /llm-model/;
* one stream is anchored on the figure the LLM chat ranking shows for the job's size class and
  weight-format family (llama.cpp, Ollama's eval rate, the benchmark client). Only presets that
  are members of a size class (``llm.serving.shapes.SIZE_CLASSES``) have one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.utils.translation import gettext as _

from benchmarks_app.comparison_rules import PRECISION_FAMILIES
from fitcalc.llm import (
    ONE_STREAM,
    PRECISION_FAMILY,
    SERVING,
    STREAM_ENGINE,
    LlmError,
    LlmGpu,
    LlmMeasured,
    LlmModel,
    LlmShape,
    llm_count_rates,
    llm_shape_of_job,
    llm_shape_of_measured,
)
from fitcalc.memory import MemoryBreakdown
from fitcalc.plan import CountRate
from fitcalc.presets import ModelSpec
from llm.selectors.rows import LlmPoint, llm_points_current
from llm.selectors.serving import serving_fit_current
from llm.selectors.single_stream import stream_fit_current
from llm.serving.comm import catalogue_link
from llm.serving.physics import Hardware, ServingConstants, hardware_class
from llm.serving.shapes import MODEL_SHAPES, model_size_class
from llm.serving.single_stream import memory_family

DDP_WORKLOAD = "transformer-train-ddp"


# --- LLM inference ---------------------------------------------------------------------------


def llm_measured_figures(*, gpu_ids: list[int], model: ModelSpec, precision: str, mode: str) -> dict[int, LlmMeasured]:
    """gpu id -> the measured one-stream figure that anchors this job (module doc), from the LLM
    points of every GPU (``llm_points_current``: cached by data version, one query where not)."""
    size = model_size_class(model.slug) if model.slug in MODEL_SHAPES else None
    family = PRECISION_FAMILY.get(precision)
    if size is None or family is None or mode != ONE_STREAM:
        return {}
    precisions = PRECISION_FAMILIES[family][0]
    asked = set(gpu_ids)
    out: dict[int, LlmMeasured] = {}
    best: dict[int, LlmPoint] = {}
    # The points the chat ranking and the GPU pages read, classified once per data version.
    for point in llm_points_current():
        if point.gpu_id not in asked or point.size != size:
            continue
        if point.kind != "decode" or not point.qualifies or not point.default_basis:
            continue
        if point.precision not in precisions:
            continue
        current = best.get(point.gpu_id)
        if current is None or _chat_order(point, model.slug) < _chat_order(current, model.slug):
            best[point.gpu_id] = point
    for gpu_id, point in best.items():
        # The point's context is the average while generating: the prompt plus half the output.
        half = max(1, point.context_tokens)
        out[gpu_id] = LlmMeasured(
            tokens_per_s=point.tokens_per_s,
            gpu_count=point.gpu_count,
            n=point.n,
            source=point.label,
            url=point.url,
            shape=llm_shape_of_measured(shape=MODEL_SHAPES[point.model], precision=point.precision, quant=point.quant),
            input_len=half,
            output_len=half,
        )
    return out


def _chat_order(point: LlmPoint, model_slug: str) -> tuple[Any, ...]:
    """The job's own model first, then the LLM chat ranking's order of sources (the client, the
    newest llama.cpp tables, Ollama, older tables), newest, fewest GPUs, most results."""
    return (
        point.model != model_slug,
        point.source_rank,
        tuple(-ord(c) for c in point.recency),
        point.gpu_count,
        -point.n,
        -point.tokens_per_s,
    )


@dataclass(frozen=True)
class LlmJobFacts:
    """The LLM inference figures of one GPU model: each count's rate, and the measurement used."""

    count_rates: dict[int, CountRate]
    measured: LlmMeasured | None


@dataclass(frozen=True)
class LlmJobContext:
    """What every GPU's LLM figures share: the job as the model sees it, the constants, the error."""

    shape: LlmShape | None
    mode: str
    users: int | None
    input_len: int
    output_len: int
    model: LlmModel
    typical_error: float | None
    measured: Mapping[int, LlmMeasured]
    fitted: str
    error: LlmError = LlmError()

    @property
    def typical_error_percent(self) -> int | None:
        return None if self.typical_error is None else round(self.typical_error * 100)


def llm_job_context(
    *,
    model: ModelSpec,
    breakdown: MemoryBreakdown,
    serving: str,
    users: int | None,
    gpu_ids: list[int],
    input_len: int,
    output_len: int,
) -> LlmJobContext:
    """The stored fit (two queries) and the measured figures (``llm_measured_figures``)."""
    fit = serving_fit_current()
    stream = stream_fit_current()
    mode = ONE_STREAM if serving == ONE_STREAM else SERVING
    if mode == ONE_STREAM:
        # One stream's context is the calculator's: the prompt and the output share it.
        input_len = breakdown.context // 2
        output_len = max(1, breakdown.context - input_len)
    stream_error = stream.error_pct(STREAM_ENGINE)
    serving_error = {
        inside: fit.error_pct(scenario="concurrency" if users else "offline", engine="tensorrt-llm", inside=inside)
        for inside in (True, False)
    } if fit is not None else {}  # fmt: skip
    typical = stream_error if mode == ONE_STREAM else serving_error.get(True)
    stored = fit.constants if fit is not None else ServingConstants()
    return LlmJobContext(
        shape=llm_shape_of_job(model=model, breakdown=breakdown),
        mode=mode,
        users=users if mode == SERVING else 1,
        input_len=input_len,
        output_len=output_len,
        model=LlmModel(stored, stream),
        typical_error=None if typical is None else typical / 100,
        measured=llm_measured_figures(gpu_ids=gpu_ids, model=model, precision=breakdown.precision.value, mode=mode),
        fitted=f"serving model fitted on {fit.points} points" if fit is not None else "",
        error=LlmError(
            one_stream=None if stream_error is None else stream_error / 100,
            stream=stream,
            serving={k: None if v is None else v / 100 for k, v in serving_error.items()},
            serving_regimes=fit.regimes if fit is not None else frozenset(),
        ),
    )


def llm_job_facts(
    *, job: LlmJobContext, gpu_id: int, gpu: LlmGpu, counts: tuple[int, ...], no_bf16: bool
) -> LlmJobFacts:
    """One GPU model's rate at each count (pure once ``job`` is read)."""
    kind = {1: "single"}
    if job.shape is None or no_bf16:
        why = (
            _("this GPU has no BF16 support: choose FP16")
            if no_bf16
            else _("the model's shapes (layers, hidden size) are unknown")
        )
        scaling = "layer-split" if job.mode == ONE_STREAM else "tensor-parallel"
        return LlmJobFacts({c: CountRate(None, "none", kind.get(c, scaling), why) for c in counts}, None)
    measured = job.measured.get(gpu_id)
    rates = llm_count_rates(
        gpu=gpu,
        shape=job.shape,
        mode=job.mode,
        counts=counts,
        input_len=job.input_len,
        output_len=job.output_len,
        users=None if job.mode == ONE_STREAM else job.users,
        model=job.model,
        measured=measured,
        error=job.error,
    )
    return LlmJobFacts(rates, measured)


def llm_gpu(*, row: Mapping[str, Any], peaks: Mapping[str, float | None]) -> LlmGpu:
    """A catalogue row as the serving model reads it (``llm.selectors.serving.serving_hardware``'s
    figures from a row: dense tensor peaks, the vector FP16 rate where there is no tensor path),
    the link between cards and the vendor."""
    tensor = dict(peaks)
    tensor.setdefault("fp16_nontensor", row.get("fp16_tflops"))
    hardware = Hardware(
        memory_gib=float(row["memory_gib"] or 0.0),
        bandwidth_gbs=float(row["memory_bandwidth_gbs"] or 0.0),
        tensor_tflops=tensor,
        hardware_class=hardware_class(
            architecture=row.get("architecture__slug") or "", segment=row.get("segment") or ""
        ),
    )
    return LlmGpu(hardware=hardware, link=catalogue_link(row), vendor=row.get("vendor__slug") or "",
                  memory=memory_family(row.get("memory_type") or ""))  # fmt: skip
