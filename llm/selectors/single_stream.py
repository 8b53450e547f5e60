"""Reads of the single-stream model (llm.serving.single_stream): the measured single-stream points
it is fitted on (at a write), and its constants as the newest stored fit holds them."""

from __future__ import annotations

import re
from collections import defaultdict

from django.db.models import Q

from benchmarks_app.models import SourceKind
from llm.models import ServingModelFit, ServingPoint
from llm.selectors.rows import CHAT_CONTEXT_TOKENS
from llm.selectors.serving import serving_hardware, weight_format
from llm.serving.physics import Workload
from llm.serving.shapes import MODEL_SHAPES
from llm.serving.single_stream import StreamFit, StreamPoint, memory_family, stream_bytes_per_token

# Hosts whose stream the model does not describe: a GPU behind a single-board computer's narrow
# PCIe link, where the host, not the GPU's memory, sets the pace.
_SBC_HOST = re.compile(r"\bPi\b|Raspberry|HiFive|RISC-V|Radxa|DC-ROMA", re.IGNORECASE)


def stream_points_for_fit() -> list[StreamPoint]:
    """Every trusted measured single-stream point of a model the estimate knows (a source's one
    stream, or the benchmark client's decode at concurrency 1 on one GPU), on a GPU with a
    bandwidth figure, as the single-stream fit reads it. The layers split over several GPUs run at
    one GPU's bandwidth (the stream's rate is the point's). A point whose lengths the source does
    not give (Ollama's eval rate) is read at the chat ranking's context: for one stream the keys
    and values are a few per cent of the bytes a token reads. The client's decode runs at a fixed
    context (its prompt length, no output length)."""
    rows = list(
        ServingPoint.objects.trusted()
        .filter(model__in=list(MODEL_SHAPES))
        .filter(Q(scenario="single-stream") | Q(source_kind=SourceKind.CLIENT, concurrency=1, gpu_count=1))
        .select_related("gpu", "gpu__architecture", "result")
        .order_by("id")
    )
    peaks: dict[int, dict[str, float | None]] = defaultdict(dict)
    out: list[StreamPoint] = []
    for r in rows:
        params = r.result.params if isinstance(r.result.params, dict) else {}
        if _SBC_HOST.search(str(params.get("host", ""))):
            continue
        try:
            weight_precision, bpw = weight_format(r.quant or r.weight_precision)
        except KeyError:
            continue
        hw = serving_hardware(r.gpu, peaks=peaks[r.gpu_id])
        rate = r.tokens_per_s_per_user or r.tokens_per_s_per_gpu * r.gpu_count
        if not hw.bandwidth_gbs or not rate or rate <= 0:
            continue
        input_len = r.input_tokens if r.input_tokens is not None else CHAT_CONTEXT_TOKENS // 2
        fixed_context = r.source_kind == SourceKind.CLIENT and r.output_tokens is None
        output_len = (
            r.output_tokens if r.output_tokens is not None else 0 if fixed_context else CHAT_CONTEXT_TOKENS // 2
        )
        w = Workload(MODEL_SHAPES[r.model], weight_precision, bpw, input_len, output_len, engine=r.engine_class)
        out.append(StreamPoint(r.gpu.slug, r.engine_class, memory_family(r.gpu.memory_type), weight_precision, stream_bytes_per_token(w, hw),
                               hw.bandwidth_gbs, rate, f"{r.source_title}: {r.gpu.name} x{r.gpu_count} {r.model} "
                               f"{r.quant or r.weight_precision}"))  # fmt: skip
    return out


def stream_fit_current() -> StreamFit:
    """The single-stream constants of the newest stored fit (the defaults before any fit). Never fits."""
    stored = ServingModelFit.objects.newest()
    data = stored.constants.get("single_stream") if stored and isinstance(stored.constants, dict) else None
    return StreamFit.from_dict(data) if isinstance(data, dict) else StreamFit()
