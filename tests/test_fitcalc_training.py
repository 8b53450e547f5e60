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

from benchmarks_app.services.ingest import submission_ingest
from benchmarks_app.services.intake import submission_intake
from benchmarks_app.services.lab_import import BUNDLED_DIR, lambda_import_directory
from benchmarks_app.services.workloads import workload_seed
from catalog.services.catalog_import import catalog_import
from dashboard.selectors.ranking_params import RankingParams
from dashboard.selectors.rankings import rankings_compute
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
def test_rtx_4090_and_gh200_train_at_the_sites_ratio_to_the_h100_but_never_above_peak_x_mfu(real_data):
    """The H100 ran at 55 % of its peak (its measured block) and every other GPU at 40 % of its
    datasheet: the RTX 4090 came out 8.2x below the H100 where the fine-tuning ranking measures 3.6x,
    and the GH200 27 % below the H100. The ranking's ratio stands until it asks a GPU for more than
    its dense peak x the LLM training MFU (40 % without fitted runs): the ratio put the RTX 4090 at
    over 90 % of its peak, so it stops at the cap and the ratio widens to what LLM training gives."""
    ranking = {r.gpu_slug: r for r in rankings_compute(params=RankingParams(use_case="fine-tuning", show="all")).rows}
    assert ranking[RTX4090].perf_basis == ranking[H100].perf_basis == "measured"
    site_ratio = ranking[H100].perf / ranking[RTX4090].perf
    assert 3.0 < site_ratio < 4.5  # the site's measured figure
    result = _fit(model="llama-3-8b", mode="lora", tokens="1e8")
    rates = {g.slug: g for g in [p.gpu for p in result.plans]}
    fit_ratio = rates[H100].throughput_per_s / rates[RTX4090].throughput_per_s
    assert site_ratio < fit_ratio < 7.0  # 0.14-0.28 of an H100, where the ranking said 0.28
    assert rates[GH200].throughput_per_s >= 0.9 * rates[H100].throughput_per_s
    assert result.details[H100].throughput_basis == "measured-scaled"
    assert result.details[RTX4090].throughput_basis == "measured-scaled"
    note = result.details[RTX4090].throughput_note
    assert "fine-tuning ranking" in note and "capped at 40% of the BF16 dense peak" in note


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
