"""The fit calculator's training answers on the real data `make run` loads (the catalogue, Lambda's
results, the benchmark client's H100 run and its 2x H200 NVLink run), and the multi-GPU
communication model on literals."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command

from benchmarks_app.selectors import training_mfus
from benchmarks_app.services.ingest import submission_ingest
from benchmarks_app.services.intake import submission_intake
from benchmarks_app.services.lab_import import BUNDLED_DIR, lambda_import_directory
from benchmarks_app.services.mlperf_training_import import mlperf_training_import
from benchmarks_app.services.workloads import workload_seed
from catalog.models import Gpu
from catalog.services.catalog_import import catalog_import
from fitcalc import PRESETS
from fitcalc.forms import FitForm
from fitcalc.parallel import DdpCalibration, LinkFigures, MeasuredBusBandwidth, TrainingJob, strategy_rates
from fitcalc.selectors.fit import FitResult, fit_compute
from fitcalc.selectors.fit_request import fit_request_from_form
from fitcalc.throughput import model_flops_per_token
from llm.serving.comm import GpuLink

BENCH = Path(settings.BASE_DIR) / "tests" / "fixtures" / "bench"
H100, RTX4090, H200, GH200, V100 = (
    "h100-sxm5-80-gb",
    "geforce-rtx-4090",
    "h200-sxm-141-gb",
    "gh200-96-gb",
    "tesla-v100-sxm2-32-gb",
)


@pytest.fixture(scope="module")
def real_data(django_db_setup, django_db_blocker):
    """Loaded once for the module, removed after it as a transactional test would."""
    with django_db_blocker.unblock():
        catalog_import()
        workload_seed()
        lambda_import_directory(path=BUNDLED_DIR)
        mlperf_training_import()
        user = get_user_model().objects.create(username="gpuatlas-lab")
        for path in sorted(BENCH.glob("*.json")):  # as load_demo: every client run in the folder
            # Ingested here, in-process: with a broker configured the intake only queues it.
            submission_ingest(submission_id=submission_intake(body=path.read_bytes(), submitter=user).submission.pk)
    yield
    with django_db_blocker.unblock():
        call_command("flush", interactive=False, verbosity=0)


def _fit(**query: str) -> FitResult:
    form = FitForm(data=query)
    request = fit_request_from_form(form=form)
    assert request is not None, form.errors
    return fit_compute(request=request)


def _plans(result: FitResult) -> dict[str, object]:
    return {plan.gpu.slug: plan for plan in result.plans}


@pytest.mark.django_db
def test_training_rates_are_the_time_model_anchored_on_each_gpus_mlperf_runs(real_data):
    """One model on one node and past it: dense peak x MFU. The H100 reads the MFU of its own
    MLPerf Training LoRA runs (measured); the RTX 4090 has none, nor has its architecture (the L40S
    runs split a 70B model over PCIe and are not fitted), so it reads every GPU's LoRA runs, an
    estimate with that figure's error. LLM training puts the RTX 4090 near a fifth of an H100,
    where Lambda's 2019 suite put it at a third."""
    mfus = training_mfus()
    h100, rtx4090, gh200 = (Gpu.objects.select_related("architecture").get(slug=s) for s in (H100, RTX4090, GH200))
    result = _fit(model="llama-3-8b", mode="lora", tokens="1e8")
    rates = {g.slug: g for g in [p.gpu for p in result.plans]}
    own = mfus.for_gpu(h100.pk, "hopper", "llama2_70b_lora")
    assert own is not None and own.measured and own.benchmark == "llama2_70b_lora"
    assert result.details[H100].throughput_basis == "measured-scaled"
    assert "MLPerf Training runs of this GPU" in result.details[H100].throughput_note
    pooled = mfus.for_gpu(rtx4090.pk, "ada-lovelace", "llama2_70b_lora")
    assert pooled is not None and pooled.basis == "pooled"
    assert result.details[RTX4090].throughput_basis == "estimated"
    assert result.details[RTX4090].throughput_typical_error == pooled.error
    ratio = rates[RTX4090].throughput_per_s / rates[H100].throughput_per_s
    assert ratio == pytest.approx((165.2 * pooled.mfu) / (989.4 * own.mfu), rel=1e-6)
    assert 0.14 < ratio < 0.25
    # The GH200 (Hopper, no runs of its own) reads Hopper's LoRA MFU on the H100's peak.
    hopper = mfus.for_gpu(gh200.pk, "hopper", "llama2_70b_lora")
    assert hopper is not None and hopper.basis == "architecture"
    assert rates[GH200].throughput_per_s / rates[H100].throughput_per_s == pytest.approx(hopper.mfu / own.mfu, rel=0.02)


@pytest.mark.django_db
def test_activation_checkpointing_pays_for_the_recomputed_forward(real_data):
    """A 7B full fine-tune with checkpointing was timed as if the forward ran once: ~35 % optimistic."""
    with_it = _fit(model="mistral-7b", mode="full_finetune", activation_checkpointing="true", tokens="1e8")
    without = _fit(model="mistral-7b", mode="full_finetune", activation_checkpointing="false", tokens="1e8")
    one = {g.slug: g.throughput_per_s for g in [p.gpu for p in with_it.plans]}
    two = {g.slug: g.throughput_per_s for g in [p.gpu for p in without.plans]}
    assert one[H100] == pytest.approx(two[H100] * 3 / 4)
    assert one[RTX4090] == pytest.approx(two[RTX4090] * 3 / 4)


@pytest.mark.django_db
def test_gpus_without_bf16_are_not_offered_for_bf16_training(real_data):
    result = _fit(model="llama-3-8b", mode="lora", precision="bf16")
    offered = {p.gpu.slug for p in result.plans}
    assert V100 not in offered and "tesla-t4" not in offered and "tesla-p100-pcie-16-gb" not in offered
    assert RTX4090 in offered
    warning = next(w for w in result.warnings if w.startswith("Not offered"))
    assert "BF16" in warning and "Tesla V100 SXM2 32 GB" in warning
    assert V100 in {p.gpu.slug for p in _fit(model="llama-3-8b", mode="lora", precision="fp16").plans}


@pytest.mark.django_db
def test_zero3_on_eight_rtx_4090_over_pcie_pays_for_its_communication(real_data):
    """ZeRO-3 over PCIe had no communication cost: 8 cards ran 5.83x one card whatever the link."""
    plan = _plans(_fit(model="llama-3-8b", mode="full_finetune", tokens="1e8"))[RTX4090]
    eight = next(c for c in plan.counts if c.count == 8)
    one_gpu = plan.gpu.throughput_per_s
    assert eight.fits and eight.configuration == "zero3" and eight.scaling == "modelled"
    assert "PCIe without peer-to-peer" in eight.throughput_note and "ZeRO-3" in eight.throughput_note
    # 3 x 16 GB of weights and gradients cross PCIe at ~18 GB/s bus bandwidth every step.
    assert eight.throughput_per_s < 0.5 * 8 * one_gpu
    h100 = next(c for c in _plans(_fit(model="llama-3-8b", mode="full_finetune"))[H100].counts if c.count == 8)
    assert h100.throughput_per_s / (
        8 * _plans(_fit(model="llama-3-8b", mode="full_finetune"))[H100].gpu.throughput_per_s
    ) > (eight.throughput_per_s / (8 * one_gpu))  # NVLink pays far less


@pytest.mark.django_db
def test_a_two_gpu_h200_plan_uses_the_all_reduce_measured_on_the_fixture(real_data):
    plan = _plans(_fit(model="llama-3-8b", mode="full_finetune", tokens="1e9"))[H200]
    counts = {c.count: c for c in plan.counts}
    assert counts[2].scaling == "measured"
    assert "measured on 2 of these GPUs over NVLink" in counts[2].throughput_note
    assert "gpuatlas-bench allreduce-busbw" in counts[2].throughput_note
    # Not measured on 4 or 8 H200s: the datasheet NVLink figure, said so.
    assert counts[4].scaling == "modelled" and "from the datasheet" in counts[4].throughput_note
    assert 0.5 < counts[2].speedup < 2.0


# --- pure: the communication model -----------------------------------------------------------


def _fixture_results(workload: str) -> list[dict]:
    document = json.loads((BENCH / "h200x2_nvlink_multigpu.json").read_text())
    return [r for r in document["results"] if r["workload"] == workload]


def test_measured_bus_bandwidth_is_interpolated_between_sizes_and_held_beyond_them():
    points = tuple((r["params"]["bytes"], r["median"]) for r in _fixture_results("allreduce-busbw"))
    measured = MeasuredBusBandwidth(gpu_count=2, interconnect="NVLink", points=points, n=1)
    sizes = sorted(points)
    assert measured.busbw_gbs(sizes[0][0] / 4) == sizes[0][1]
    assert measured.busbw_gbs(sizes[-1][0] * 4) == sizes[-1][1]
    middle = math.sqrt(sizes[-2][0] * sizes[-1][0])  # halfway on the logarithm
    assert measured.busbw_gbs(middle) == pytest.approx((sizes[-2][1] + sizes[-1][1]) / 2)


def test_the_fixtures_own_ddp_run_is_reproduced_by_the_calibrated_price():
    """Priced without overlap and then scaled to the measured run, the model gives that run's 95 %."""
    one, two = sorted(_fixture_results("transformer-train-ddp"), key=lambda r: r["gpu_count"])
    points = tuple((r["params"]["bytes"], r["median"]) for r in _fixture_results("allreduce-busbw"))
    tokens = one["params"]["batch"] * one["params"]["seq_len"]
    gradient_bytes = float(two["extra"]["parameters"] * 2)  # a BF16 block: 2-byte gradients
    efficiency = two["median"] / (2 * one["median"])
    link = LinkFigures(
        link=GpuLink(fabric_gbs=450.0),
        measured={2: MeasuredBusBandwidth(gpu_count=2, interconnect="NVLink", points=points, n=1)},
        ddp={2: DdpCalibration(2, efficiency, one["median"], tokens, gradient_bytes, "nvlink", 1)},
    )
    job = TrainingJob(tokens, gradient_bytes, gradient_bytes, layers=1, hidden=None, checkpointing=False)
    rate = strategy_rates(per_gpu_per_s=one["median"], gpus=2, job=job, link=link, fits_whole=True)
    data = next(r for r in rate if r.strategy == "data")
    assert data.per_s / (2 * one["median"]) == pytest.approx(efficiency) == pytest.approx(0.95, abs=0.01)
    # Uncalibrated, the measured all-reduce alone prices the run within two points of the measurement.
    bare = strategy_rates(per_gpu_per_s=one["median"], gpus=2, job=job, link=replace(link, ddp={}), fits_whole=True)
    assert next(r for r in bare if r.strategy == "data").per_s / (2 * one["median"]) == pytest.approx(0.95, abs=0.02)


@pytest.mark.parametrize("gpus", [2, 4, 8])
@pytest.mark.parametrize(
    "link", [GpuLink(fabric_gbs=450.0), GpuLink(pcie_gbs=31.5), GpuLink(pcie_gbs=31.5, peer_to_peer=False)]
)
def test_no_split_beats_n_times_one_gpu_and_slower_links_cost_more(gpus, link):
    job = TrainingJob(16_384, 16e9, 16e9, layers=32, hidden=4096, checkpointing=True)
    figures = LinkFigures(link=link, measured={}, ddp={})
    rates = strategy_rates(per_gpu_per_s=8000.0, gpus=gpus, job=job, link=figures, fits_whole=True)
    assert {r.strategy for r in rates} == {"data", "zero3", "tensor"}
    for rate in rates:
        assert 0 < rate.per_s < gpus * 8000.0 and rate.communication_s > 0
    fabric = strategy_rates(
        per_gpu_per_s=8000.0, gpus=gpus, job=job, link=LinkFigures(GpuLink(fabric_gbs=450.0), {}, {}), fits_whole=True
    )
    assert max(r.per_s for r in fabric) >= max(r.per_s for r in rates)


def test_zero3_moves_half_again_the_bytes_of_data_parallelism():
    """Rajbhandari et al.: ZeRO-3 communicates 3 x the parameters where DDP's all-reduce moves 2 x."""
    link = LinkFigures(GpuLink(pcie_gbs=31.5), {}, {})
    job = TrainingJob(16_384, 16e9, 16e9, layers=640, hidden=None, checkpointing=False)  # 25 MB per layer, as a bucket
    rates = {r.strategy: r for r in strategy_rates(per_gpu_per_s=8000.0, gpus=8, job=job, link=link, fits_whole=True)}
    assert rates["zero3"].communication_s / rates["data"].communication_s == pytest.approx(1.5, rel=0.02)


def test_checkpointing_adds_one_forward_to_the_flop_count():
    model = PRESETS["llama-3-8b"]
    plain = model_flops_per_token(model=model, context=2048, training=True)
    assert model_flops_per_token(model=model, context=2048, training=True, checkpointing=True) == pytest.approx(
        plain * 4 / 3
    )


@pytest.mark.django_db
@pytest.mark.parametrize(("use_case", "benchmark"), [("training", ""), ("fine-tuning", "llama2_70b_lora")])
def test_training_rankings_rank_llm_training_with_the_older_suite_beside(real_data, use_case, benchmark):
    """At 16 bits the training use cases rank dense BF16 peak x MFU (the fit calculator's time
    model), measured where the GPU has MLPerf Training runs, every row under its peak; Lambda's suite
    is shown beside, not ranked; at 32 bits that suite alone ranks."""
    from dashboard.selectors.ranking_params import RankingParams
    from dashboard.selectors.rankings import rankings_compute

    ranking = rankings_compute(params=RankingParams(use_case=use_case, show="all"))
    rows = {r.gpu_slug: r for r in [*ranking.rows, *ranking.ineligible_rows]}
    mfus = training_mfus()
    gpus = {g.slug: g for g in Gpu.objects.select_related("architecture").filter(slug__in=list(rows))}
    baseline = gpus.get(ranking.baseline_slug) or Gpu.objects.select_related("architecture").get(
        slug=ranking.baseline_slug
    )

    def tflops(gpu: Gpu) -> float:
        peaks = {p.precision: p.dense_tflops for p in gpu.tensor_peaks.filter(supported=True)}
        mfu = mfus.for_gpu(gpu.pk, gpu.architecture.slug if gpu.architecture else None, benchmark)
        assert mfu is not None
        return (peaks.get("bf16") or peaks["fp16"]) * mfu.mfu

    h100, rtx4090 = rows[H100], rows[RTX4090]
    assert h100.perf_basis == "measured" and h100.training_mfu_runs > 0 and h100.n == h100.training_mfu_runs
    assert h100.perf == pytest.approx(tflops(gpus[H100]) / tflops(baseline))
    assert rtx4090.perf_basis == "estimated" and rtx4090.training_mfu_runs == 0
    assert rtx4090.estimate_error_pct is not None and 0 < rtx4090.estimate_error_pct < 100
    # No Ada GPU has a fitted run (the L40S's split a 70B model over PCIe): outside the measured range.
    assert rtx4090.estimate_outside_range and rtx4090.estimate_outside_reasons == ["architecture"]
    assert not h100.estimate_outside_range
    assert 0.14 < rtx4090.perf / h100.perf < 0.25  # Lambda's suite: about a third
    assert h100.suite_perf is not None and rtx4090.suite_perf is not None
    assert rtx4090.suite_perf / h100.suite_perf > 0.25
    for slug, row in rows.items():
        assert row.training_mfu is not None and 0 < row.training_mfu < 1
        peaks = {p.precision: p.dense_tflops for p in gpus[slug].tensor_peaks.filter(supported=True)}
        assert row.perf * tflops(baseline) <= (peaks.get("bf16") or peaks["fp16"]) * row.training_mfu * (1 + 1e-9)
    # 32 bits: the suite's relative method, no training figure.
    fp32 = rankings_compute(params=RankingParams(use_case=use_case, precision="32bit", show="all"))
    assert fp32.rows and all(r.training_mfu is None and r.suite_perf is None for r in fp32.rows)
