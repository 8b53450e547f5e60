"""Append-only price history: re-imports, price changes, offers leaving a snapshot, bad rows."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal

import pytest
from django.db import IntegrityError

from catalog.models import Gpu, GpuPriceDay, ImportRun, Offer, PriceObservation
from catalog.money import display_money
from catalog.selectors.prices import ALL_ON_DEMAND, gpu_price_history
from catalog.services.prices import price_import_file
from catalog.services.prices.derive import gpu_prices_rebuild
from catalog.services.prices.mapping import offer_gpu_map
from tests.factories import write_catalogue_file
from tests.world import PRICE_WORLD, world_build

pytestmark = pytest.mark.django_db

T1 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
T2 = dt.datetime(2026, 1, 2, tzinfo=dt.UTC)
T3 = dt.datetime(2026, 1, 3, tzinfo=dt.UTC)
HEADER = "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,Region,GpuInfo,SpotPrice\n"
H100_INFO = "\"{'Gpus': [{'Name': 'H100', 'Manufacturer': 'NVIDIA', 'Count': 1, 'MemoryInfo': {'SizeInMiB': 81920}}], 'TotalGpuMemoryInMiB': 81920}\""


def lambda_file(tmp_path, rows):
    return write_catalogue_file(tmp_path, "lambda", HEADER + "".join(rows))


def row(instance="gpu_1x_h100_pcie", price="2.49", region="us-east-1", spot="", count="1", name="H100"):
    return f"{instance},{name},{count},26.0,225.0,{price},{region},{H100_INFO},{spot}\n"


def test_reimporting_the_same_file_adds_nothing(tmp_path):
    world_build(rows=PRICE_WORLD)
    path = lambda_file(tmp_path, [row(), row(instance="gpu_2x_h100_pcie", price="4.98", count="2")])
    first = price_import_file(path=path, observed_at=T1)
    assert (first.offers_created, first.observations_added) == (2, 2)
    again = price_import_file(path=path, observed_at=T1)
    later = price_import_file(path=path, observed_at=T2)
    for summary in (again, later):
        assert (summary.offers_created, summary.offers_updated, summary.observations_added) == (0, 0, 0)
    assert PriceObservation.objects.count() == 2
    # A later import of the same prices confirms the offers: last seen moves, history does not.
    assert set(Offer.objects.values_list("last_seen", flat=True)) == {T2}
    assert set(Offer.objects.values_list("current_observed_at", flat=True)) == {T1}


def test_a_changed_price_adds_one_observation_and_current_mirrors_it(tmp_path):
    world_build(rows=PRICE_WORLD)
    price_import_file(path=lambda_file(tmp_path, [row(price="2.49")]), observed_at=T1)
    summary = price_import_file(path=lambda_file(tmp_path, [row(price="2.29")]), observed_at=T2)
    assert (summary.observations_added, summary.offers_updated, summary.offers_created) == (1, 1, 0)
    offer = Offer.objects.get()
    assert list(offer.observations.order_by("observed_at").values_list("price_per_hour", flat=True)) == [
        Decimal("2.49"),
        Decimal("2.29"),
    ]
    newest = offer.observations.latest("observed_at")
    assert offer.current_price_per_hour == newest.price_per_hour
    assert offer.current_price_per_gpu_hour_usd == newest.price_per_gpu_hour_usd
    assert offer.current_observed_at == newest.observed_at == T2


def test_an_older_snapshot_never_overwrites_the_current_price_and_history_keeps_both(tmp_path):
    world_build(rows=PRICE_WORLD)
    price_import_file(path=lambda_file(tmp_path, [row(price="2.29")]), observed_at=T2)
    summary = price_import_file(path=lambda_file(tmp_path, [row(price="2.49")]), observed_at=T1)
    offer = Offer.objects.get()
    assert offer.current_price_per_hour == Decimal("2.29") and offer.last_seen == T2 and offer.first_seen == T1
    assert summary.observations_added == 1
    assert list(offer.observations.order_by("observed_at").values_list("observed_at", "price_per_hour")) == [
        (T1, Decimal("2.49")),
        (T2, Decimal("2.29")),
    ]


def test_an_offer_absent_from_a_newer_snapshot_is_kept_unavailable_then_returns(tmp_path):
    world_build(rows=PRICE_WORLD)
    price_import_file(path=lambda_file(tmp_path, [row(), row(region="us-west-1")]), observed_at=T1)
    summary = price_import_file(path=lambda_file(tmp_path, [row()]), observed_at=T2)
    assert summary.offers_marked_unavailable == 1
    gone = Offer.objects.get(region="us-west-1")
    assert not gone.available and gone.unavailable_since == T2
    assert gone.observations.count() == 1  # history kept
    assert not Offer.objects.current().filter(pk=gone.pk).exists()
    price_import_file(path=lambda_file(tmp_path, [row(), row(region="us-west-1")]), observed_at=T3)
    gone.refresh_from_db()
    assert gone.available and gone.unavailable_since is None and gone.last_seen == T3


def test_another_providers_offers_are_not_marked_unavailable(tmp_path):
    world_build(rows=PRICE_WORLD)
    price_import_file(path=lambda_file(tmp_path, [row()]), observed_at=T1)
    other = write_catalogue_file(tmp_path, "nebius", HEADER + row(instance="gpu-h100-sxm", region="eu-north1"))
    price_import_file(path=other, observed_at=T2)
    assert Offer.objects.get(provider__slug="lambda").available


def test_malformed_rows_are_reported_with_line_numbers_and_skipped(tmp_path):
    world_build(rows=PRICE_WORLD)
    rows = [
        row(instance="ok_1"),
        row(instance="bad_text", price="abc"),
        row(instance="bad_negative", price="-1.5"),
        row(instance="bad_nan", price="NaN"),
        "short_row,H100,1\n",
        row(instance="bad_count", count="zero"),
        row(instance="ok_2", price="3.10"),
        row(instance="bad_inf", price="inf"),
    ]
    summary = price_import_file(path=lambda_file(tmp_path, rows), observed_at=T1)
    reasons = {r.line: r.reason for r in summary.rejected}
    assert set(reasons) == {3, 4, 5, 6, 7, 9}
    assert "Price 'abc' is not a number" in reasons[3]
    assert "negative" in reasons[4]
    assert "NaN" in reasons[5]
    assert "missing column(s)" in reasons[6] and "Price" in reasons[6]
    assert "AcceleratorCount" in reasons[7]
    assert set(Offer.objects.values_list("instance_type", flat=True)) == {"ok_1", "ok_2"}
    run = ImportRun.objects.get(pk=summary.import_run_id)
    assert {r["line"] for r in run.rejected_rows} == {3, 4, 5, 6, 7, 9}
    assert run.summary["rows_rejected"] == 6 and run.status == ImportRun.Status.DONE


def test_same_offer_twice_with_different_prices_is_rejected(tmp_path):
    world_build(rows=PRICE_WORLD)
    summary = price_import_file(path=lambda_file(tmp_path, [row(price="2.49"), row(price="2.99")]), observed_at=T1)
    assert [(r.line, r.reason) for r in summary.rejected] == [(3, "same offer as line 2 with a different price")]
    assert Offer.objects.get().current_price_per_hour == Decimal("2.49")


def test_a_file_without_required_columns_fails_cleanly(tmp_path):
    path = write_catalogue_file(tmp_path, "lambda", "InstanceType,Price\nx,1\n")
    summary = price_import_file(path=path, format="skypilot", observed_at=T1)
    assert "header lacks" in summary.error and "AcceleratorName" in summary.error
    assert ImportRun.objects.get(pk=summary.import_run_id).status == ImportRun.Status.FAILED
    assert not Offer.objects.exists()


def test_a_database_error_mid_file_leaves_nothing_half_written(tmp_path, monkeypatch):
    world_build(rows=PRICE_WORLD)

    def explode(*args, **kwargs):
        raise IntegrityError("simulated failure while writing observations")

    monkeypatch.setattr(PriceObservation.objects, "bulk_create", explode)
    summary = price_import_file(path=lambda_file(tmp_path, [row(), row(region="us-west-1")]), observed_at=T1)
    assert "nothing from this file was written" in summary.error
    assert not Offer.objects.exists() and not PriceObservation.objects.exists()
    assert summary.offers_created == 0
    assert ImportRun.objects.get(pk=summary.import_run_id).status == ImportRun.Status.FAILED


def test_tracker_best_deal_leaving_and_returning(tmp_path):
    world_build(rows=PRICE_WORLD)

    def snapshot(stamp, deals):
        return {
            "timestamp": stamp,
            "gpu_type": "H100_80GB",
            "socket_type": "PCIe",
            "by_provider": {},
            "by_config": {
                config: {
                    "count": 1,
                    "min_per_gpu": price,
                    "min_total": price,
                    "best_deal": {"provider": p, "spot": False},
                }
                for config, (p, price) in deals.items()
            },
        }

    snapshots = [
        snapshot("2025-10-19T00:00:00+00:00", {"1x": ("runpod", 2.4), "2x": ("hyperstack", 1.9)}),
        snapshot("2025-10-20T00:00:00+00:00", {"2x": ("hyperstack", 1.8)}),
        snapshot("2025-10-21T00:00:00+00:00", {"1x": ("runpod", 2.4), "2x": ("hyperstack", 1.8)}),
    ]
    path = tmp_path / "H100_80GB_PCIe.jsonl"
    path.write_text("\n".join(json.dumps(s) for s in snapshots) + "\nnot json\n")
    summary = price_import_file(path=path)
    assert [(r.line, r.reason.split(" (")[0]) for r in summary.rejected] == [(4, "not valid JSON")]
    hyperstack = Offer.objects.get(provider__slug="hyperstack")
    assert hyperstack.gpu_count == 2
    assert list(hyperstack.observations.values_list("price_per_hour", flat=True)) == [Decimal("1.9"), Decimal("1.8")]
    runpod = Offer.objects.get(provider__slug="runpod")
    assert runpod.available and runpod.observations.count() == 1  # same price when it came back
    assert summary.offers_marked_unavailable == 1


def _days_from_observations() -> dict[tuple[int, dt.date, int, bool], Decimal]:
    """The daily lows computed here from every observation, as the GPU page's history shows them."""
    lows: dict[tuple[int, dt.date, int, bool], Decimal] = {}
    for o in PriceObservation.objects.filter(offer__gpu__isnull=False).select_related("offer"):
        key = (o.offer.gpu_id, o.observed_at.astimezone(dt.UTC).date(), o.offer.provider_id, o.offer.is_spot)
        lows[key] = min(lows.get(key, o.price_per_gpu_hour_usd), o.price_per_gpu_hour_usd)
    return lows


def _days_stored() -> dict[tuple[int, dt.date, int, bool], Decimal]:
    return {
        (d.gpu_id, d.day, d.provider_id, d.is_spot): d.low_usd
        for d in GpuPriceDay.objects.all()  # the derived rows the page reads
    }


def test_the_stored_daily_lows_follow_imports_older_snapshots_and_mappings(tmp_path):
    world_build(rows=PRICE_WORLD)
    late = T2 + dt.timedelta(hours=5)  # a second change on the same day: the day's low is the lower
    price_import_file(path=lambda_file(tmp_path, [row(price="2.49", spot="0.99")]), observed_at=T1)
    price_import_file(path=lambda_file(tmp_path, [row(price="2.29", spot="1.10")]), observed_at=T2)
    price_import_file(path=lambda_file(tmp_path, [row(price="2.19", spot="1.10")]), observed_at=late)
    assert _days_stored() == _days_from_observations() and len(_days_stored()) >= 4
    offer = Offer.objects.get(is_spot=False)
    assert GpuPriceDay.objects.get(gpu=offer.gpu, day=T2.date(), is_spot=False).low_usd == Decimal("2.19")

    # An older snapshot at the price that followed it: the newer point is no longer a change and goes.
    price_import_file(path=lambda_file(tmp_path, [row(price="3.00", region="eu-1")]), observed_at=T3)
    price_import_file(path=lambda_file(tmp_path, [row(price="3.00", region="eu-1")]), observed_at=T2)
    assert _days_stored() == _days_from_observations()

    # A curator maps the offers to another GPU: their history moves with them.
    before = offer.gpu_id
    other = Gpu.objects.exclude(pk=before).filter(family="H100").first()
    assert other is not None
    offer_gpu_map(offers=list(Offer.objects.filter(gpu_id=before)), gpu=other)
    assert _days_stored() == _days_from_observations()
    assert not GpuPriceDay.objects.filter(gpu_id=before).exists()
    series = gpu_price_history(gpu=other, money=display_money(currency="USD")).series
    assert dict(series[str(ALL_ON_DEMAND)])[T2.date()] == pytest.approx(2.19)


def test_rebuild_prices_derives_the_daily_lows_again(tmp_path):
    world_build(rows=PRICE_WORLD)
    price_import_file(path=lambda_file(tmp_path, [row(price="2.49")]), observed_at=T1)
    expected = _days_stored()
    GpuPriceDay.objects.all().delete()
    gpu_prices_rebuild()
    assert _days_stored() == expected == _days_from_observations()
