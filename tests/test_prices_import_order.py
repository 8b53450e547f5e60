"""The last import defects, each on the real catalogue rows that showed them, and import order.

* SimplePod (SkyPilot catalogs/v7/simplepod/vms.csv, bundled): five machines listed twice in one
  region at two prices were rejected as duplicates; they are hosts' listings, each an offer.
* Spheron (SkyPilot catalogs/v8/spheron/vms.csv, bundled sample): ``*_BAREMETAL`` names matched
  no GPU; ``gpu_1x_DGX_A100`` (a DGX, so SXM4 modules) listed as ``A100_80G_PCIE`` was stored as
  the PCIe card.
* RunPod (the bundled v8 file and two overlapping snapshots cut from it): ``unavailable_since``
  depended on the order the snapshots were imported in. No field of any offer may.
"""

from __future__ import annotations

import datetime as dt
import itertools
from decimal import Decimal
from pathlib import Path

import pytest
from django.forms.models import model_to_dict

from catalog.models import GpuPrice, ImportRun, Offer, PriceObservation, PriceSnapshot
from catalog.services.prices import BUNDLED_PRICES_DIR, price_import_file

pytestmark = pytest.mark.django_db

SKYPILOT = BUNDLED_PRICES_DIR / "skypilot-catalog"
WHEN = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
T1, T2, T3 = (dt.datetime(2026, 11, day, tzinfo=dt.UTC) for day in (1, 10, 20))


def test_simplepod_machines_listed_twice_in_a_region_are_two_listings_not_duplicates(real_catalogue):
    # gpu_4x_rtx4090_128,RTX4090,4,128,512,1.280,Europe-PL,...  and the same row at 1.360
    summary = price_import_file(path=SKYPILOT / "v7/simplepod/vms.csv", observed_at=WHEN)
    assert summary.ok and summary.rows_read == 52 and summary.rejected == [] and summary.skipped == {}
    assert Offer.objects.filter(provider__slug="simplepod").count() == 52
    pair = Offer.objects.filter(provider__slug="simplepod", instance_type__startswith="gpu_4x_rtx4090_128")
    assert sorted(pair.values_list("instance_type", "current_price_per_hour")) == [
        ("gpu_4x_rtx4090_128", Decimal("1.280000")),
        ("gpu_4x_rtx4090_128 · listing 2", Decimal("1.360000")),
    ]
    assert set(pair.values_list("gpu__slug", flat=True)) == {"geforce-rtx-4090"}
    listed_twice = Offer.objects.filter(provider__slug="simplepod", instance_type__endswith="listing 2")
    assert sorted(listed_twice.values_list("instance_type", flat=True)) == [
        "gpu_4x_rtx4090_128 · listing 2",
        "gpu_5x_rtx4090_160 · listing 2",
        "gpu_6x_rtx4090_192 · listing 2",
        "gpu_8x_rtx4090_256 · listing 2",
        "gpu_8x_rtx5090_256 · listing 2",
    ]


def test_spheron_bare_metal_names_are_the_gpu_they_name(real_catalogue):
    # H100_668d...9468_dallas-usa-1,H100_PCIE_BAREMETAL,1.0,16.0,192.0,2.6268,dallas-usa-1,...
    summary = price_import_file(path=SKYPILOT / "v8/spheron/vms.csv", observed_at=WHEN)
    assert summary.ok and summary.rejected == []
    assert not any("BAREMETAL" in name for name in summary.unmatched)
    bare = {
        o.instance_type: o.gpu.slug
        for o in Offer.objects.filter(gpu_name_raw__endswith="_BAREMETAL").select_related("gpu")
    }
    assert bare == {
        "H100_668d6762247d03149a4c9468_dallas-usa-1": "h100-pcie-80-gb",
        "RTX5090x8_67884c00280fba46a71e23eb_casper-usa-1": "geforce-rtx-5090",
        "L40Sx8_67884c00280fba46a71e23ed_raleigh-usa-1": "l40s",
    }
    dallas = Offer.objects.get(instance_type="H100_668d6762247d03149a4c9468_dallas-usa-1")
    assert dallas.extra["upstream_provider"] == "sesterce" and not dallas.variant_ambiguous


def test_a_spheron_dgx_a100_listed_as_pcie_is_flagged_not_stored_as_the_pcie_card(real_catalogue):
    # gpu_1x_DGX_A100_us-central-2,A100_80G_PCIE,1.0,16.0,120.0,1.104,us-central-2,...,massed-compute
    price_import_file(path=SKYPILOT / "v8/spheron/vms.csv", observed_at=WHEN)
    dgx = Offer.objects.get(instance_type="gpu_1x_DGX_A100_us-central-2")
    assert dgx.variant_ambiguous
    assert "a100-sxm4-80-gb" in dgx.extra["variant_candidates"]
    assert "several form factors" in dgx.extra["memory_mismatch"]
    assert not Offer.objects.current().sku_level().filter(pk=dgx.pk).exists()
    # The same file's plain PCIe rows stay the PCIe card.
    plain = Offer.objects.get(instance_type="n3-A100x1__CANADA-1", is_spot=False)
    assert plain.gpu.slug == "a100-pcie-80-gb" and not plain.variant_ambiguous


def _runpod_snapshots(directory: Path) -> list[tuple[Path, dt.datetime]]:
    """The bundled RunPod file, then two newer snapshots cut from it that overlap: the first
    without its last 20 rows, the second without its first 20, neither with rows 40 to 49."""
    header, *rows = (SKYPILOT / "v8/runpod/vms.csv").read_text(encoding="utf-8").splitlines()
    kept = rows[:40] + rows[50:]
    files = []
    for name, body, when in (("full", rows, T1), ("head", kept[:-20], T2), ("tail", kept[20:], T3)):
        path = directory / name / "v8" / "runpod" / "vms.csv"
        path.parent.mkdir(parents=True)
        path.write_text("\n".join((header, *body)) + "\n", encoding="utf-8")
        files.append((path, when))
    return files


def _every_field() -> dict[tuple, dict]:
    """Every stored field of every offer (without its id), its price history and its derived prices."""
    history: dict[int, list[tuple]] = {}
    for offer_id, at, price in PriceObservation.objects.order_by("offer_id", "observed_at").values_list(
        "offer_id", "observed_at", "price_per_hour"
    ):
        history.setdefault(offer_id, []).append((at, price))
    state = {}
    for offer in Offer.objects.select_related("provider"):
        fields = model_to_dict(offer, exclude=["id", "provider", "gpu"])
        fields["gpu"] = offer.gpu.slug if offer.gpu else None
        fields["history"] = history.get(offer.pk, [])
        state[(offer.provider.slug, offer.instance_type, offer.region, offer.zone, offer.is_spot)] = fields
    for price in GpuPrice.objects.select_related("gpu"):
        # Offer ids (and the digest that hashes them) depend on the order rows were created in.
        values = model_to_dict(price, exclude=["id", "gpu", "offer", "digest", "derived_at", "contributors"])
        values["contributors"] = [{k: v for k, v in c.items() if k != "offer"} for c in price.contributors]
        state[("price", price.gpu.slug, price.rule, price.gpu_count)] = values
    return state


def test_import_order_changes_no_field_of_any_offer(real_catalogue, tmp_path):
    """RunPod's file and two overlapping newer snapshots, in every order: the same offers to the
    last field (unavailable_since among them: an offer missing from both newer snapshots is
    unavailable since the first of them, whichever was imported first), the same histories and
    the same derived prices."""
    files = _runpod_snapshots(tmp_path)
    seen = []
    for order in itertools.permutations(files):
        for model in (Offer, PriceSnapshot, ImportRun, GpuPrice):
            model.objects.all().delete()
        for path, when in order:
            assert price_import_file(path=path, observed_at=when).ok
        seen.append(_every_field())
    for state in seen[1:]:
        differing = {
            k: (seen[0].get(k), state.get(k)) for k in seen[0].keys() | state.keys() if seen[0].get(k) != state.get(k)
        }
        assert differing == {}
    withdrawn = Offer.objects.filter(available=False)
    # Rows 40-49 are in neither newer snapshot: gone since the first of them. The first 20 rows,
    # in the T2 snapshot only, are gone since T3.
    assert sorted({(o.last_seen, o.unavailable_since) for o in withdrawn}) == [(T1, T2), (T2, T3)]
    # Each row is an on-demand and a spot offer.
    assert withdrawn.filter(last_seen=T1).count() == 20 and withdrawn.filter(last_seen=T2).count() == 40
