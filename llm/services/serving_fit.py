"""Fit the LLM models when their inputs change, and store what the pages read.

``serving_model_refit()`` is called by whatever changes the measured points or the datasheet
figures (the import commands, the client's ingest, ``rebuild_results``), right after the points
are derived. It fits

* the serving model (``llm.serving``) on every trusted ``ServingPoint``, with its
  leave-one-GPU-out and leave-one-model-out error table, the reviewer's checks
  (``llm.serving.heldout``: a time split and leave one source, GPU, model out) and the 80 %
  intervals by kind of extrapolation they give, with their out-of-sample coverage, and
* the single-stream model (``llm.serving.single_stream``: each engine class's bandwidth
  efficiency and step overhead at one sequence) on the measured single-stream points, with its
  leave-one-GPU-out error, which chat and the calculator's one-stream jobs read,
* the power curves per GPU class and model size class (``llm.serving.energy``) on every trusted
  point with a measured energy, which estimated energy per token is read from,

and stores them in one ``ServingModelFit`` row. A read never fits: pages read the newest row.
When nothing changed since the newest row (same inputs digest), nothing is written.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import asdict

from django.db import transaction
from django.utils import timezone

from gpuatlas.data_version import data_version_bump
from gpuatlas.followups import followup_after_commit
from llm.models import ServingModelFit
from llm.selectors.energy import power_samples_for_fit
from llm.selectors.serving import serving_points_for_fit
from llm.selectors.single_stream import stream_points_for_fit
from llm.serving.energy import PowerSample, power_curves_fit
from llm.serving.fit import MeasuredPoint
from llm.serving.heldout import error_rows, serving_fit_checked
from llm.serving.single_stream import StreamPoint, stream_fit

# The time split: fit on what was published before, estimate what was published from this date on
# (TensorRT-LLM's 1.0 and 1.1 tables, InferenceX, our client's runs; the 0.17 tables and llama.cpp
# before it).
TIME_SPLIT = "2025-09-01"


def _digest(points: list[MeasuredPoint], streams: list[StreamPoint], power: list[PowerSample]) -> str:
    payload = [
        (p.gpu_key, p.model_key, p.scenario, p.tokens_per_s_per_gpu, p.tokens_per_s_per_user, p.concurrency,
         p.gpu_count, p.workload.weight_precision, p.workload.bytes_per_weight, p.workload.tp, p.workload.input_len,
         p.workload.output_len, p.workload.engine, p.workload.kv_bytes, asdict(p.hardware), p.link.measured,
         p.link.bus_gbs)
        for p in points
    ]  # fmt: skip
    text = json.dumps([payload, [asdict(s) for s in streams], [asdict(s) for s in power]], sort_keys=True,
                      default=str)  # fmt: skip
    return hashlib.sha256(text.encode()).hexdigest()


# The ranking watches of the LLM use cases follow the serving points and the fit (watches, above llm).
WATCHES_AFTER_FIT_TASK = "watches.tasks.watches_evaluate_after_serving_model"
# Inside ``serving_refit_once()``: the refits writes ask for are noted here instead of run.
_REFITS_ASKED: ContextVar[list[bool] | None] = ContextVar("serving_refits_asked", default=None)


@contextmanager
def serving_refit_once() -> Iterator[None]:
    """Many writes in a row (the demo's load of a dozen client runs): each write's refit waits, and
    one refit on everything they wrote runs at the end (when one was asked for since the last
    ``serving_model_refit``), in this process.
    A fit takes seconds of scipy; one per write made the load look hung."""
    asked: list[bool] = []
    token = _REFITS_ASKED.set(asked)
    try:
        yield
    finally:
        _REFITS_ASKED.reset(token)
    if asked:
        serving_model_refit()
        # The ranking watches the writes evaluated against the fit before this one look again.
        followup_after_commit(WATCHES_AFTER_FIT_TASK)


def serving_model_refit_after_write() -> None:
    """The refit a write of measured points asks for: now, or at the end of the enclosing
    ``serving_refit_once``."""
    asked = _REFITS_ASKED.get()
    if asked is not None:
        asked.append(True)
        return
    serving_model_refit()


def serving_model_refit(*, force: bool = False) -> ServingModelFit:
    """Fit the models on the stored measurements and store them (module doc); returns the row the
    pages read."""
    asked = _REFITS_ASKED.get()
    if asked:
        asked.clear()  # this fit covers every write that asked for one so far
    points = serving_points_for_fit()
    streams = stream_points_for_fit()
    power_samples = power_samples_for_fit()
    digest = _digest(points, streams, power_samples)
    newest = ServingModelFit.objects.newest()
    if newest is not None and newest.inputs_digest == digest and not force:
        return newest
    fit, checks = serving_fit_checked(points, cutoff=TIME_SPLIT)
    single_stream = stream_fit(streams)
    serving = {**fit.constants.as_dict(), "measured_regimes": sorted(list(r) for r in fit.regimes)}
    power = {key: curve.as_dict() for key, curve in power_curves_fit(power_samples).items()}
    with transaction.atomic():
        stored = ServingModelFit.objects.create(
            constants={"serving": serving, "single_stream": single_stream.as_dict(), "power": power},
            errors={
                "serving": fit.errors,
                "serving_checks": {
                    "time_split": TIME_SPLIT,
                    "errors": error_rows(checks),
                    "intervals": fit.intervals,
                    "coverage": fit.coverage.as_dict(),
                },
            },  # fmt: skip
            fitted_at=timezone.now(),
            points=len(points),
            inputs_digest=digest,
        )
        data_version_bump()
    return stored
