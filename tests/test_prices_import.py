"""Price importers on the real bundled files: every format, every SkyPilot trap, summaries."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path

import pytest

from catalog.models import ImportRun, Offer, PriceObservation, PriceSnapshot
from catalog.services.prices import BUNDLED_PRICES_DIR, format_detect, price_import_file, prices_import_directory
from tests.world import PRICE_WORLD, world_build

pytestmark = pytest.mark.django_db

SKYPILOT = BUNDLED_PRICES_DIR / "skypilot-catalog"
WHEN = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
SKYPILOT_FILES = sorted(p.relative_to(SKYPILOT).as_posix() for p in SKYPILOT.rglob("vms.csv"))


def _data_lines(path: Path) -> int:
    import csv

    with path.open(newline="", encoding="utf-8") as handle:
        return sum(1 for _ in csv.DictReader(handle))


def test_bundle_holds_every_skypilot_cloud():
    clouds = {p.split("/")[1] for p in SKYPILOT_FILES}
    assert clouds >= {
        "lambda",
        "vast",
        "nebius",
        "verda",
        "hyperbolic",
        "shadeform",
        "primeintellect",
        "jarvislabs",
        "hyperstack",
        "cudo",
        "runpod",
        "aws",
        "gcp",
        "fluidstack",
        "paperspace",
    }


@pytest.mark.parametrize("relative", SKYPILOT_FILES)
def test_every_skypilot_file_imports_without_error(relative):
    path = SKYPILOT / relative
    assert format_detect(path=path) == "skypilot"
    summary = price_import_file(path=path, observed_at=WHEN)
    assert summary.ok, summary.error
    assert summary.rows_read == _data_lines(path)
    assert summary.rejected == []
    assert summary.observations_added > 0
    run = ImportRun.objects.get(pk=summary.import_run_id)
    assert run.status == ImportRun.Status.DONE
    assert run.summary["rows_read"] == summary.rows_read
    assert run.summary["observations_added"] == PriceObservation.objects.filter(import_run=run).count()
    assert run.provider is not None and run.provider.slug in relative


def test_lambda_summary_counts_and_per_gpu_price():
    catalogue = world_build(rows=PRICE_WORLD)
    summary = price_import_file(path=SKYPILOT / "v8/lambda/vms.csv", observed_at=WHEN)
    # 408 rows: 34 CPU-only instances skipped, 374 GPU offers without spot prices.
    assert summary.rows_read == 408
    assert summary.skipped == {"no accelerator (CPU-only instance)": 34}
    assert summary.offers_created == 374 == summary.observations_added
    eight = Offer.objects.get(provider__slug="lambda", instance_type="gpu_8x_h100_sxm5", region="us-east-1")
    assert eight.gpu_count == 8
    assert eight.current_price_per_gpu_hour_usd == eight.current_price_per_hour / 8
    assert eight.gpu_id == catalogue.gpus["h100_sxm"].id
    assert eight.vcpus_per_gpu == eight.vcpus / 8


def test_gcp_host_vm_prices_are_not_separable_and_700_means_unavailable():
    summary = price_import_file(path=SKYPILOT / "v8/gcp/vms.csv", observed_at=WHEN)
    assert summary.ok and summary.rejected == []
    host = Offer.objects.get(instance_type="a2-highgpu-1g", zone="asia-northeast1-a", is_spot=False)
    assert host.price_separable is False
    assert host.gpu_name_raw == "A100" and host.gpu_count == 1
    assert host.current_price_per_gpu_hour_usd is None and not host.observations.exists()
    assert host.extra["host_price_per_hour"] == "0.948030"
    assert not Offer.objects.current().filter(price_separable=False).exists()
    # asia-east1-c lists the TPU at 700.0 on-demand and spot: both offers exist, unavailable, unpriced.
    placeholder = Offer.objects.filter(instance_type="tpu-v6e-1", zone="asia-east1-c")
    assert placeholder.count() == 2
    assert all(not o.available and o.current_price_per_hour is None for o in placeholder)
    # southamerica-west1-a: a real on-demand price, spot at the placeholder.
    ondemand = Offer.objects.get(instance_type="tpu-v6e-1", zone="southamerica-west1-a", is_spot=False)
    spot = Offer.objects.get(instance_type="tpu-v6e-1", zone="southamerica-west1-a", is_spot=True)
    assert ondemand.available and ondemand.current_price_per_hour == Decimal("2.7")
    assert not spot.available and spot.unavailable_since == WHEN
    assert not PriceObservation.objects.filter(price_per_hour=Decimal("700")).exists()
    assert summary.listed_unavailable > 0 and summary.not_separable == 102


def test_row_with_price_and_spot_gives_two_offers_and_spot_only_rows_one():
    price_import_file(path=SKYPILOT / "v8/verda/vms.csv", observed_at=WHEN)
    both = Offer.objects.filter(provider__slug="verda", instance_type="1B300.30V")
    assert sorted((o.is_spot, o.current_price_per_hour) for o in both) == [
        (False, Decimal("6.99")),
        (True, Decimal("2.447")),
    ]
    spot_only = Offer.objects.filter(provider__slug="verda", instance_type="2B300.60V")
    assert [(o.is_spot, o.current_price_per_hour) for o in spot_only] == [(True, Decimal("4.893"))]


def test_float_noise_is_quantised():
    price_import_file(path=SKYPILOT / "v8/cudo/vms.csv", observed_at=WHEN)
    offer = Offer.objects.get(
        provider__slug="cudo", instance_type="ice-lake-a40-compute_1x2v4gb", region="ca-montreal-3"
    )
    assert offer.current_price_per_hour == Decimal("0.369800")


def test_gpu_info_variants_parse(tmp_path):
    # hyperstack: 'Manufacturer': null; cudo: 'Count': '1.0'; verda: real JSON; paperspace: a bare name.
    for relative in ("v8/hyperstack/vms.csv", "v8/cudo/vms.csv", "v8/verda/vms.csv", "v6/paperspace/vms.csv"):
        summary = price_import_file(path=SKYPILOT / relative, observed_at=WHEN)
        assert summary.rejected == [] and summary.ok
    assert (
        Offer.objects.get(provider__slug="hyperstack", instance_type="n3-A100x1", region="CANADA-1").gpu_memory_gib_raw
        == 80
    )
    assert Offer.objects.get(provider__slug="paperspace", instance_type="H100").gpu_name_raw == "H100"


def test_memory_in_gb_and_memory_totals_snap_to_the_catalogue():
    catalogue = world_build(rows=PRICE_WORLD)
    price_import_file(path=SKYPILOT / "v8/shadeform/vms.csv", observed_at=WHEN)
    price_import_file(path=SKYPILOT / "v8/vast/vms.csv", observed_at=WHEN)
    # shadeform writes 80 (GB) in SizeInMiB: read as 80 GiB, matched to the 80 GB A100.
    crusoe = Offer.objects.get(provider__slug="shadeform", instance_type="crusoe_A100-80G-sxm4x8")
    assert crusoe.gpu_memory_gib_raw == 80 and crusoe.gpu_id == catalogue.gpus["a100_sxm_80"].id
    # vast gives the total over both GPUs (287542 MiB): per GPU 140.4 GiB snaps to the 141 GB H200.
    two = Offer.objects.filter(provider__slug="vast", instance_type="2x-H200-32-65536").first()
    assert two.gpu_id == catalogue.gpus["h200"].id
    assert two.gpu_memory_gib_raw == pytest.approx(140.4, abs=0.1)


def test_fsdl_table_imports_on_demand_and_spot_per_gpu():
    path = BUNDLED_PRICES_DIR / "fsdl-cloud-gpus/cloud-gpus.csv"
    assert format_detect(path=path) == "fsdl"
    summary = price_import_file(path=path, observed_at=WHEN)
    assert summary.ok and summary.rows_read == 257 and summary.rejected == []
    assert summary.skipped == {"duplicate row (same offer and price as an earlier row)": 4}
    p3 = Offer.objects.filter(provider__slug="aws", instance_type__startswith="p3.8xlarge")
    by_spot = {o.is_spot: o for o in p3}
    assert by_spot[False].current_price_per_gpu_hour_usd == Decimal("3.06")  # 12.24 / 4
    assert by_spot[True].current_price_per_gpu_hour_usd == Decimal("0.9175")  # 3.67 / 4
    # Exoscale lists only Per-GPU: the instance price is rebuilt from it.
    exo = Offer.objects.get(provider__slug="exoscale", instance_type="GPU3080Ti MEDIUM · 2x 3080Ti (12 GB)")
    assert exo.current_price_per_hour == Decimal("3.417360") and exo.extra["price_from_per_gpu_column"]
    # Dataoorts lists vCPU ranges: kept as listed, not guessed.
    dataoorts = Offer.objects.filter(provider__slug="dataoorts").first()
    assert dataoorts.vcpus is None and "-" in dataoorts.extra["vcpus_listed"]
    # Providers spelled differently in FSDL map to the same provider as SkyPilot's.
    assert Offer.objects.filter(provider__slug="verda").exists()  # "Datacrunch"


def test_tracker_history_imports_best_deals_as_observations_over_time():
    catalogue = world_build(rows=PRICE_WORLD)
    path = BUNDLED_PRICES_DIR / "tugot17-gpu-price-tracker/H100_80GB_PCIe.jsonl"
    assert format_detect(path=path) == "tugot17"
    summary = price_import_file(path=path)
    assert summary.ok and summary.rows_read == 29 and summary.rejected == []
    offers = Offer.objects.filter(source="tugot17-gpu-price-tracker/H100_80GB_PCIe.jsonl")
    assert {o.gpu_id for o in offers} == {catalogue.gpus["h100_pcie"].id}
    # One offer per configuration's best deal: its GPU count and whole-instance price as stated.
    assert all(o.instance_type.startswith("tracker best deal: H100_80GB PCIe ") for o in offers)
    assert all(o.gpu_count == float(o.instance_type.rsplit(" ", 1)[1].rstrip("x")) for o in offers)
    first = PriceObservation.objects.filter(offer__in=offers).order_by("observed_at").first()
    assert first.observed_at == dt.datetime(2025, 10, 19, 21, 58, 24, 34620, tzinfo=dt.UTC)
    # Only the last snapshot's best deals are available.
    last = offers.order_by("-last_seen").first().last_seen
    assert set(offers.filter(available=True).values_list("last_seen", flat=True)) == {last}


def test_whole_bundle_imports():
    summaries = prices_import_directory(path=BUNDLED_PRICES_DIR)
    failed = [s for s in summaries if s.error]
    assert failed == []
    assert sum(len(s.rejected) for s in summaries) == 0
    assert PriceObservation.objects.count() == sum(s.observations_added for s in summaries)
    # Observation time of files without timestamps comes from snapshots.toml, with how it is known.
    assert Offer.objects.filter(source="fsdl-cloud-gpus/cloud-gpus.csv").first().current_observed_at == dt.datetime(
        2025, 3, 7, tzinfo=dt.UTC
    )
    fsdl = PriceSnapshot.objects.filter(feed="fsdl-cloud-gpus/cloud-gpus.csv").first()
    assert fsdl.date_basis == PriceSnapshot.DateBasis.PUBLISHED
    lambda_snapshot = PriceSnapshot.objects.get(feed="skypilot-catalog/lambda/vms.csv")
    assert lambda_snapshot.date_basis == PriceSnapshot.DateBasis.ESTIMATE and "copy date" in lambda_snapshot.date_note
    tracker = PriceSnapshot.objects.filter(feed__startswith="tugot17").first()
    assert tracker.date_basis == PriceSnapshot.DateBasis.SOURCE
