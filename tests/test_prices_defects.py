"""Issue 16's price defects, each on the real catalogue rows that showed it (the real catalogue GPUs too).

Rows come from the bundled snapshot (catalog/data/prices/) and from tests/fixtures/prices/
(real lines copied from the SkyPilot catalogue repository; see its README.md).
"""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path

import pytest

from catalog.models import Offer, PriceSnapshot
from catalog.services.prices import BUNDLED_PRICES_DIR, price_import_file
from catalog.services.prices.currency import ecb_rate
from catalog.services.prices.linking import GpuLinker
from catalog.services.prices.skypilot import parse_skypilot

pytestmark = pytest.mark.django_db

SKYPILOT = BUNDLED_PRICES_DIR / "skypilot-catalog"
TRACKER = BUNDLED_PRICES_DIR / "tugot17-gpu-price-tracker"
FIXTURES = Path(__file__).parent / "fixtures" / "prices"
WHEN = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)


def offer(**filters) -> Offer:
    return Offer.objects.select_related("gpu").get(**filters)


def test_runpod_a100_80gb_is_the_pcie_card_its_gpu_info_names(real_catalogue):
    # 1x_A100-80GB_SECURE,A100-80GB,...,{'Name': 'A100 PCIe', ..., 'SizeInMiB': 80}
    price_import_file(path=SKYPILOT / "v8/runpod/vms.csv", observed_at=WHEN)
    runpod = Offer.objects.filter(provider__slug="runpod", gpu_name_raw="A100-80GB")
    assert runpod.count() == 158
    assert set(runpod.values_list("gpu__slug", flat=True)) == {"a100-pcie-80-gb"}
    assert not runpod.filter(variant_ambiguous=True).exists()


def test_cudo_pci_is_read_as_pcie(real_catalogue):
    # intel-ice-lake-a100-pci_1x2v4gb,A100,1.0,2,4,1.3734000000000002,us-carlsbad-1,"{'Name': 'A100', ... 81920}"
    price_import_file(path=SKYPILOT / "v8/cudo/vms.csv", observed_at=WHEN)
    pci = offer(provider__slug="cudo", instance_type="intel-ice-lake-a100-pci_1x2v4gb", region="us-carlsbad-1")
    assert pci.gpu.slug == "a100-pcie-80-gb" and not pci.variant_ambiguous
    assert pci.current_price_per_gpu_hour_usd == Decimal("1.373400")


def test_prime_intellect_memory_is_the_total_over_the_gpus(real_catalogue):
    # datacrunch__2xV100_16GB__10__45,2V100.10V,...,V100,2.0,"{...'SizeInMiB':32768...}",FI,FIN-01,0.28,
    price_import_file(path=SKYPILOT / "v8/primeintellect/vms.csv", observed_at=WHEN)
    two = offer(provider__slug="primeintellect", instance_type="datacrunch__2xV100_16GB__10__45", is_spot=False)
    assert two.gpu_memory_gib_raw == 16 and two.gpu.memory_gib == 16
    assert two.current_price_per_gpu_hour_usd == Decimal("0.14")
    # A V100 16 GB is an SXM2 or a PCIe card; the row does not say which.
    assert two.variant_ambiguous
    assert two.extra["variant_candidates"] == ["tesla-v100-pcie-16-gb", "tesla-v100-sxm2-16-gb"]
    assert not Offer.objects.current().sku_level().filter(pk=two.pk).exists()


def nebius_v7(directory: Path) -> Path:
    path = directory / "v7" / "nebius" / "vms.csv"
    path.parent.mkdir(parents=True)
    path.write_bytes((FIXTURES / "skypilot-v7-nebius-vms.csv").read_bytes())
    return path


def test_nebius_v7_gpu_memory_is_host_ram_and_is_ignored(real_catalogue, tmp_path):
    # gpu-h100-sxm_1gpu-16vcpu-200gb,H100,1,16,200,2.95,eu-north1,"{... 'SizeInMiB': 204800}}] ...}",1.25
    summary = price_import_file(path=nebius_v7(tmp_path), observed_at=WHEN)
    assert summary.ok and summary.rejected == [] and summary.memory_mismatches == {}
    h100 = offer(provider__slug="nebius", instance_type="gpu-h100-sxm_1gpu-16vcpu-200gb", is_spot=False)
    assert h100.gpu.slug == "h100-sxm5-80-gb" and h100.gpu_memory_gib_raw is None
    assert "host RAM" in h100.extra["memory_note"]
    l40s = offer(provider__slug="nebius", instance_type="gpu-l40s-d_2gpu-64vcpu-384gb")
    assert l40s.gpu.slug == "l40s" and l40s.current_price_per_gpu_hour_usd == Decimal("2.2844")


def test_gcp_gpu_rows_count_in_the_identity_and_carry_their_host_price(real_catalogue):
    summary = price_import_file(path=FIXTURES / "gcp-accelerators/v8/gcp/vms.csv", observed_at=WHEN)
    assert summary.ok and summary.rejected == []
    four = offer(provider__slug="gcp", instance_type="a3-highgpu-4g", zone="us-central1-a", is_spot=False)
    eight = offer(provider__slug="gcp", instance_type="a3-highgpu-8g", zone="us-central1-a", is_spot=False)
    # H100 x4: 16.80304 (GPUs) + 4.73003 (a3-highgpu-4g) = 21.53307; x8: 33.60609 + 9.46006.
    assert (four.gpu_count, four.current_price_per_hour) == (4, Decimal("21.53307"))
    assert (eight.gpu_count, eight.current_price_per_hour) == (8, Decimal("43.06615"))
    assert four.current_price_per_gpu_hour_usd == Decimal("5.383268") and four.price_separable
    assert (four.vcpus, four.ram_gib) == (104, 936)
    spot = offer(provider__slug="gcp", instance_type="a3-highgpu-8g", zone="us-central1-a", is_spot=True)
    assert spot.current_price_per_hour == Decimal("26.83013")  # 23.9408 + 2.88933
    mega = offer(provider__slug="gcp", instance_type="a3-megagpu-8g", zone="us-central1-a", is_spot=False)
    assert mega.current_price_per_hour == Decimal("92.21427") and mega.gpu_name_raw == "H100-MEGA"
    # The host row priced with its GPUs is not an offer of its own; a host alone stays unpriced.
    assert not Offer.objects.filter(instance_type="a3-highgpu-1g", price_separable=True).exists()
    assert offer(instance_type="a3-highgpu-1g", is_spot=False).price_separable is False
    # L4 (G2 hosts of several shapes) and T4 (N1 hosts) have no fixed host: left out, with the reason.
    assert (
        summary.skipped[
            "GCP GPU-only price left out: the host VM is not fixed by the GPU (N1/G2 machines), no full price"
        ]
        == 3
    )
    assert not Offer.objects.filter(gpu_name_raw__in=["L4", "T4"]).exists()


def _best_deals(path: Path) -> dict[tuple[str, str, str], bool]:
    """(timestamp, provider, config) -> spot flag, read straight from the tracker's lines."""
    deals = {}
    for line in path.read_text().splitlines():
        snapshot = json.loads(line)
        for config, stats in snapshot["by_config"].items():
            deal = stats.get("best_deal") or {}
            if deal.get("provider"):
                deals[(snapshot["timestamp"], deal["provider"], config)] = bool(deal.get("spot"))
    return deals


@pytest.mark.parametrize("name", ["B200_180GB.jsonl", "H200_141GB.jsonl"])
def test_tracker_spot_deals_never_become_on_demand_prices(real_catalogue, name):
    path = TRACKER / name
    price_import_file(path=path)
    verda = Offer.objects.filter(provider__slug="verda", source=f"tugot17-gpu-price-tracker/{name}")
    # DataCrunch's 1.79 (B200) and 1.18 (H200) per GPU-hour are spot deals.
    cheap = {"B200_180GB.jsonl": Decimal("1.79"), "H200_141GB.jsonl": Decimal("1.18")}[name]
    on_demand_prices = {
        p.quantize(Decimal("0.01"))
        for o in verda.filter(is_spot=False)
        for p in o.observations.values_list("price_per_gpu_hour_usd", flat=True)
    }
    assert cheap not in on_demand_prices
    assert verda.filter(is_spot=True, observations__price_per_gpu_hour_usd__lt=cheap + Decimal("0.01")).exists()
    # Every offer's last sighting is a snapshot in which it was that configuration's best deal,
    # with the same spot flag: "last seen" only moves with a price the offer really had.
    deals = _best_deals(path)
    stamps = {dt.datetime.fromisoformat(t): t for t, _, _ in deals}
    for o in Offer.objects.filter(source=f"tugot17-gpu-price-tracker/{name}").select_related("provider"):
        config = o.instance_type.rsplit(" ", 1)[1]
        raw_name = o.provider.name.lower().replace(" ", "") if o.provider.slug != "verda" else "datacrunch"
        providers = {p for t, p, c in deals if t == stamps[o.last_seen] and c == config}
        assert any(deals[(stamps[o.last_seen], p, config)] == o.is_spot for p in providers), (o, raw_name)


def test_importing_in_either_order_gives_the_same_current_prices(real_catalogue, tmp_path):
    """v8 after v7 and v7 after v8 (Nebius), v5 and v8 (RunPod), and a tracker file: same result."""
    v7 = nebius_v7(tmp_path)
    older, newer = dt.datetime(2025, 6, 1, tzinfo=dt.UTC), dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
    files = [
        (v7, older),
        (SKYPILOT / "v8/nebius/vms.csv", newer),
        (SKYPILOT / "v5/runpod/vms.csv", older),
        (SKYPILOT / "v8/runpod/vms.csv", newer),
        (TRACKER / "H100_80GB_SXM5.jsonl", None),
    ]

    def state() -> dict[tuple, tuple]:
        return {
            (o.provider_id, o.instance_type, o.region, o.zone, o.is_spot): (
                o.current_price_per_gpu_hour_usd,
                o.available,
                o.last_seen,
                o.first_seen,
                o.gpu_id,
                o.variant_ambiguous,
            )
            for o in Offer.objects.all()
        }

    for path, when in files:
        assert price_import_file(path=path, format=None, observed_at=when).ok
    forward = state()
    current_forward = set(Offer.objects.current().values_list("id", flat=True))
    Offer.objects.all().delete()
    PriceSnapshot.objects.all().delete()
    for path, when in reversed(files):
        assert price_import_file(path=path, format=None, observed_at=when).ok
    assert state() == forward
    assert len(current_forward) == Offer.objects.current().count()
    # The newer v8 snapshot gives the offer's details, whichever came first: its 80 GiB, not v7's host RAM.
    h100 = Offer.objects.get(provider__slug="nebius", instance_type="gpu-h100-sxm_1gpu-16vcpu-200gb", is_spot=False)
    assert (h100.gpu_memory_gib_raw, h100.last_seen, h100.first_seen) == (80, newer, older)
    # RunPod's v5 offers that v8 no longer lists are kept, unavailable, in both orders.
    assert Offer.objects.filter(source="skypilot-catalog/runpod/vms.csv", available=False).count() == 280


def test_cny_converts_at_the_ecb_rate_of_the_price_date(real_catalogue, tmp_path):
    path = tmp_path / "curated" / "cny.csv"
    path.parent.mkdir()
    path.write_text(
        "provider,instance_type,gpu_name,gpu_count,price_per_hour,currency,observed_at,source\n"
        "testcloud,4090x1,RTX 4090,1,2.00,CNY,2025-11-14,https://example.org/prices\n"
        "testcloud,4090x1-later,RTX 4090,1,2.00,CNY,2026-06-01,https://example.org/prices\n",
        encoding="utf-8",
    )
    assert price_import_file(path=path).ok
    early, later = ecb_rate("CNY", dt.date(2025, 11, 14)), ecb_rate("CNY", dt.date(2026, 6, 1))
    assert early.date == dt.date(2025, 11, 14) and early.usd_per_unit != later.usd_per_unit
    assert offer(instance_type="4090x1").current_price_per_gpu_hour_usd == (2 * early.usd_per_unit).quantize(
        Decimal("0.000001")
    )
    assert offer(instance_type="4090x1-later").current_price_per_gpu_hour_usd == (2 * later.usd_per_unit).quantize(
        Decimal("0.000001")
    )


def test_form_factor_words_and_memory_types_state_the_variant(real_catalogue):
    # crusoe_A100-80G-sxm4x8,A100-80GB,8.0,...: "sxm4x8" is eight SXM4 modules.
    price_import_file(path=SKYPILOT / "v8/shadeform/vms.csv", observed_at=WHEN)
    crusoe = offer(provider__slug="shadeform", instance_type="crusoe_A100-80G-sxm4x8", region="culpeper-usa-1")
    assert crusoe.gpu.slug == "a100-sxm4-80-gb" and not crusoe.variant_ambiguous
    # 1x-H100-75-722,H100,...,{'Name': 'NVIDIA-H100-80GB-HBM3', ...}: HBM3 at 80 GB is the SXM5 (the PCIe card is HBM2e).
    price_import_file(path=SKYPILOT / "v8/hyperbolic/vms.csv", observed_at=WHEN)
    hyperbolic = offer(provider__slug="hyperbolic", instance_type="1x-H100-75-722")
    assert hyperbolic.gpu.slug == "h100-sxm5-80-gb" and not hyperbolic.variant_ambiguous
    assert hyperbolic.extra["gpu_link"] == "name, memory type HBM3 stated"
    # jarvislabs 2x_H100_48V_400G,H100,...{'Name': 'H100', ...}: nothing says which H100 80 GB it is.
    price_import_file(path=SKYPILOT / "v8/jarvislabs/vms.csv", observed_at=WHEN)
    jarvis = offer(provider__slug="jarvislabs", instance_type="2x_H100_48V_400G")
    assert jarvis.variant_ambiguous and jarvis.extra["variant_candidates"] == ["h100-pcie-80-gb", "h100-sxm5-80-gb"]


@pytest.mark.urls("tests.urls_prices_admin")
def test_a_curator_maps_an_ambiguous_offer_and_later_snapshots_keep_it(real_catalogue, client):
    from catalog.models import Gpu, OfferGpuMapping
    from catalog.selectors.prices import gpu_rent_prices
    from tests.factories import UserFactory

    path = SKYPILOT / "v8/primeintellect/vms.csv"
    price_import_file(path=path, observed_at=WHEN)
    two = offer(provider__slug="primeintellect", instance_type="datacrunch__2xV100_16GB__10__45", is_spot=False)
    sxm2 = Gpu.objects.get(slug="tesla-v100-sxm2-16-gb")
    assert two.variant_ambiguous
    client.force_login(UserFactory(username="curator", is_staff=True, is_superuser=True))
    done = client.post(
        "/admin/catalog/offer/",
        {
            "action": "map_to_variant",
            "_selected_action": [two.pk],
            "apply": "1",
            "gpu": sxm2.pk,
            "note": "https://example.org/provider-page-saying-sxm2",
        },
    )
    assert done.status_code == 302
    two.refresh_from_db()
    assert two.gpu_id == sxm2.pk and not two.variant_ambiguous
    assert OfferGpuMapping.objects.get().created_by.username == "curator"
    price_import_file(path=path, observed_at=WHEN + dt.timedelta(days=1))
    two.refresh_from_db()
    assert two.gpu_id == sxm2.pk and not two.variant_ambiguous and two.extra["gpu_link"] == "mapped by a curator"
    assert gpu_rent_prices(gpu_ids=[sxm2.pk], rule="cheapest", provider="primeintellect")


def test_vast_two_card_a2000_links_the_6_gb_card_from_the_per_card_memory(real_catalogue):
    # 2x-RTX_A2000-32-65536,RTXA2000,2,32,64.0,"{'Gpus': [{'Name': 'RTXA2000', 'Count': 2,
    # 'MemoryInfo': {'SizeInMiB': 12276}}], 'TotalGpuMemoryInMiB': 12276}",1.33,0.00,...
    # 12,276 MiB is both cards together: read as one card it names the A2000 12 GB.
    price_import_file(path=SKYPILOT / "v8/vast/vms.csv", observed_at=WHEN)
    two = offer(provider__slug="vast", instance_type="2x-RTX_A2000-32-65536")
    assert two.gpu.slug == "rtx-a2000" and two.gpu.memory_gib == 6
    assert two.gpu_memory_gib_raw == pytest.approx(12276 / 1024 / 2, abs=0.01)


@pytest.mark.parametrize("cloud", ["vast", "primeintellect"])
def test_multi_gpu_rows_of_total_memory_clouds_read_memory_per_card_first(real_catalogue, cloud):
    """Every multi-GPU row of a cloud whose GpuInfo memory is the total over the GPUs: the first
    memory reading the parser hands over (the one the linker trusts most) is one card's, and it
    fits the GPU the row links to."""
    parsed = parse_skypilot(path=SKYPILOT / f"v8/{cloud}/vms.csv")
    linker = GpuLinker.load()
    checked = []
    for row in parsed.rows:
        link = linker.link(row)
        if row.gpu_count > 1 and row.memory_candidates and link.gpu_id is not None:
            card = linker.facts[link.gpu_id].memory_gib
            first = row.memory_candidates[0]
            assert card and abs(first - card) / card <= 0.07, (row.instance_type, row.memory_candidates, card)
            checked.append(row.instance_type)
    assert len(checked) > 20
