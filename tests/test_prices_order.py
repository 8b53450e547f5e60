"""Order never matters where feeds overlap, and GCP GPU-only rows take their host VM from the same
import: real catalogue rows (the bundled RunPod v8 file, tests/fixtures/prices/gcp-accelerators)."""

from __future__ import annotations

import datetime as dt
import itertools
from decimal import Decimal
from pathlib import Path

import pytest

from catalog.models import Offer, PriceObservation, PriceSnapshot
from catalog.selectors.price_health import price_data_health
from catalog.services.prices import BUNDLED_PRICES_DIR, price_import_file, prices_import_directory
from catalog.services.prices.skypilot import GCP_HOST_MISSING

pytestmark = pytest.mark.django_db

RUNPOD = BUNDLED_PRICES_DIR / "skypilot-catalog/v8/runpod/vms.csv"
GCP = Path(__file__).parent / "fixtures" / "prices" / "gcp-accelerators" / "v8" / "gcp" / "vms.csv"
T1, T2, T3 = (dt.datetime(2026, 11, day, tzinfo=dt.UTC) for day in (1, 10, 20))


def state() -> dict[tuple, tuple]:
    """Every offer's prices, dates and whole history."""
    history: dict[int, list[tuple]] = {}
    for offer_id, at, price in PriceObservation.objects.order_by("offer_id", "observed_at").values_list(
        "offer_id", "observed_at", "price_per_hour"
    ):
        history.setdefault(offer_id, []).append((at, price))
    return {
        (o.provider.slug, o.instance_type, o.region, o.zone, o.is_spot): (
            o.current_price_per_hour,
            o.current_price_per_gpu_hour_usd,
            o.current_observed_at,
            o.first_seen,
            o.last_seen,
            o.available,
            tuple(history.get(o.pk, [])),
        )
        for o in Offer.objects.select_related("provider")
    }


def test_overlapping_snapshots_give_the_same_prices_dates_and_histories_in_every_order(real_catalogue, tmp_path):
    """The bundled file, a newer file of the same cloud where one offer's price changed, and a
    newest one where it is back: every import order leaves the same state."""
    text = RUNPOD.read_text(encoding="utf-8")
    first_row = text.splitlines()[1]  # 1x_A100-80GB_SECURE ... IN,1.39,1.39,AP-IN-1
    changed = text.replace(first_row, first_row.replace(",1.39,1.39,", ",1.39,1.19,"), 1)
    files = []
    for name, body, when in (("bundled", text, T1), ("newer", changed, T2), ("newest", text, T3)):
        path = tmp_path / name / "v8" / "runpod" / "vms.csv"
        path.parent.mkdir(parents=True)
        path.write_text(body, encoding="utf-8")
        files.append((path, when))
    seen = []
    for order in itertools.permutations(files):
        Offer.objects.all().delete()
        PriceSnapshot.objects.all().delete()
        for path, when in order:
            assert price_import_file(path=path, observed_at=when).ok
        seen.append(state())
    assert all(s == seen[0] for s in seen[1:])
    one = Offer.objects.get(instance_type="1x_A100-80GB_SECURE", zone="AP-IN-1", is_spot=False)
    assert list(one.observations.values_list("observed_at", "price_per_hour")) == [
        (T1, Decimal("1.390000")),
        (T2, Decimal("1.190000")),
        (T3, Decimal("1.390000")),
    ]
    assert (one.current_observed_at, one.last_seen, one.first_seen) == (T3, T3, T1)
    # An unchanged offer: one change point, current since the bundled file, seen until the newest.
    two = Offer.objects.get(instance_type="1x_A100-80GB_SECURE", zone="AP-IN-2", is_spot=False)
    assert list(two.observations.values_list("observed_at", flat=True)) == [T1]
    assert (two.current_observed_at, two.last_seen) == (T1, T3)


def test_unchanged_prices_imported_newest_first_keep_the_first_date(real_catalogue, tmp_path):
    for order in ((T1, T3), (T3, T1)):
        Offer.objects.all().delete()
        PriceSnapshot.objects.all().delete()
        for when in order:
            assert price_import_file(path=RUNPOD, observed_at=when).ok
        assert set(Offer.objects.values_list("current_observed_at", flat=True)) == {T1}
        assert set(PriceObservation.objects.values_list("observed_at", flat=True)) == {T1}


def _split_gcp(directory: Path) -> None:
    """The fixture's GPU-only rows in one file, its host-VM rows in another of the same folder tree."""
    header, *rows = GCP.read_text(encoding="utf-8").splitlines()
    hosts = [r for r in rows if not r.startswith(",")]
    gpus = [r for r in rows if r.startswith(",")]
    for name, body in (("a-accelerators", gpus), ("b-hosts", hosts)):
        path = directory / name / "v8" / "gcp" / "vms.csv"
        path.parent.mkdir(parents=True)
        path.write_text("\n".join((header, *body)) + "\n", encoding="utf-8")


def test_gcp_gpu_rows_take_their_host_from_another_file_of_the_same_import(real_catalogue, tmp_path):
    _split_gcp(tmp_path)
    summaries = prices_import_directory(path=tmp_path, observed_at=T1)
    assert all(s.ok for s in summaries)
    eight = Offer.objects.get(instance_type="a3-highgpu-8g", zone="us-central1-a", is_spot=False, price_separable=True)
    # 33.60609 (8 H100) + 9.46006 (a3-highgpu-8g, from the other file) = 43.06615
    assert eight.current_price_per_hour == Decimal("43.06615") and eight.gpu.slug == "h100-sxm5-80-gb"
    assert eight.extra["host_from"] == "another GCP file of the same import"
    assert Offer.objects.filter(price_separable=True, gpu__isnull=False).count() == 8


def test_gcp_gpu_rows_without_a_known_host_are_listed_on_the_health_page_with_the_reason(
    real_catalogue, tmp_path, admin_client
):
    _split_gcp(tmp_path)
    summary = price_import_file(path=tmp_path / "a-accelerators/v8/gcp/vms.csv", observed_at=T1)
    assert summary.ok and summary.offers_created == 0
    assert summary.skipped[GCP_HOST_MISSING] == 4  # H100 x4, x8 (two zones), H100-MEGA x8
    skipped = {(k.reason, k.rows) for k in price_data_health()["skipped"]}
    assert (GCP_HOST_MISSING, 4) in skipped
    page = admin_client.get("/providers/health/").content.decode()
    assert "the host VM of its machine type is not listed for the same zone in this import" in page
