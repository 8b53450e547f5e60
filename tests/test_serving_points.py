"""Measured LLM serving points: MLPerf latency limits, precision plausibility on the real MLPerf
v4.1 rows, the TensorRT-LLM performance overview in both copied layouts, llama.cpp and our
client's llm-decode results, the rebuild and the API."""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse
from hypothesis import given
from hypothesis import strategies as st

from benchmarks_app.models import BenchmarkResult
from benchmarks_app.services.lab_tables import LabTableError
from benchmarks_app.services.mlperf_import import BUNDLED_DIR as MLPERF_DIR
from benchmarks_app.services.mlperf_import import mlperf_import_file
from benchmarks_app.services.workloads import workload_seed
from llm.mlperf_rules import LATENCY_LIMITS, RULES_FILES, mlperf_latency_limits
from llm.models import PrecisionStatus, ServingPoint
from llm.precision import corrections_load, fits_in_memory
from llm.selectors.rows import llm_rows
from llm.services.serving_points import serving_points_rebuild
from llm.services.trtllm_import import BUNDLED_DIR as TRTLLM_DIR
from llm.services.trtllm_import import trtllm_import_bundled, trtllm_import_file
from llm.serving.shapes import SIZE_CLASSES
from llm.trtllm import TrtllmFormatError, trtllm_parse
from tests.factories import document_ingest
from tests.world import LLM_WORLD, world_build

RULES_DIR = Path(__file__).resolve().parents[1] / "llm" / "data" / "mlperf_rules"
CLIENT_FIXTURE = Path(__file__).parent / "fixtures" / "bench" / "h100_run_llm.json"
TP_FIXTURE = Path(__file__).parent / "fixtures" / "bench" / "h200x2_nvlink_llama70b_tp.json"
V41 = MLPERF_DIR / "inference_results_v4.1" / "summary_results.json.gz"


# --- MLPerf latency limits ---------------------------------------------------------------------


def _conf_limits(text: str) -> dict[str, tuple[float, float]]:
    found: dict[str, dict[str, float]] = {}
    for key, kind, value in re.findall(r"^([\w.-]+)\.Server\.(ttft|tpot)_latency\s*=\s*(\d+)", text, re.MULTILINE):
        found.setdefault(key, {})[kind] = float(value)
    return {k: (v["ttft"], v["tpot"]) for k, v in found.items()}


@pytest.mark.parametrize("round_", sorted(RULES_FILES))
def test_the_limits_table_is_the_copied_mlperf_conf_of_each_round(round_):
    in_file = _conf_limits((RULES_DIR / f"v{round_}" / "mlperf.conf").read_text())
    in_table = {key: limits for (r, key), limits in LATENCY_LIMITS.items() if r == round_}
    assert in_table == in_file


def test_limits_per_scenario_and_rounds_the_table_lacks():
    server = mlperf_latency_limits(round_="4.1", benchmark="llama2-70b-99.9", scenario="server")
    assert (server.ttft_ms, server.tpot_ms, server.user_rate_floor) == (2000, 200, 5.0)
    assert "379ee5345a25" in server.note
    interactive = mlperf_latency_limits(round_="5.1", benchmark="llama2-70b-99", scenario="interactive")
    assert (interactive.ttft_ms, interactive.tpot_ms, interactive.user_rate_floor) == (450, 40, 25.0)
    offline = mlperf_latency_limits(round_="6.1", benchmark="llama3.1-405b", scenario="offline")
    assert offline.tpot_ms is None and offline.user_rate_floor is None and "no latency bound" in offline.note
    later = mlperf_latency_limits(round_="7.0", benchmark="deepseek-r1", scenario="interactive")
    assert (later.ttft_ms, later.tpot_ms) == (1500, 15) and "v6.1" in later.note and "not in the table" in later.note
    # v4.1 had no Interactive scenario; a benchmark no rules define gets no bound and the reason.
    assert mlperf_latency_limits(round_="4.1", benchmark="llama2-70b-99", scenario="interactive").tpot_ms is None
    new = mlperf_latency_limits(round_="7.0", benchmark="qwen3-moe-99", scenario="server")
    assert new.tpot_ms is None and "qwen3-moe-99" in new.note


# --- precision plausibility ----------------------------------------------------------------------


def test_every_correction_cites_a_file_and_quotes_it():
    corrections = corrections_load()
    assert {c.id for c in corrections} >= {"mlperf-v4.1-tensorrt-hopper-llama2-70b"}
    for correction in corrections:
        assert correction.source_url.startswith("https://") and len(correction.quote) > 20


@given(
    memory=st.floats(min_value=8, max_value=300),
    extra=st.floats(min_value=0, max_value=300),
    gpus=st.integers(min_value=1, max_value=8),
    precision=st.sampled_from(["fp4", "fp8", "bf16", "fp32"]),
)
def test_more_memory_never_makes_a_precision_implausible(memory, extra, gpus, precision):
    def fits(gib: float) -> bool:
        result = fits_in_memory(
            model="llama-3.1-70b", precision=precision, quant="", memory_gib=gib, gpu_count=gpus, sequence_tokens=2048
        )
        assert result is not None
        return result[0]

    assert not fits(memory) or fits(memory + extra)


def test_narrower_formats_need_less_memory():
    def fits(precision: str) -> bool:
        result = fits_in_memory(
            model="llama-2-70b", precision=precision, quant="", memory_gib=96, gpu_count=1, sequence_tokens=2048
        )
        assert result is not None
        return result[0]

    assert fits("fp4") and fits("fp8") and not fits("fp16") and not fits("fp32")


@pytest.mark.django_db
def test_real_v41_rows_no_fp8_run_is_16_bit_and_gh200_96gb_is_not_fp16():
    world_build(rows=LLM_WORLD)
    mlperf_import_file(path=V41, published=dt.date(2024, 8, 28))
    llama = ServingPoint.objects.filter(model="llama-2-70b", result__workload__version="4.1")
    gh200 = llama.filter(gpu__slug="gh200-96-gb")
    assert gh200.exists()
    assert set(gh200.values_list("weight_precision_stated", "weight_precision", "precision_status")) == {
        ("fp16", "fp8", PrecisionStatus.CORRECTED)
    }
    # Every TensorRT run on Hopper states fp16 and ran FP8; none is left as 16-bit.
    hopper = llama.filter(engine_class="tensorrt-llm", gpu__slug__regex=r"^(h100|h200|gh200)")
    assert hopper.count() > 100 and not hopper.exclude(weight_precision="fp8").exists()
    # The v4.1 B200 run's format cannot be read from a cited file; a 70B in FP16 on a 64 GB Jetson is impossible.
    for slug in ("b200", "jetson-agx-orin-64-gb"):
        points = llama.filter(gpu__slug=slug)
        assert points.exists() and set(points.values_list("precision_status", flat=True)) == {"unknown"}
    assert not ServingPoint.objects.trusted().filter(precision_status="unknown").exists()
    # The 70B ranking's rows at 16 bits: none of them is a corrected or unknown run.
    sixteen = [
        r for r in llm_rows() if r.model in SIZE_CLASSES["70b"].members and r.precision in ("fp16", "bf16")
    ]  # fmt: skip
    not_as_stated = {
        f"{p.result.environment['submitter']} {p.result.environment['system']}"
        for p in llama.exclude(precision_status="stated").select_related("result")
    }
    assert len(not_as_stated) > 20 and sixteen
    assert not {r.system for r in sixteen} & not_as_stated
    # Server points carry the round's limits and a per-user floor; Offline has none.
    server = llama.filter(scenario="server").first()
    assert server is not None and (server.ttft_limit_ms, server.tpot_limit_ms) == (2000, 200)
    assert server.tokens_per_s_per_user == 5.0 and server.per_user_basis == "latency-floor"
    offline = llama.filter(scenario="offline").first()
    assert offline is not None and offline.tokens_per_s_per_user is None and offline.per_user_basis == "undefined"
    assert offline.output_tokens == 294 and offline.result.source == offline.source


@pytest.mark.django_db
def test_a_future_round_with_a_new_benchmark_imports_with_its_reason(tmp_path):
    world_build(rows=LLM_WORLD)
    rows = [
        {"Organization": "NVIDIA", "Availability": "available", "Division": "closed", "SystemName": "DGX H200",
         "MlperfModel": model, "Scenario": "Server", "Result": "40000", "Units": "Tokens/s",
         "accelerator_model_name": "NVIDIA H200-SXM-141GB", "total_accelerators": "8", "weight_data_types": "fp8",
         "framework": "TensorRT-LLM 1.3", "version": "v7.0"}
        for model in ("llama2-70b-99", "llama3.1-70b-99")
    ]  # fmt: skip
    path = tmp_path / "summary.csv"
    header = list(rows[0])
    path.write_text(",".join(header) + "\n" + "\n".join(",".join(r[h] for h in header) for r in rows) + "\n")
    mlperf_import_file(path=path, published=dt.date(2027, 4, 1))
    old = ServingPoint.objects.get(model="llama-2-70b", result__workload__version="7.0")
    assert old.tpot_limit_ms == 200 and "v6.1" in old.limits_note
    new = ServingPoint.objects.get(model="llama-3.1-70b", result__workload__version="7.0")
    assert new.tpot_limit_ms is None and new.tokens_per_s_per_user is None and "llama3.1-70b-99" in new.limits_note
    assert new.tokens_per_s_per_gpu == 5000 and new.engine_class == "tensorrt-llm"


# --- TensorRT-LLM performance overview ------------------------------------------------------------


def test_v017_wide_and_serving_tables():
    rows = trtllm_parse((TRTLLM_DIR / "v0.17" / "perf-overview.md").read_text(), default_version="0.17")
    assert len(rows) == 445
    assert sum(r.table == "serving" for r in rows) == 72
    h100 = next(r for r in rows if r.model == "llama-3.1-70b" and r.gpu_name == "H100 80GB HBM3"
                and r.tensor_parallel == 1 and (r.input_tokens, r.output_tokens) == (1000, 1000) and r.table == "throughput")  # fmt: skip
    assert (h100.precision, h100.tokens_per_s, h100.tokens_per_s_per_gpu, h100.version) == (
        "fp8",
        839.97,
        839.97,
        "0.17",
    )
    a100 = next(r for r in rows if r.gpu_name == "A100-SXM4-80GB" and r.model == "llama-3.1-70b" and r.tensor_parallel == 8
                and (r.input_tokens, r.output_tokens) == (1000, 1000))  # fmt: skip
    assert (a100.precision, a100.tokens_per_s_per_gpu) == ("fp16", pytest.approx(3320.41 / 8))
    served = next(r for r in rows if r.table == "serving" and r.model == "llama-3.1-70b" and r.gpu_name == "H100 80GB HBM3"
                  and r.input_tokens == 467 and r.output_tokens == 256 and r.qps == 8)  # fmt: skip
    assert (served.precision, served.version, served.itl_ms, served.ttft_ms) == ("bf16", "0.14.0", 32, 92)
    assert served.tokens_per_s_per_gpu == pytest.approx(1860 / 4)
    unbounded = [r for r in rows if r.table == "serving" and r.qps is None]
    assert len(unbounded) == 12


def test_serving_rows_with_fewer_than_one_request_in_flight_are_rate_limited():
    """The 0.14.0 serving table's rows the held-out checks read +237 to +346 % off: LLaMA 3.1 8B at
    467/16 on one H100 or H200 at 2 requests/s. The table served every request offered
    (Tput(req/s) = QPS), and by Little's law only 0.19 to 0.25 were in flight: the GPU idled, the
    32 output tokens/s are 2 x 16, not what the GPU does at 7 ms per token (one request after
    another: 16 / (0.019 + 15 x 0.007) = 129 tokens/s)."""
    rows = trtllm_parse((TRTLLM_DIR / "v0.17" / "perf-overview.md").read_text(), default_version="0.17")
    served = [r for r in rows if r.table == "serving"]
    limited = {r.line: r for r in served if r.rate_limited}
    assert sorted(limited) == [157, 175, 176, 193, 211, 212, 213]
    assert all(r.requests_per_s == r.qps and r.output_tokens == 16 for r in limited.values())
    h100 = limited[175]
    assert (h100.model, h100.gpu_name, h100.qps, h100.tokens_per_s, h100.ttft_ms, h100.itl_ms) == (
        "llama-3.1-8b", "H100 80GB HBM3", 2, 32, 19, 7)  # fmt: skip
    assert h100.requests_in_flight == pytest.approx(2 * (0.019 + 15 * 0.007))
    assert limited[211].requests_in_flight == pytest.approx(0.186)  # H200, 2 requests/s
    # One request in flight or more: the GPU was busy, the model is asked at what was in flight.
    at_eight = next(r for r in served if r.line == 177)  # H100, 8 requests/s: 126 / 16 x 0.127 s = 1.0 in flight
    assert (
        at_eight.qps == 8
        and at_eight.requests_in_flight == pytest.approx(1.0001, abs=1e-4)
        and not at_eight.rate_limited
    )
    assert not any(r.rate_limited for r in served if r.qps is None)  # unbounded: the capacity
    assert not any(r.rate_limited for r in rows if r.table == "throughput")


def test_v10_per_model_tables_and_pipeline_parallel_columns():
    rows = trtllm_parse((TRTLLM_DIR / "v1.0" / "perf-overview.md").read_text(), default_version="1.0")
    assert len(rows) == 328
    h200 = next(r for r in rows if r.model == "llama-3.3-70b" and r.gpu_name == "H200" and (r.input_tokens, r.output_tokens) == (1000, 1000))  # fmt: skip
    assert (h200.precision, h200.tensor_parallel, h200.tokens_per_s) == ("fp8", 1, 2909)
    rtx = next(r for r in rows if r.model == "llama-3.3-70b" and r.pipeline_parallel == 2 and (r.input_tokens, r.output_tokens) == (1000, 1000))  # fmt: skip
    assert (rtx.gpu_name, rtx.gpu_count, rtx.precision, rtx.tokens_per_s_per_gpu) == (
        "RTX 6000 Pro Blackwell Server Edition",
        2,
        "fp4",
        pytest.approx(3707 / 2),
    )
    big = next(r for r in rows if r.model == "llama-3.1-405b" and r.gpu_name == "H200" and (r.input_tokens, r.output_tokens) == (1000, 1000))  # fmt: skip
    assert (big.tensor_parallel, big.tokens_per_s_per_gpu) == (8, pytest.approx(3330 / 8))
    assert not [r for r in rows if r.model is None and r.model_name.startswith("Llama 3")]


def test_units_are_read_from_the_headers_and_a_file_without_tables_is_refused():
    text = "## Throughput\nFigures in tokens/sec/gpu.\n\n#### Llama 3.1 8B\n\n| Sequence Length (ISL/OSL) | H100<br/>TP2 (FP8) |\n|---|---|\n| 128/128 | 10,000 |\n"
    (row,) = trtllm_parse(text, default_version="9.9")
    assert row.per_gpu and row.tokens_per_s_per_gpu == 10_000 and row.gpu_count == 2
    with pytest.raises(TrtllmFormatError):
        trtllm_parse("# Overview\nno tables here\n")


@pytest.mark.django_db
def test_import_every_copy_points_traced_and_idempotent(tmp_path):
    world_build(rows=LLM_WORLD)
    first = trtllm_import_bundled()
    # Three overview copies, then the DeepSeek-R1 guide's four runs (its fifth states no lengths).
    assert [s.results_written for s in first] == [445, 328, 150, 4] and not any(s.unmatched for s in first)
    points = ServingPoint.objects.filter(source_kind="trtllm")
    count = points.count()
    trtllm_import_bundled()
    assert ServingPoint.objects.filter(source_kind="trtllm").count() == count
    assert BenchmarkResult.objects.filter(workload__slug__startswith="trtllm-").count() == 445 + 328 + 150 + 4
    h100 = points.get(
        model="llama-3.1-70b", gpu__slug="h100-sxm5-80-gb", gpu_count=1, input_tokens=1000, output_tokens=1000,
        result__workload__version="0.17",
    )  # fmt: skip
    assert (h100.weight_precision, h100.precision_status, h100.engine_class, h100.scenario) == (
        "fp8", "stated", "tensorrt-llm", "offline")  # fmt: skip
    assert h100.tokens_per_s_per_gpu == pytest.approx(839.97) and h100.date_estimated
    assert "258c7540c035" in h100.source and h100.source_url.endswith("perf-overview.md")
    served = points.get(model="llama-3.1-70b", gpu__slug="h100-sxm5-80-gb", input_tokens=467, output_tokens=256,
                        scenario="server", result__params__qps=8)  # fmt: skip
    assert (served.weight_precision, served.per_user_basis, served.gpu_count, served.interconnect) == (
        "bf16",
        "measured",
        4,
        "nvlink",
    )
    assert served.tokens_per_s_per_user == pytest.approx(1000 / 32) and served.ttft_ms == 92
    # Rate-limited rows stay results (marked) but give no serving point: no fit, no measured answer.
    assert "7 serving row(s) rate-limited" in " ".join(first[0].notes)
    limited = BenchmarkResult.objects.filter(workload__slug="trtllm-serving", environment__rate_limited=True)
    assert sorted(r.environment["line"] for r in limited) == [157, 175, 176, 193, 211, 212, 213]
    assert not ServingPoint.objects.filter(result__in=limited).exists()
    kept = BenchmarkResult.objects.get(workload__slug="trtllm-serving", environment__line=177)
    assert kept.environment["rate_limited"] is False and kept.serving_point.tokens_per_s_per_gpu == 126
    with pytest.raises(LabTableError, match="no date"):
        trtllm_import_file(path=TRTLLM_DIR / "v0.17" / "perf-overview.md", release="0.17", commit="0" * 40, dates={})
    with pytest.raises(CommandError, match="--release, --commit and --date"):
        call_command("import_trtllm", str(tmp_path / "perf-overview.md"))


# --- llama.cpp tables, our client, the rebuild, the API ---------------------------------------------


@pytest.mark.django_db
def test_client_llm_decode_results_are_points_at_their_batch(client):
    world_build(rows=LLM_WORLD)
    workload_seed()
    document_ingest(json.loads(CLIENT_FIXTURE.read_text()))
    points = ServingPoint.objects.filter(source_kind="client").order_by("weight_precision", "concurrency")
    assert [(p.weight_precision, p.concurrency) for p in points] == [
        ("bf16", 1),
        ("bf16", 128),
        ("fp8", 1),
        ("fp8", 128),
    ]
    one, batched = points[0], points[1]
    assert one.tokens_per_s_per_user == pytest.approx(131.269) and one.gpu.slug == "h100-sxm5-80-gb"
    assert batched.tokens_per_s_per_gpu == pytest.approx(10664.2)
    assert batched.tokens_per_s_per_user == pytest.approx(10664.2 / 128) and batched.per_user_basis == "measured"
    assert batched.result.submission is not None  # traced back to the raw submission
    # A rebuild derives the same points again.
    before = sorted(points.values_list("tokens_per_s_per_user", flat=True))
    serving_points_rebuild()
    assert (
        sorted(ServingPoint.objects.filter(source_kind="client").values_list("tokens_per_s_per_user", flat=True))
        == before
    )

    page = client.get("/api/v1/serving-points/", {"source": "client", "precision": "fp8"})
    assert page.status_code == 200
    body = page.json()
    assert body["count"] == 2 and {r["concurrency"] for r in body["results"]} == {1, 128}
    row = body["results"][0]
    assert row["gpu"] == "h100-sxm5-80-gb" and row["trust"] == ServingPoint.objects.get(pk=row["id"]).result.trust
    bad = client.get("/api/v1/serving-points/", {"scenario": "fastest"})
    assert bad.status_code == 400 and "scenario" in bad.json()["errors"]
    schema = client.get("/api/v1/schema/").content.decode()
    assert "/api/v1/serving-points/" in schema


@pytest.mark.django_db
def test_the_client_decode_rows_are_fitted_as_their_decode_steps():
    """The client's H100 rows (batch 128, 512-token prompts, BF16: 10,664 tokens/s) time decode
    steps from a filled cache: the fit and its held-out checks read them as steps alone, never
    with 128 prefills of 512 tokens in their time."""
    from llm.selectors.serving import serving_points_for_fit
    from llm.serving.fit import predict
    from llm.serving.physics import ServingConstants, decode_step, point_at

    world_build(rows=LLM_WORLD)
    workload_seed()
    document_ingest(json.loads(CLIENT_FIXTURE.read_text()))
    points = [p for p in serving_points_for_fit() if p.source == "client"]
    assert points and all(p.decode_only for p in points)
    batched = next(p for p in points if p.concurrency == 128 and p.workload.weight_precision == "bf16")
    assert (batched.workload.input_len, batched.tokens_per_s_per_gpu) == (512, pytest.approx(10664.2))
    c = ServingConstants()
    step = decode_step(w=batched.workload, hw=batched.hardware, c=c, batch=128, link=batched.link).total
    got = predict(batched, c)
    assert got is not None and got.tokens_per_s_per_gpu == pytest.approx(128 / step)
    whole = point_at(w=batched.workload, hw=batched.hardware, c=c, batch=128, link=batched.link)
    assert got.tokens_per_s_per_gpu > 1.1 * whole.tokens_per_s_per_gpu  # the prefill it no longer carries


@pytest.mark.django_db
def test_the_real_tensor_parallel_sweep_gives_a_curve_per_configuration():
    """Two NVLink H200s, Llama 3 70B at TP1 and TP2: every measured concurrency is a point whose
    per-user rate is the client's own 1 / step time, at the run's context and link."""
    world_build(rows=LLM_WORLD)
    workload_seed()
    run = json.loads(TP_FIXTURE.read_text())
    document_ingest(run)
    measured = {
        (r["precision"], r["params"]["tp"], r["params"]["context_len"], r["params"]["concurrency"]): r["extra"]
        for r in run["results"]
    }
    points = ServingPoint.objects.filter(source_kind="client", model="llama-3-70b")
    assert points.count() == len(measured) > 40
    for point in points:
        extra = measured[(point.weight_precision, point.gpu_count, point.input_tokens, point.concurrency)]
        assert point.tokens_per_s_per_user == pytest.approx(extra["tokens_per_s_per_user"])
        assert point.tokens_per_s_per_gpu == pytest.approx(extra["tokens_per_s_per_gpu"])
        assert point.interconnect == ("nvlink" if point.gpu_count == 2 else "none")
        assert point.kv_cache_precision == "bf16" and point.scenario == "concurrency"
    # Physics the sweep must show: per-GPU throughput rises with the batch and per-user speed does not
    # (within the run's repetition noise, 1 % at small batches where steps are bandwidth-bound).
    curve = points.filter(weight_precision="fp8", gpu_count=2, input_tokens=1024).order_by("concurrency")
    users = [p.tokens_per_s_per_user for p in curve]
    gpus = [p.tokens_per_s_per_gpu for p in curve]
    assert gpus == sorted(gpus) and all(b <= a * 1.01 for a, b in zip(users, users[1:], strict=False))
    assert users[-1] < users[0] / 3


@pytest.mark.django_db
def test_llamacpp_rows_are_one_stream_points():
    from benchmarks_app.services.xiongjiedai_import import xiongjiedai_import

    world_build(rows=LLM_WORLD)
    xiongjiedai_import()
    points = ServingPoint.objects.filter(source_kind="llamacpp")
    assert points.exists()
    assert set(points.values_list("scenario", "concurrency", "per_user_basis", "engine_class").distinct()) == {
        ("single-stream", 1, "one-stream", "llama.cpp")
    }
    for point in points.select_related("result")[:50]:
        assert point.tokens_per_s_per_user == pytest.approx(point.result.value)
        assert point.tokens_per_s_per_gpu == pytest.approx(point.result.value / point.gpu_count)


# --- 8-bit and 16-bit inference rank measured figures ---------------------------------------------


@pytest.mark.django_db
def test_relative_inference_use_cases_rank_the_measured_llm_figures(client):
    from benchmarks_app.services.xiongjiedai_import import xiongjiedai_import
    from catalog.models import TensorPeak
    from dashboard.selectors.ranking_params import ranking_params_from_query
    from dashboard.selectors.rankings import rankings_compute

    world_build(rows=LLM_WORLD)
    # Nothing measured yet: the page says every figure is estimated, never "Measured".
    empty = client.get(reverse("dashboard:rankings"), {"use_case": "inference-8bit"}).content.decode()
    assert 'id="spec-only"' in empty
    # The RTX 5090's 8-bit peaks come from the curated catalogue (NVIDIA's RTX Blackwell whitepaper).
    peaks = dict(TensorPeak.objects.filter(gpu__slug="geforce-rtx-5090").values_list("precision", "dense_tflops"))
    assert (peaks["fp8"], peaks["int8"], peaks["fp4"]) == (419, 838, 1676)

    trtllm_import_bundled()
    xiongjiedai_import()
    eight = rankings_compute(params=ranking_params_from_query({"use_case": "inference-8bit"}))
    measured = {r.gpu_slug: r for r in eight.rows if r.perf_basis == "measured"}
    assert eight.baseline_name == "H100 SXM5 80 GB" and measured["h100-sxm5-80-gb"].perf == pytest.approx(1.0)
    assert {"h200-sxm-141-gb", "l40s"} <= set(measured)
    assert measured["h200-sxm-141-gb"].perf > 1.0  # more bandwidth, same FP8 runs
    sixteen = rankings_compute(params=ranking_params_from_query({"use_case": "inference-16bit"}))
    assert sum(r.perf_basis == "measured" for r in sixteen.rows) >= 5
    page = client.get(reverse("dashboard:rankings"), {"use_case": "inference-8bit"}).content.decode()
    assert 'id="spec-only"' not in page


@pytest.mark.django_db
def test_an_llm_ranking_without_a_measured_row_says_the_serving_model_answers_not_the_datasheet(client):
    world_build(rows=LLM_WORLD)
    page = client.get(reverse("dashboard:rankings"), {"use_case": "llm-serving", "model_size": "70b"}).content.decode()
    assert 'id="model-only"' in page and "80 % interval" in page
    assert 'id="spec-only"' not in page and "datasheet ratios" not in page


def test_a_fixed_request_rate_run_is_fitted_at_the_requests_it_had_in_flight() -> None:
    from llm.models import PerUserBasis, ServingPoint
    from llm.selectors.serving import _in_flight

    # TensorRT-LLM 0.14, LLaMA 3.1 70B on 4x H100, 467/256 at 2 requests/s: 498 output tokens/s,
    # mean TTFT 62 ms, mean ITL 21 ms: 2 x (0.062 + 255 x 0.021) = 10.8 requests in flight.
    row = ServingPoint(scenario="server", per_user_basis=PerUserBasis.MEASURED, ttft_ms=62.0,
                       tokens_per_s_per_user=1000 / 21, tokens_per_s_per_gpu=498 / 4, gpu_count=4,
                       output_tokens=256)  # fmt: skip
    assert _in_flight(row) == 11
    row.ttft_ms = None  # without the time to the first token the life of a request is not known
    assert _in_flight(row) is None
