"""python manage.py llm_model_fit [--points]"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from benchmarks_app.models import BenchmarkResult
from llm.selectors.model_page import llm_landmarks
from llm.selectors.rows import llm_points, llm_rows
from llm.selectors.serving import serving_fit_from_stored, serving_points_for_fit
from llm.services.serving_fit import serving_model_refit
from llm.serving.fit import predict
from llm.serving.shapes import SIZE_CLASSES
from llm.serving.single_stream import StreamFit


class Command(BaseCommand):
    help = (
        "Fit the LLM serving model (and its single-stream efficiencies) on every measured serving point, store the "
        "fit (ServingModelFit), and print its leave-one-GPU-out and leave-one-model-out error (median and 90th "
        "percentile of |estimate / measured - 1| per scenario and engine class, inside and outside the measured "
        "range), the reviewer's checks, the intervals and the single-stream constants with their error."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--points", action="store_true", help="list every serving point with its in-fit estimate")

    def handle(self, *args: Any, **options: Any) -> None:
        stored = serving_model_refit(force=True)
        fit = serving_fit_from_stored(stored)
        self.stdout.write(f"serving model: fitted {stored.fitted_at:%Y-%m-%d %H:%M} UTC on {stored.points} points")
        for name, value in fit.constants.as_dict().items():
            self.stdout.write(f"  {name} = {_rounded(value)}")
        self.stdout.write("serving model, held-out error |estimate / measured - 1| (n, median, 90th percentile):")
        for by, title in (("gpu", "leave one GPU out"), ("model", "leave one model out")):
            self.stdout.write(f"  {title}:")
            for group, cells in fit.errors.get(by, {}).items():
                parts = [
                    f"{where} n={c['n']:4} median {c['median_pct']:5.1f} % p90 {c['p90_pct']:5.1f} %"
                    for where, c in sorted(cells.items())
                ]
                self.stdout.write(f"    {group:28} " + "   ".join(parts))
        checks = stored.errors.get("serving_checks", {}) if isinstance(stored.errors, dict) else {}
        self.stdout.write(
            f"serving model, reviewer's checks (time split at {checks.get('time_split', '?')}: fit on what was "
            "published before, estimate the rest; leave one source / GPU / model out):"
        )
        for check, groups in checks.get("errors", {}).items():
            self.stdout.write(f"  {check}:")
            for group, c in groups.items():
                self.stdout.write(
                    f"    {group:28} n={c['n']:4} median {c['median_pct']:6.1f} % p90 {c['p90_pct']:7.1f} %"
                )
        self.stdout.write("80 % interval by kind of extrapolation (estimate / measured, p10 to p90) and its coverage:")
        for kind, v in checks.get("intervals", {}).items():
            self.stdout.write(
                f"  {kind:28} n={v['n']:4} [{v['p10']:.2f}, {v['p90']:.2f}] coverage "
                f"{'not checkable' if v.get('coverage') is None else format(v['coverage'] * 100, '5.1f') + ' %'}"
            )
        if not stored.points:
            self.stdout.write("  no measured serving points: import MLPerf / TensorRT-LLM / llama.cpp results first")
        if options["points"]:
            for point in serving_points_for_fit():
                got = predict(point, fit.constants)
                estimate = f"{got.tokens_per_s_per_gpu:9.1f}" if got else "   no fit"
                self.stdout.write(f"  {point.tokens_per_s_per_gpu:9.1f} measured {estimate} estimate  {point.label}")
        stream = StreamFit.from_dict(stored.constants.get("single_stream") or {})
        self.stdout.write("single stream (batch-1 decode from bandwidth), per engine class / weight format:")
        for key in sorted(stream.efficiency):
            self.stdout.write(f"  {key:24} efficiency {stream.efficiency[key]:.3f}  step overhead "
                              f"{stream.overhead_ms[key]:.3f} ms  ({stream.points.get(key, 0)} points)")  # fmt: skip
        for key, cell in sorted(stream.errors.items()):
            self.stdout.write(f"  leave one GPU out, {key:18} n={cell['n']:4} median {cell['median_pct']:5.1f} % "
                              f"p90 {cell['p90_pct']:5.1f} %")  # fmt: skip
        self.stdout.write("one stream at 4 bits on landmark GPUs (estimate, measured best):")
        for landmark in llm_landmarks(stream=stream):
            self.stdout.write(f"  {landmark.line()}")
        self.stdout.write(
            f"catalogue GPUs with a trusted measured result (any workload): "
            f"{BenchmarkResult.objects.trusted().values('gpu').distinct().count()}"
        )
        points = [p for p in llm_points(llm_rows()) if p.qualifies]
        for kind in ("serving", "decode"):
            counts = [
                f"{size} {len({p.gpu_id for p in points if p.kind == kind and p.size == size})}"
                for size in SIZE_CLASSES
            ]
            self.stdout.write(f"{kind}: GPUs with a qualifying measured figure by model size: {', '.join(counts)}")


def _rounded(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 4)
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    return value
