"""The fit calculator's multi-GPU figures: LLM inference from the serving model (fitcalc.llm),
measured figures first, what more GPUs buy, measured data-parallel scaling from the client's real
ingest, and prices with their provenance. The last tests run on the demo data (``load_demo``).

GPU figures of the pure tests are datasheet-like test fixtures (an H100-like card of 80 GiB and
3,350 GB/s, a 24 GiB PCIe 4.0 consumer card of 1,008 GB/s), not catalogue rows.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from decimal import Decimal
from typing import Any

import pytest
from django.utils import timezone

from catalog.models import Gpu, PriceSnapshot
from catalog.services.prices.derive import gpu_prices_derive
from fitcalc import PRESETS, fit_plan, memory_estimate
from fitcalc.forms import FitForm
from fitcalc.llm import (
    LlmError,
    LlmGpu,
    LlmMeasured,
    LlmModel,
    group_link,
    llm_count_rates,
    llm_rate,
    llm_shape_of_job,
    llm_shape_of_measured,
)
from fitcalc.plan import GpuFacts
from fitcalc.selectors.fit import fit_compute
from fitcalc.selectors.fit_request import fit_request_from_form
from fitcalc.selectors.llm_jobs import llm_gpu
from llm.question import ServingQuestion
from llm.selectors.answers import serving_answers
from llm.selectors.rows import llm_rows
from llm.serving.comm import GpuLink
from llm.serving.physics import Hardware, ServingConstants, communication_seconds, point_at
from llm.serving.shapes import MODEL_SHAPES, model_size_class
from llm.serving.single_stream import StreamFit
from tests.factories import (
    GpuFactory,
    OfferFactory,
    ProviderFactory,
    PurchasePriceFactory,
    TensorPeakFactory,
    document_ingest,
    make_result,
    submission_document,
)
from tests.world import INGEST_WORLD, world_build

URL = "/api/v1/fit/"
H100_HW = Hardware(memory_gib=80.0, bandwidth_gbs=3350.0, tensor_tflops={"bf16": 989.4, "fp16": 989.4},
                   hardware_class="hopper")  # fmt: skip
H100_LIKE = LlmGpu(H100_HW, vendor="nvidia")
# A GeForce card on PCIe 4.0 x16: no peer-to-peer, transfers staged through host memory.
CONSUMER_LINK = GpuLink(pcie_gbs=31.5, peer_to_peer=False)
CONSUMER_HW = Hardware(memory_gib=24.0, bandwidth_gbs=1008.0, tensor_tflops={"bf16": 165.2, "fp16": 165.2},
                       hardware_class="consumer")  # fmt: skip
CONSUMER_24 = LlmGpu(CONSUMER_HW, link=CONSUMER_LINK, vendor="nvidia")
MODEL = LlmModel(ServingConstants(), StreamFit({"llama.cpp": 0.7}, {"llama.cpp": 0.25}, {"llama.cpp": 10}))
COUNTS = (1, 2, 4, 8)


def _shape(slug: str, precision: str, context: int = 2048) -> Any:
    breakdown = memory_estimate(model=PRESETS[slug], mode="inference", precision=precision, context=context)
    shape = llm_shape_of_job(model=PRESETS[slug], breakdown=breakdown)
    assert shape is not None
    return breakdown, shape


def _text(html: str) -> str:
    """The words as a reader sees them: tags as spaces, runs of white space as one."""
    text = re.sub(r"<[^>]+>", " ", html)
    return re.sub(r"\s+", " ", text).replace(" )", ")").replace("( ", "(")


def plans_by_slug(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {plan["gpu"]["slug"]: plan for plan in body["plans"]}


# --- pure: what more GPUs buy ----------------------------------------------------------------


def test_one_stream_split_by_layers_runs_at_one_gpus_speed_on_any_count() -> None:
    breakdown, shape = _shape("llama-3-70b", "q4_k_m")
    rates = llm_count_rates(gpu=CONSUMER_24, shape=shape, mode="single", counts=COUNTS, input_len=1024,
                            output_len=1024, users=None, model=MODEL)  # fmt: skip
    assert {rate.scaling for count, rate in rates.items() if count > 1} == {"layer-split"}
    # One card cannot hold 40 GiB of weights; from two on, only the hand-overs between stages grow.
    assert rates[1].per_s is None
    assert rates[2].per_s == pytest.approx(rates[4].per_s, rel=0.01) == pytest.approx(rates[8].per_s, rel=0.01)
    gpu = GpuFacts(slug="c", name="C", memory_gib=24.0, throughput_per_s=rates[2].per_s, price_per_gpu_hour=0.4,
                   count_rates=rates)  # fmt: skip
    plan = fit_plan(breakdown=breakdown, gpus=[gpu], work_units=1e5)[0]
    by_count = {c.count: c for c in plan.counts}
    assert by_count[2].hours == pytest.approx(by_count[8].hours, rel=0.01)
    assert by_count[8].cost == pytest.approx(4 * by_count[2].cost, rel=0.01)
    # More cards only cost more: the fewest that hold the model are recommended.
    assert plan.recommended is not None and plan.recommended.count == 2 == plan.gpus_needed
    # A split over a link the catalogue has no figure for is not free: no figure.
    unlinked = llm_count_rates(gpu=LlmGpu(CONSUMER_HW), shape=shape, mode="single", counts=(2,), input_len=1024,
                               output_len=1024, users=None, model=MODEL)  # fmt: skip
    assert unlinked[2].per_s is None and "no figure for the link" in unlinked[2].note


def test_tensor_parallel_groups_wait_for_their_all_reduces_priced_from_the_link() -> None:
    _, shape = _shape("llama-3-70b", "bf16")
    common = {"shape": shape, "mode": "batched", "count": 8, "input_len": 1000, "output_len": 1000, "users": None,
              "model": MODEL}  # fmt: skip
    host = llm_rate(gpu=CONSUMER_24, **common)  # type: ignore[arg-type]
    assert host is not None and (host.link_kind, host.configuration) == ("pcie_host", "pcie_host") and host.group > 1
    # The step's communication is the serving model's: two all-reduces per layer of the batch over the
    # link's datasheet figure, as on the LLM rankings.
    link = group_link(CONSUMER_LINK, host.group)
    w = shape.workload(input_len=1000, output_len=1000, tp=host.group, engine="tensorrt-llm")
    assert link is not None and host.comm_s == pytest.approx(communication_seconds(w, link, host.batch))
    note = llm_count_rates(gpu=CONSUMER_24, shape=shape, mode="batched", counts=(8,), input_len=1000,
                           output_len=1000, users=None, model=MODEL)[8].note  # fmt: skip
    assert "all-reduces over PCIe through host memory" in note
    # Without a link figure there is no estimate above one GPU, never a free all-reduce.
    unknown = llm_count_rates(gpu=LlmGpu(CONSUMER_HW, vendor="nvidia"), shape=shape, mode="batched", counts=(8,),
                              input_len=1000, output_len=1000, users=None, model=MODEL)[8]  # fmt: skip
    assert unknown.per_s is None and "no figure for the link" in unknown.note


def test_estimates_outside_the_measured_range_say_why() -> None:
    _, shape = _shape("llama-3-8b", "bf16")
    error = LlmError(serving={True: 0.15, False: 0.33},
                     serving_regimes=frozenset({("hopper", "tensorrt-llm", "single")}))  # fmt: skip
    fabric = GpuLink(pcie_gbs=63.0, fabric_gbs=900.0, fabric_gpus=8, fabric_link="nvlink")
    hopper = LlmGpu(H100_HW, link=fabric, vendor="nvidia")
    ada = LlmGpu(Hardware(**{**H100_HW.__dict__, "hardware_class": "ada"}), link=fabric, vendor="nvidia")
    common = {"shape": shape, "mode": "batched", "input_len": 1000, "output_len": 1000, "users": None,
              "model": MODEL, "error": error}  # fmt: skip
    single = llm_count_rates(gpu=hopper, counts=(1,), **common)[1]  # type: ignore[arg-type]
    assert single.outside == () and single.typical_error == 0.15
    pair = llm_count_rates(gpu=hopper, counts=(2,), **common)[2]  # type: ignore[arg-type]
    assert pair.outside == ("configuration",) and pair.typical_error == 0.33
    assert llm_count_rates(gpu=ada, counts=(1,), **common)[1].outside == ("architecture",)  # type: ignore[arg-type]


def test_a_catalogue_row_reads_as_the_llm_rankings_read_it() -> None:
    row = {"memory_gib": 24.0, "memory_bandwidth_gbs": 1008.0, "fp16_tflops": 82.6, "interconnect_gbs": None,
           "bus_interface": "PCIe 4.0 x16", "segment": "consumer", "variant": "", "vendor__slug": "nvidia",
           "architecture__slug": "ada-lovelace"}  # fmt: skip
    gpu = llm_gpu(row=row, peaks={"bf16": 165.2})
    assert gpu.link is not None and gpu.link.kind(8) == "pcie_host" and gpu.link.pcie_gbs == pytest.approx(31.5, 0.01)
    assert (gpu.vendor, gpu.hardware.hardware_class, gpu.hardware.tensor_tflops["fp16_nontensor"]) == (
        "nvidia", "consumer", 82.6)  # fmt: skip
    sxm = llm_gpu(row={**row, "interconnect_gbs": 900.0, "variant": "SXM", "segment": "datacenter"}, peaks={})
    assert sxm.link is not None and sxm.link.kind(8) == "fabric"
    assert sxm.hardware.hardware_class == "ada" and gpu.memory == "other"
    assert llm_gpu(row={**row, "memory_type": "GDDR6X"}, peaks={}).memory == "gddr"


def test_counts_no_offer_rents_as_one_machine_are_recommended_last() -> None:
    breakdown = memory_estimate(model=PRESETS["llama-3-8b"], mode="qlora")
    # Eight of these would finish within the day, but no offer rents more than two in one machine.
    offered = GpuFacts(slug="pair", name="Pair", memory_gib=24.0, throughput_per_s=1000.0, price_per_gpu_hour=0.5,
                       max_count_offered=2)  # fmt: skip
    plan = fit_plan(breakdown=breakdown, gpus=[offered], work_units=1000.0 * 3600 * 60)[0]
    assert [c.rentable for c in plan.counts] == [True, True, False, False]
    assert plan.counts[3].over_max_hours is False
    assert plan.recommended is not None and plan.recommended.rentable and plan.recommended.over_max_hours
    # With no rentable count that fits, the plan says why, and ranks after one that can be rented.
    big = memory_estimate(model=PRESETS["llama-3-70b"], mode="inference", precision="bf16")
    single = GpuFacts(slug="single", name="A single", memory_gib=96.0, throughput_per_s=10.0, price_per_gpu_hour=1.0,
                      max_count_offered=1)  # fmt: skip
    rentable = GpuFacts(slug="rentable", name="B rentable", memory_gib=80.0, throughput_per_s=5.0,
                        price_per_gpu_hour=3.0, max_count_offered=8)  # fmt: skip
    ranked = fit_plan(breakdown=big, gpus=[single, rentable], work_units=1e5)
    assert [p.gpu.slug for p in ranked] == ["rentable", "single"]
    assert "no current offer rents 2 of these in one machine (at most 1)" in ranked[1].reason


def test_a_measurement_anchors_one_stream_and_the_model_carries_it_to_other_counts() -> None:
    _, shape = _shape("llama-3-70b", "q4_k_m", context=2048)
    measured = LlmMeasured(
        tokens_per_s=19.0, gpu_count=2, n=3, source="llama.cpp test", url="", input_len=1024, output_len=1024,
        shape=llm_shape_of_measured(shape=MODEL_SHAPES["llama-3-70b"], precision="int4", quant="Q4_K_M"),
    )  # fmt: skip
    common = {"gpu": CONSUMER_24, "shape": shape, "mode": "single", "counts": COUNTS, "input_len": 1024,
              "output_len": 1024, "users": None, "model": MODEL}  # fmt: skip
    rates = llm_count_rates(measured=measured, **common)  # type: ignore[arg-type]
    plain = llm_count_rates(**common)  # type: ignore[arg-type]
    # The measured configuration itself: the measurement, labelled measured (the job's exact bytes
    # are within 5 % of the measured configuration's).
    assert rates[2].basis == "measured" and rates[2].per_s == pytest.approx(19.0, rel=0.05)
    assert rates[2].typical_error is None and "(n = 3)" in rates[2].note
    # Eight cards: the measurement carried by the model's ratio (one more hand-over per stage).
    assert rates[8].per_s / rates[2].per_s == pytest.approx(plain[8].per_s / plain[2].per_s)  # type: ignore[operator]


def test_full_load_fills_the_memory_and_users_set_the_batch() -> None:
    _, shape = _shape("llama-3-8b", "bf16")
    common = {"gpu": H100_LIKE, "shape": shape, "mode": "batched", "count": 1, "input_len": 1000,
              "output_len": 1000, "model": MODEL}  # fmt: skip
    full = llm_rate(users=None, **common)  # type: ignore[arg-type]
    few = llm_rate(users=8, **common)  # type: ignore[arg-type]
    assert full is not None and few is not None
    assert few.batch == 8 and full.batch > 50 and full.per_s > 4 * few.per_s


def test_a_fixed_number_of_users_is_the_serving_curve_at_that_concurrency() -> None:
    _, shape = _shape("llama-3-70b", "bf16")
    fabric = GpuLink(pcie_gbs=63.0, fabric_gbs=900.0, fabric_gpus=8, fabric_link="nvlink")
    gpu = LlmGpu(H100_HW, link=fabric, vendor="nvidia")
    rate = llm_rate(gpu=gpu, shape=shape, mode="batched", count=4, input_len=1000, output_len=1000, users=32,
                    model=MODEL)  # fmt: skip
    assert rate is not None
    w = shape.workload(input_len=1000, output_len=1000, tp=rate.group, engine="tensorrt-llm")
    link = group_link(fabric, rate.group)
    assert link is not None
    point = point_at(w=w, hw=H100_HW, c=MODEL.serving, batch=32 // rate.replicas, link=link)
    assert rate.batch * rate.replicas == 32
    assert rate.per_s == pytest.approx(point.tokens_per_s_per_gpu * 4)
    # More users than the KV cache of a split holds: that split is no plan.
    assert llm_rate(gpu=gpu, shape=shape, mode="batched", count=1, input_len=1000, output_len=1000, users=32,
                    model=MODEL) is None  # fmt: skip


# --- the web: one stream, measured DDP scaling, prices ---------------------------------------


def _card(slug: str, memory: float, *, price: str, bandwidth: float, bf16: float, **fields: Any) -> Gpu:
    gpu = GpuFactory(slug=slug, name=slug.upper(), memory_gib=memory, memory_bandwidth_gbs=bandwidth, **fields)
    TensorPeakFactory(gpu=gpu, precision="bf16", dense_tflops=bf16)
    TensorPeakFactory(gpu=gpu, precision="fp16", dense_tflops=bf16)
    # An 8-GPU machine, so that every count of the plan can be rented as one.
    OfferFactory(gpu=gpu, gpu_count=8, current_price_per_hour=Decimal(price) * 8)
    return gpu


@pytest.mark.django_db
def test_one_stream_on_more_gpus_is_no_faster_and_costs_more(client) -> None:  # type: ignore[no-untyped-def]
    # The defect: n GPUs ran one stream n x 0.9^log2(n) times as fast, so 8 cheap cards "won" a 4-bit 70B chat.
    _card("card-24", 24.0, price="0.40", bandwidth=1008.0, bf16=165.2, segment="consumer", bus_interface="PCIe 4.0 x16")
    query = {"model": "llama-3-70b", "precision": "q4_k_m", "serving": "single", "tokens": "1e5"}
    plan = plans_by_slug(client.get(URL, query).json())["card-24"]
    counts = {c["count"]: c for c in plan["counts"]}
    # Only the hand-overs between stages grow with the count: under 2% of a token's time on 8 cards.
    assert (
        counts[2]["hours"] == pytest.approx(counts[4]["hours"], rel=0.02) == pytest.approx(counts[8]["hours"], rel=0.02)
    )
    assert counts[8]["cost"] == pytest.approx(4 * counts[2]["cost"], rel=0.02)
    assert counts[8]["scaling"] == "layer-split" and counts[8]["speedup"] == pytest.approx(1.0, rel=0.02)
    assert plan["recommended"]["count"] == 2
    html = client.get("/fit/", query).content.decode()
    assert "layers split: one card's speed" in html.split('data-gpu="card-24"')[1].split("</tr>")[0]
    assert "more GPUs add memory, not speed" in html


def _host(count: int) -> dict[str, Any]:
    return {
        "gpu_count": count, "devices": list(range(count)), "ranks": count, "gpus": [], "interconnect": "nvlink",
        "topology_source": "nvidia-smi", "link_matrix": [["X" if a == b else "NV18" for b in range(count)]
                                                         for a in range(count)],
        "backend": "nccl", "nccl_version": "2.28.9", "nccl_env": {"NCCL_NVLS_ENABLE": "0"},
    }  # fmt: skip


def _ddp(median: float, count: int, efficiency: float | None) -> dict[str, Any]:
    params = {"batch": 8, "seq_len": 2048, "d_model": 2048, "n_heads": 16, "d_ff": 8192, "interconnect": "nvlink"}
    result = make_result(workload="transformer-train-ddp", unit="tokens/s", median=median, params=params,
                         gpu_count=count)  # fmt: skip
    del result["correctness"]
    if count > 1:
        result["per_gpu"] = [
            {"rank": r, "device_index": r, "median": median / count, "min": median / count, "max": median / count}
            for r in range(count)
        ]
        result["extra"] = {"scaling_efficiency": efficiency, "baseline_1gpu_tokens_per_s": 1_600_000.0}
    return result


@pytest.mark.django_db
def test_training_uses_the_ddp_scaling_the_client_measured_and_the_assumption_elsewhere(client) -> None:  # type: ignore[no-untyped-def]
    world = world_build(rows=INGEST_WORLD)
    OfferFactory(gpu=world.gpus["h100"], current_price_per_hour=Decimal("2.50"))
    # Two host runs through the real intake and ingest, as the client submits them (multigpu._scaling_add).
    document_ingest(submission_document(results=[_ddp(1_600_000.0, 1, None), _ddp(2_560_000.0, 2, 0.8)], host=_host(2)))
    document_ingest(
        submission_document(results=[_ddp(1_600_000.0, 1, None), _ddp(2_688_000.0, 2, 0.84)], host=_host(2))
    )
    response = client.get(URL, {"model": "llama-3-8b", "mode": "lora", "tokens": "1e9"})
    plan = plans_by_slug(response.json())[world.gpus["h100"].slug]
    counts = {c["count"]: c for c in plan["counts"]}
    one = plan["gpu"]["throughput_per_s"]
    assert counts[1]["scaling"] == "single" and counts[1]["throughput_per_s"] == pytest.approx(one)
    # Measured at 2 GPUs: the median of the two runs' efficiencies (0.82).
    assert counts[2]["scaling"] == "measured" and counts[2]["throughput_per_s"] == pytest.approx(one * 2 * 0.82)
    assert "82% at 2 GPUs" in counts[2]["throughput_note"] and "n = 2, NVLink" in counts[2]["throughput_note"]
    # Not measured at 4 or 8: the stated assumption of 90% per doubling.
    assert counts[4]["scaling"] == "assumed" and counts[4]["throughput_per_s"] == pytest.approx(one * 3.24)
    assert counts[2]["hours"] == pytest.approx(1e9 / (one * 2 * 0.82) / 3600)
    html = client.get("/fit/", {"model": "llama-3-8b", "mode": "lora", "tokens": "1e9"}).content.decode()
    method = html[html.index('id="method-scaling"') :].split("</li>")[0]
    assert "each doubling of the GPU count keeps 90%" in method
    assert "GPU selection (help page of a cloud GPU rental platform)" in method  # the assumption's source


@pytest.mark.django_db
def test_every_price_carries_its_provider_observation_date_and_age(client) -> None:  # type: ignore[no-untyped-def]
    gpu = GpuFactory(slug="card-48", name="Card 48", memory_gib=48.0, tdp_w=300)
    TensorPeakFactory(gpu=gpu, precision="bf16", dense_tflops=362.0)
    PurchasePriceFactory(gpu=gpu, condition="new", price=Decimal("7000"))
    seen = timezone.now() - dt.timedelta(days=3)
    estimated = OfferFactory(gpu=gpu, current_price_per_hour=Decimal("0.80"), last_seen=seen,
                             provider=ProviderFactory(slug="estimated-feed", name="Estimated Feed"))  # fmt: skip
    dated = OfferFactory(gpu=gpu, current_price_per_hour=Decimal("0.90"), last_seen=seen,
                         provider=ProviderFactory(slug="dated-feed", name="Dated Feed"))  # fmt: skip
    for offer, basis in ((estimated, PriceSnapshot.DateBasis.ESTIMATE), (dated, PriceSnapshot.DateBasis.SOURCE)):
        PriceSnapshot.objects.create(feed=offer.source, provider=offer.provider, observed_at=seen, date_basis=basis)
    gpu_prices_derive()  # snapshots written behind the importer's back: the stored prices follow
    query = {"model": "llama-3-8b", "mode": "lora", "tokens": "1e8"}
    body_typical = client.get(URL, query).json()
    price = plans_by_slug(body_typical)["card-48"]["gpu"]["price"]
    # Typical of two providers: their mean (0.85), shown with the cheaper one's offer, whose date is
    # an estimate: no age.
    assert (price["provider"], price["date_is_estimate"], price["age_days"]) == ("Estimated Feed", True, None)
    assert body_typical["buy_vs_rent"][0]["price"]["provider"] == "Estimated Feed"
    cheapest = client.get(URL, query | {"price": "cheapest"}).json()
    price = plans_by_slug(cheapest)["card-48"]["gpu"]["price"]
    assert (price["provider"], price["date_is_estimate"]) == ("Estimated Feed", True)
    assert body_typical["inputs"]["price"] == "typical" and cheapest["inputs"]["price"] == "cheapest"

    html = client.get("/fit/", query | {"price": "cheapest"}).content.decode()
    origin = f"Estimated Feed date unknown, file of {seen:%Y-%m-%d} 2 providers (0.80–0.90)"
    fit_row = html.split('data-gpu="card-48"')[1].split("</tr>")[0]
    assert origin in _text(fit_row)
    buy_table = html[html.index('id="buy-rent-table"') :].split("</table>")[0]
    assert origin in _text(buy_table) and "against the cheapest on-demand rental" in html
    typical_html = _text(client.get("/fit/", query).content.decode())
    assert "against the typical on-demand" in typical_html and " d old" not in typical_html
    # A known date keeps its age.
    estimated.delete()
    gpu_prices_derive()
    dated_html = _text(client.get("/fit/", query).content.decode())
    assert f"Dated Feed {seen:%Y-%m-%d} · 3 d old" in dated_html


@pytest.mark.django_db
def test_the_fit_page_speaks_chinese_in_its_throughput_notes_and_method(client) -> None:  # type: ignore[no-untyped-def]
    _card("card-24", 24.0, price="0.40", bandwidth=1008.0, bf16=165.2, segment="consumer", bus_interface="PCIe 4.0 x16")
    _card("card-80", 80.0, price="2.00", bandwidth=3350.0, bf16=989.4, variant="SXM", interconnect_gbs=900.0)
    client.cookies["django_language"] = "zh-hans"
    pages = [
        client.get("/fit/", {"model": "llama-3-70b", "tokens": "1e8"}).content.decode(),
        client.get("/fit/", {"model": "llama-3-70b", "serving": "single", "tokens": "1e6"}).content.decode(),
        # A billion tokens take over a day on one card: the plans use several, communication priced by the link.
        client.get("/fit/", {"model": "llama-3-8b", "mode": "lora", "tokens": "1e9"}).content.decode(),
    ]
    titles = " ".join(" ".join(re.findall(r'title="([^"]*)"', page)) for page in pages)
    assert "由服务模型估算" in titles and "张量并行" in titles and "PCIe 经主机内存中转" in titles
    assert "单路生成" in titles and "稠密峰值" in titles and "数据并行（DDP）" in titles and "按规格表计算" in titles
    english = (
        "estimated by the serving model", "tensor-parallel group", "one stream", "dense peak", "data-parallel",
        "Throughput", "full load", "per GPU", "Rent per GPU-hour", "Measured figures", "d old", "Rental price",
        "typical on-demand", "more GPUs add memory",
    )  # fmt: skip
    for page in pages:
        for phrase in english:
            assert phrase not in page, phrase


# --- the demo data ---------------------------------------------------------------------------


def _fit(query: dict[str, str]) -> Any:
    form = FitForm(data=query)
    request = fit_request_from_form(form=form)
    assert request is not None, form.errors
    return fit_compute(request=request)


def _mlperf_range(slug: str) -> tuple[float, float]:
    """Per-GPU tokens/s of MLPerf's closed, available FP8 rows of 70B-class models on this GPU (the
    v4.1 TensorRT rows stated FP16 ran FP8: llm.precision corrects them, so no 16-bit row is left)."""
    gpu = Gpu.objects.get(slug=slug)
    values = [
        row.value
        for row in llm_rows(gpu_ids=[gpu.id])
        if row.kind == "serving" and row.source_rank == 0 and row.default_basis
        and model_size_class(row.model) == "70b" and row.precision == "fp8"
    ]  # fmt: skip
    assert values, slug
    return min(values), max(values)


def test_llama_3_70b_on_h100_and_h200_lands_in_the_range_the_measurements_support(demo, db) -> None:  # type: ignore[no-untyped-def]
    # Batched serving is the serving model's answer at maximum throughput and 1,000/1,000 tokens: each
    # count's figure is the one the rankings and /api/v1/fit/serving/ give for that GPU and count.
    result = _fit({"model": "llama-3-70b", "precision": "fp8", "tokens": "1e8"})
    plans = {plan.gpu.slug: plan for plan in result.fitting}
    gpus = list(Gpu.objects.with_related().filter(slug__in=("h100-sxm5-80-gb", "h200-sxm-141-gb")))
    answers = serving_answers(question=ServingQuestion("llama-3-70b", 1000, 1000, "fp8", None), gpus=gpus,
                              rented={g.id: frozenset((1, 2, 4, 8)) for g in gpus})  # fmt: skip
    for gpu in gpus:
        by_count = {a.gpu_count: a for a in answers[gpu.id].by_count}
        checked = 0
        for count_plan in plans[gpu.slug].counts:
            answer = by_count.get(count_plan.count)
            if answer is None or answer.tokens_per_s_per_gpu is None:
                assert count_plan.throughput_per_s is None, (gpu.slug, count_plan.count)
                continue
            assert count_plan.throughput_per_s == pytest.approx(answer.tokens_per_s_per_gpu * count_plan.count)
            assert count_plan.throughput_basis == answer.basis, (gpu.slug, count_plan.count)
            assert "1000/1000" in count_plan.throughput_note or "1,000/1,000" in count_plan.throughput_note
            checked += 1
        assert checked >= 2, gpu.slug
    # In 16 bits no point measures these GPUs at this workload: BF16 is never credited with FP8's speed.
    sixteen = _fit({"model": "llama-3-70b", "precision": "bf16", "tokens": "1e8"})
    eight = {plan.gpu.slug: plan for plan in result.fitting}
    for plan in sixteen.fitting:
        if plan.gpu.slug in ("h100-sxm5-80-gb", "h200-sxm-141-gb"):
            fp8 = {c.count: c.throughput_per_s for c in eight[plan.gpu.slug].counts}
            for c in plan.counts:
                if c.throughput_per_s and fp8.get(c.count):
                    assert c.throughput_per_s < fp8[c.count], (plan.gpu.slug, c.count)
    # One stream: llama.cpp's Llama 3 70B F16 rows on H100 PCIe (4 cards) are the figure, whatever the count.
    single = _fit({"model": "llama-3-70b", "precision": "bf16", "serving": "single", "tokens": "1e6"})
    pcie = next(p for p in single.fitting if p.gpu.slug == "h100-pcie-80-gb")
    assert pcie.recommended is not None and pcie.recommended.count == 2
    assert pcie.recommended.throughput_basis == "measured" and 9.2 <= pcie.recommended.throughput_per_s <= 9.7
    assert "llama.cpp" in single.details["h100-pcie-80-gb"].measured_source
    # The H100 SXM, unmeasured: the model's stream at 1.68x the PCIe card's bandwidth.
    sxm = next(p for p in single.fitting if p.gpu.slug == "h100-sxm5-80-gb").recommended
    assert sxm is not None and sxm.throughput_basis == "estimated"
    assert 9.2 * 1.675 * 0.8 <= sxm.throughput_per_s <= 9.7 * 1.675 * 1.25


def test_cheap_cards_no_longer_win_by_pretending_to_scale_and_every_price_is_dated(demo, db, client) -> None:  # type: ignore[no-untyped-def]
    # First-round defects: 8x RTX 3080 and 4x V100 16 GB ranked first for a 4-bit 70B one stream, and
    # consumer cards at 8-way tensor parallelism over PCIe first for 70B serving.
    chat = _fit({"model": "llama-3-70b", "precision": "q4_k_m", "serving": "single", "tokens": "1e6"})
    top = [(plan.gpu.slug, plan.recommended.count) for plan in chat.fitting[:5] if plan.recommended]
    assert all(count <= 2 for _slug, count in top), top
    assert not {"geforce-rtx-3080", "tesla-v100-sxm2-16-gb", "tesla-v100-pcie-16-gb"} & {s for s, _c in top}
    serving = _fit({"model": "llama-3-70b", "precision": "bf16", "tokens": "1e8"})
    segments = dict(Gpu.objects.values_list("slug", "segment"))
    first = serving.fitting[0]
    assert segments[first.gpu.slug] != "consumer"
    for plan in serving.fitting:
        best = plan.recommended
        if best is not None and best.count > 1 and best.throughput_per_s:
            # Every figure names the tensor-parallel size the serving model chose for it.
            assert re.fullmatch(r"single|tp[248]", best.configuration), (plan.gpu.slug, best.configuration)
    # Every price the API gives carries its provider, observation date and age (none for an estimated date).
    body = client.get(URL, {"model": "llama-3-70b", "tokens": "1e8"}).json()
    priced = [plan for plan in body["plans"] if plan["gpu"]["price_per_gpu_hour"] is not None]
    assert len(priced) >= 20
    for plan in priced:
        price = plan["gpu"]["price"]
        assert price["provider"] and price["observed_at"], plan["gpu"]["slug"]
        assert isinstance(price["date_is_estimate"], bool)
        assert (price["age_days"] is None) == price["date_is_estimate"], plan["gpu"]["slug"]
        assert price["age_days"] is None or price["age_days"] >= 0, plan["gpu"]["slug"]
    assert json.dumps(body)  # serialisable as the API answers it
