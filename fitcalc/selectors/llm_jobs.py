"""Reads for the fit calculator's LLM inference figures per GPU count (the calibrated model,
measured figures first); training's multi-GPU rates are fitcalc.parallel's.

LLM inference (``fitcalc.llm`` does the arithmetic):

* the model's constants and its leave-one-GPU-out error are the live ones
  (``llm.selectors.figures.llm_model_state``), as on the rankings and /llm-model/;
* measured figures are the LLM rankings' (``llm.selectors.rows``): for batched serving the
  median per GPU over the newest MLPerf round's systems (closed division, available systems) of
  the job's size class and weight-format family; for one stream the figure the LLM chat ranking
  shows for that size class and family (llama.cpp, Ollama's eval rate, the benchmark client).
  Only presets that are members of a size class (``llm.serving.shapes.SIZE_CLASSES``) have them.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from django.utils.translation import gettext as _

from benchmarks_app.comparison_rules import PRECISION_FAMILIES
from fitcalc.llm import (
    ONE_STREAM,
    PRECISION_FAMILY,
    SERVING,
    LlmError,
    LlmGpu,
    LlmMeasured,
    LlmShape,
    llm_count_rates,
    llm_shape_of_job,
    llm_shape_of_measured,
)
from fitcalc.memory import MemoryBreakdown
from fitcalc.plan import CountRate
from fitcalc.presets import ModelSpec
from llm.estimate.constants import LlmConstants
from llm.selectors.figures import _reference_benchmark, llm_model_state
from llm.selectors.rows import LlmPoint, LlmRow, llm_points, llm_rows, mlperf_serving_figure
from llm.serving.comm import catalogue_link
from llm.serving.shapes import MODEL_SHAPES, SIZE_CLASSES, model_size_class

DDP_WORKLOAD = "transformer-train-ddp"


# --- LLM inference ---------------------------------------------------------------------------


def serving_benchmark(*, model: ModelSpec) -> str:
    """The MLPerf benchmark whose fitted serving efficiency estimates this model: its size
    class's, else that of the size class whose reference model is nearest in active parameters."""
    size = model_size_class(model.slug) if model.slug in MODEL_SHAPES else None
    if size:
        return _reference_benchmark(size)
    candidates = [
        (abs(math.log(MODEL_SHAPES[c.reference].active_params_b * 1e9 / model.compute_params)), c.slug)
        for c in SIZE_CLASSES.values()
        if _reference_benchmark(c.slug)
    ]
    return _reference_benchmark(min(candidates)[1]) if candidates and model.compute_params > 0 else ""


def _model_of(rows: Iterable[LlmRow]) -> str:
    return statistics.mode(row.model for row in rows)


def llm_measured_figures(
    *, gpu_ids: list[int], model: ModelSpec, precision: str, mode: str, full_load: bool, constants: LlmConstants
) -> dict[int, LlmMeasured]:
    """gpu id -> the measured figure that anchors this job (module docstring). One query."""
    size = model_size_class(model.slug) if model.slug in MODEL_SHAPES else None
    family = PRECISION_FAMILY.get(precision)
    if size is None or family is None or (mode == SERVING and not full_load):
        return {}
    precisions = PRECISION_FAMILIES[family][0]
    rows = [r for r in llm_rows(gpu_ids=gpu_ids) if model_size_class(r.model) == size]
    out: dict[int, LlmMeasured] = {}
    if mode == SERVING:
        by_gpu: dict[int, list[LlmRow]] = defaultdict(list)
        for row in rows:
            if row.kind == "serving" and row.default_basis and row.precision in precisions:
                by_gpu[row.gpu_id].append(row)
        for gpu_id, group in by_gpu.items():
            figure = mlperf_serving_figure(group)
            if figure is None:
                continue
            chosen = [r for r in group if r.comparison_key in figure.keys]
            shape = MODEL_SHAPES[_model_of(chosen)]
            out[gpu_id] = LlmMeasured(
                tokens_per_s=figure.tokens_per_s,
                gpu_count=figure.gpu_count,
                n=figure.systems,
                source=figure.label,
                url=figure.url,
                shape=llm_shape_of_measured(shape=shape, precision=figure.precision, quant="", mode=SERVING),
                context=constants.serving_context_tokens,
                benchmark=chosen[0].benchmark,
            )
        return out
    by_key: dict[tuple[int, str], LlmRow] = {(r.gpu_id, r.comparison_key): r for r in rows}
    best: dict[int, LlmPoint] = {}
    for point in llm_points(rows):
        if point.kind != "decode" or not point.qualifies or not point.default_basis:
            continue
        if point.precision not in precisions:
            continue
        current = best.get(point.gpu_id)
        if current is None or _chat_order(point, model.slug) < _chat_order(current, model.slug):
            best[point.gpu_id] = point
    for gpu_id, point in best.items():
        row = by_key[(gpu_id, point.comparison_key)]
        out[gpu_id] = LlmMeasured(
            tokens_per_s=point.tokens_per_s,
            gpu_count=point.gpu_count,
            n=point.n,
            source=point.label,
            url=point.url,
            shape=llm_shape_of_measured(
                shape=MODEL_SHAPES[point.model], precision=point.precision, quant=row.quant, mode=ONE_STREAM
            ),
            context=max(1, row.context_tokens * 2),  # the row's context is the average while generating
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
    context: int
    benchmark: str
    constants: LlmConstants
    typical_error: float | None
    measured: Mapping[int, LlmMeasured]
    fitted: str
    error: LlmError = LlmError()

    @property
    def typical_error_percent(self) -> int | None:
        return None if self.typical_error is None else round(self.typical_error * 100)


def llm_job_context(
    *, model: ModelSpec, breakdown: MemoryBreakdown, serving: str, users: int | None, gpu_ids: list[int]
) -> LlmJobContext:
    """The live model state (a few queries while it is unchanged) and the measured figures (one)."""
    state = llm_model_state()
    constants = state.constants
    mode = ONE_STREAM if serving == ONE_STREAM else SERVING
    use_case = "chat" if mode == ONE_STREAM else "serving"
    error_pct = constants.typical_error_pct.get(use_case)
    outside_pct = constants.outside_error_pct.get(use_case, error_pct)
    measured = llm_measured_figures(
        gpu_ids=gpu_ids,
        model=model,
        precision=breakdown.precision.value,
        mode=mode,
        full_load=users is None,
        constants=constants,
    )
    return LlmJobContext(
        shape=llm_shape_of_job(model=model, breakdown=breakdown),
        mode=mode,
        users=users if mode == SERVING else 1,
        context=breakdown.context,
        benchmark=serving_benchmark(model=model),
        constants=constants,
        typical_error=None if error_pct is None else error_pct / 100,
        measured=measured,
        fitted=constants.fitted,
        error=LlmError(
            inside=None if error_pct is None else error_pct / 100,
            outside=None if outside_pct is None else outside_pct / 100,
            coverage=state.error.coverage,
            kind="decode" if mode == ONE_STREAM else "serving",
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
        context=job.context,
        users=None if job.mode == ONE_STREAM else job.users,
        benchmark=job.benchmark,
        constants=job.constants,
        measured=measured,
        error=job.error,
    )
    return LlmJobFacts(rates, measured)


def llm_gpu(*, row: Mapping[str, Any], peaks: Mapping[str, float | None]) -> LlmGpu:
    """A catalogue row as the model reads it: dense tensor peaks plus the vector FP16 rate, the link
    between cards (as the LLM rankings price it: llm.selectors.figures.gpu_link_for), vendor and
    architecture."""
    tensor = dict(peaks)
    tensor["fp16_nontensor"] = row.get("fp16_tflops")
    link = catalogue_link(row)
    return LlmGpu(
        memory_gib=row["memory_gib"],
        bandwidth_gbs=row["memory_bandwidth_gbs"],
        tensor_tflops=tensor,
        link=link,
        vendor=row.get("vendor__slug") or "",
        architecture=row.get("architecture__slug") or "",
    )
