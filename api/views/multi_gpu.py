"""Multi-GPU figures of one GPU: data-parallel training scaling and all-reduce bus bandwidth (the GPU page's section)."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.serializers import GpuMultiGpuSerializer
from api.views.base import ERROR_404, ERROR_429, ApiMixin, response_cached
from catalog.models import Gpu
from dashboard.multi_gpu_maths import AllreduceLine, MeasuredScaling, ScalingLine
from dashboard.selectors.scaling import MultiGpuFigures, gpu_multi_gpu


def _training(line: ScalingLine) -> dict[str, Any]:
    return {
        "workload": line.workload,
        "workload_version": line.version,
        "precision": line.precision,
        "gpu_count": line.gpu_count,
        "interconnect": line.interconnect,
        "n": line.n,
        "distinct_submitters": line.distinct_submitters,
        "tokens_per_s": line.tokens_per_s,
        "tokens_per_s_per_gpu": line.tokens_per_s_per_gpu,
        "rank_min": line.rank_min,
        "rank_max": line.rank_max,
        "scaling_efficiency": line.efficiency,
        "efficiency_n": line.efficiency_n,
        "efficiency_submitters": line.efficiency_submitters,
        "efficiency_min": line.efficiency_min,
        "efficiency_max": line.efficiency_max,
        "one_gpu_tokens_per_s": line.one_gpu_tokens_per_s,
        "ranked": line.ranked,
        "host": line.host.as_dict(),
    }


def _allreduce(line: AllreduceLine) -> dict[str, Any]:
    return {
        "workload": line.workload,
        "workload_version": line.version,
        "gpu_count": line.gpu_count,
        "interconnect": line.interconnect,
        "bytes": line.bytes,
        "dtype": line.dtype,
        "n": line.n,
        "distinct_submitters": line.distinct_submitters,
        "busbw_gbs": line.busbw_gbs,
        "algbw_gbs": line.algbw_gbs,
        "time_us": line.time_us,
        "rank_min": line.rank_min,
        "rank_max": line.rank_max,
        "host": line.host.as_dict(),
    }


def _by_count(scaling: MeasuredScaling) -> dict[str, Any]:
    return {
        "gpu_count": scaling.gpu_count,
        "scaling_efficiency": scaling.efficiency,
        "n": scaling.n,
        "distinct_submitters": scaling.distinct_submitters,
        "interconnect": scaling.interconnect,
        "tokens_per_s_per_gpu": scaling.tokens_per_s_per_gpu,
        "one_gpu_tokens_per_s": scaling.one_gpu_tokens_per_s,
        "ranked": scaling.ranked,
    }


def multi_gpu_data(*, gpu: Gpu, figures: MultiGpuFigures) -> dict[str, Any]:
    return {
        "gpu": gpu.slug,
        "gpu_name": gpu.name,
        "method": f"{figures.scaling_method} {figures.allreduce_method}",
        "min_results_ranked": figures.min_results,
        "measured_on_several_gpus": figures.measured_on_several,
        "training": [_training(line) for line in figures.training],
        "allreduce": [_allreduce(line) for line in figures.allreduce],
        "scaling_by_gpu_count": [_by_count(s) for s in figures.by_count.values()],
    }


class GpuMultiGpuView(ApiMixin, APIView):
    @extend_schema(
        summary=_("Multi-GPU results of one GPU"),
        description=_(
            'What the GPU page shows under "Several GPUs": data-parallel training per GPU count and '
            "interconnect (per-GPU throughput, scaling efficiency against the 1-GPU figure of the same runs, n) "
            "and all-reduce bus bandwidth per message size, each with the host of its newest run. Empty lists "
            "when nobody has measured the GPU on several GPUs."
        ),
        parameters=[OpenApiParameter("slug", str, OpenApiParameter.PATH, description="GPU slug (see gpus/).")],
        responses={200: GpuMultiGpuSerializer, 404: ERROR_404, 429: ERROR_429},
    )
    def get(self, request: Request, slug: str) -> HttpResponse:
        def produce() -> Response:
            gpu = None if "\x00" in slug else Gpu.objects.filter(slug=slug).only("id", "slug", "name").first()
            if gpu is None:
                raise NotFound(f"No GPU with slug {slug!r}.")
            return Response(multi_gpu_data(gpu=gpu, figures=gpu_multi_gpu(gpu_id=gpu.id)))

        return response_cached(self, request, produce)
