"""Documented instance families, RTX PRO editions, name-memory contradictions and the catalogue
formats of clouds the bundled snapshot lacks (DigitalOcean, Scaleway), on real catalogue rows.

Fixtures: tests/fixtures/prices/ (README.md there names the file, commit and source of each).
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path

import pytest

from catalog.models import Offer
from catalog.services.prices import BUNDLED_PRICES_DIR, price_import_file
from catalog.services.prices.common import OfferRow
from catalog.services.prices.currency import ecb_rate
from catalog.services.prices.families import InstanceFamilyError, instance_families_load
from catalog.services.prices.linking import GpuLinker

pytestmark = pytest.mark.django_db

SKYPILOT = BUNDLED_PRICES_DIR / "skypilot-catalog"
FIXTURES = Path(__file__).parent / "fixtures" / "prices"
WHEN = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)


def offers(**filters) -> list[tuple[str, bool]]:
    return sorted(set(Offer.objects.filter(**filters).values_list("gpu__slug", "variant_ambiguous")))


def test_aws_p_families_rank_as_the_documented_sxm_cards(real_catalogue):
    # p5.48xlarge,H100,8.0,...{'Name': 'H100', ... 'SizeInMiB': 81920}...: AWS documents P5 as H100 SXM.
    assert price_import_file(path=FIXTURES / "aws-p-family/v8/aws/vms.csv", observed_at=WHEN).ok
    assert offers(instance_type="p5.48xlarge") == [("h100-sxm5-80-gb", False)]
    assert offers(instance_type="p4d.24xlarge") == [("a100-sxm4-40-gb", False)]
    assert offers(instance_type="p4de.24xlarge") == [("a100-sxm4-80-gb", False)]
    p5 = Offer.objects.get(instance_type="p5.48xlarge", zone="eun1-az1")
    assert p5.extra["gpu_link"].endswith("(https://aws.amazon.com/ec2/instance-types/p5/)")
    assert p5.current_price_per_gpu_hour_usd == Decimal("7.361600")  # 58.8928 / 8
    assert Offer.objects.current().sku_level().filter(pk=p5.pk).exists()


def test_gcp_a3_and_a2_ultra_rank_as_sxm(real_catalogue):
    assert price_import_file(path=FIXTURES / "gcp-accelerators/v8/gcp/vms.csv", observed_at=WHEN).ok
    assert offers(instance_type="a3-highgpu-8g", price_separable=True) == [("h100-sxm5-80-gb", False)]
    assert offers(instance_type="a3-megagpu-8g") == [("h100-sxm5-80-gb", False)]
    price_import_file(path=SKYPILOT / "v8/gcp/vms.csv", observed_at=WHEN)
    assert offers(instance_type="a2-ultragpu-1g") == [("a100-sxm4-80-gb", False)]
    assert offers(instance_type="a2-highgpu-1g") == [("a100-sxm4-40-gb", False)]


def test_runpod_a100_80gb_without_gpu_info_is_the_pcie_card(real_catalogue):
    # v5: 1x_A100-80GB_COMMUNITY,4.0,80.0,A100-80GB,1.0,A100_80GB,CA,1.69,0.89 (GpuInfo says only A100_80GB)
    price_import_file(path=SKYPILOT / "v5/runpod/vms.csv", observed_at=WHEN)
    assert offers(provider__slug="runpod", gpu_name_raw="A100-80GB") == [("a100-pcie-80-gb", False)]


def test_lambda_a100_instances_follow_lambdas_descriptions(real_catalogue):
    price_import_file(path=SKYPILOT / "v8/lambda/vms.csv", observed_at=WHEN)
    assert offers(provider__slug="lambda", instance_type="gpu_1x_a100") == [("a100-pcie-40-gb", False)]
    assert offers(provider__slug="lambda", instance_type="gpu_8x_a100") == [("a100-sxm4-40-gb", False)]
    assert offers(provider__slug="lambda", instance_type="gpu_1x_a100_sxm4") == [("a100-sxm4-40-gb", False)]
    # Lambda's V100 descriptions name no form factor: still ambiguous.
    assert offers(provider__slug="lambda", instance_type="gpu_8x_v100") == [("tesla-v100-sxm2-16-gb", True)]


def test_rtx_pro_6000_editions_by_suffix(real_catalogue):
    # vast 1x-RTX_PRO_6000_S-32-65536 ("S" = Server Edition); verda RTX-PRO-6000 and jarvislabs
    # RTXPRO6000 (96 GB) do not say which edition: they stay ambiguous.
    price_import_file(path=SKYPILOT / "v8/vast/vms.csv", observed_at=WHEN)
    assert offers(instance_type="1x-RTX_PRO_6000_S-32-65536") == [("rtx-pro-6000-blackwell-server", False)]
    price_import_file(path=SKYPILOT / "v8/verda/vms.csv", observed_at=WHEN)
    assert offers(provider__slug="verda", gpu_name_raw="RTX-PRO-6000") == [("rtx-pro-6000-blackwell", True)]
    linker = GpuLinker.load()
    for name, slug in (
        ("RTXPRO6000S", "rtx-pro-6000-blackwell-server"),
        ("RTXPRO6000-WK", "rtx-pro-6000-blackwell"),
        ("RTXPRO6000WS", "rtx-pro-6000-blackwell"),
    ):
        row = OfferRow(1, "examplecloud", f"1x-{name}", name, 1, Decimal("1"), memory_candidates=(96.0,))
        link = linker.link(row)
        assert (linker.facts[link.gpu_id].slug, link.ambiguous) == (slug, False), name
    plain = linker.link(
        OfferRow(1, "examplecloud", "x", "RTX PRO 6000 96GB", 1, Decimal("1"), memory_candidates=(96.0,))
    )
    assert plain.ambiguous


def test_a_stated_nvl_with_80_gb_is_flagged_not_matched(real_catalogue):
    # The H100 NVL has 94 GB; an "H100_NVL" row reporting 80 GB contradicts itself.
    linker = GpuLinker.load()
    row = OfferRow(1, "vast", "1x-H100_NVL-32-65536", "H100 NVL", 1, Decimal("2"), memory_candidates=(80.0,))
    link = linker.link(row)
    assert link.ambiguous and "h100-nvl-94-gb" in link.candidates and link.memory_mismatch
    right = linker.link(
        OfferRow(1, "vast", "1x-H100_NVL-32-65536", "H100 NVL", 1, Decimal("2"), memory_candidates=(93.6,))
    )
    assert not right.ambiguous and linker.facts[right.gpu_id].slug == "h100-nvl-94-gb"


def test_a_family_rule_the_row_contradicts_is_flagged(real_catalogue):
    linker = GpuLinker.load()
    # A p4de row (documented 80 GB) that reports 40 GB: flagged, kept out of rankings.
    row = OfferRow(1, "aws", "p4de.24xlarge", "A100", 8, Decimal("30"), memory_candidates=(40.0,))
    link = linker.link(row)
    assert link.ambiguous and "40 GiB" in link.memory_mismatch and link.how.startswith("contradicts")


def test_every_family_rule_names_a_catalogue_gpu_and_an_https_source(real_catalogue):
    from catalog.models import Gpu

    families = instance_families_load()
    assert len(families) >= 30
    slugs = set(Gpu.objects.values_list("slug", flat=True))
    assert {f.gpu for f in families} <= slugs
    assert all(f.source.startswith("https://") for f in families)


def test_a_malformed_family_file_names_the_rule(tmp_path):
    bad = tmp_path / "families.toml"
    bad.write_text('[[family]]\nproviders = ["aws"]\ninstance = "p5("\ngpu = "x"\nsource = "https://a"\n')
    with pytest.raises(InstanceFamilyError, match="family #1: instance is not a valid regular expression"):
        instance_families_load.__wrapped__(path=bad)


def test_digitalocean_lower_case_gpu_info_and_a_total_memory_in_the_name(real_catalogue):
    # gpu-h100x8-640gb,H100,8,...,"{'gpus': [{'name': 'h100', ..., 'memoryinfo': {'sizeinmib': 81559}}], ...}"
    summary = price_import_file(path=FIXTURES / "do/v6/do/vms.csv", observed_at=WHEN)
    assert summary.ok and summary.memory_mismatches == {}
    eight = Offer.objects.get(provider__slug="digitalocean", instance_type="gpu-h100x8-640gb")
    assert eight.gpu_memory_gib_raw == 80 and eight.gpu.family == "H100"
    assert eight.current_price_per_gpu_hour_usd == Decimal("5.950000")  # 47.60 / 8
    # DigitalOcean's rows do not say SXM or PCIe: ambiguous, not guessed.
    assert eight.variant_ambiguous


def test_scaleway_prices_are_euros_converted_at_the_ecb_rate(real_catalogue):
    # fr-par-2,H100-1-80G,24,240,H100,1,"{'Gpus': [{'Name': 'NVIDIA H100 PCIe', ...}]}",fr-par,2.52,
    assert price_import_file(path=FIXTURES / "scaleway/v6/scaleway/vms.csv", observed_at=WHEN).ok
    h100 = Offer.objects.get(provider__slug="scaleway", instance_type="H100-1-80G")
    assert (h100.current_price_per_hour, h100.current_currency) == (Decimal("2.520000"), "EUR")
    rate = ecb_rate("EUR", WHEN.date())
    assert h100.current_price_per_gpu_hour_usd == (Decimal("2.52") * rate.usd_per_unit).quantize(Decimal("0.000001"))
    assert h100.gpu.slug == "h100-pcie-80-gb" and h100.provider.default_currency == "EUR"


def test_marketplace_listings_at_different_prices_are_two_offers(real_catalogue, tmp_path):
    # Two real vast lines with the same instance type and region; the second one's price is that
    # of another listing (vast lists each host separately).
    lines = (SKYPILOT / "v8/vast/vms.csv").read_text(encoding="utf-8").splitlines()
    header, row = lines[0], lines[2]  # 2x-H200-32-65536 ... 5.18,0.00,"Michigan, US, NA"
    other = row.replace(",5.18,", ",5.04,")
    path = tmp_path / "v8" / "vast" / "vms.csv"
    path.parent.mkdir(parents=True)
    for order in ((row, other), (other, row)):
        Offer.objects.all().delete()
        path.write_text("\n".join((header, *order)) + "\n", encoding="utf-8")
        summary = price_import_file(path=path, observed_at=WHEN)
        assert summary.ok and summary.rejected == []
        listed = dict(Offer.objects.values_list("instance_type", "current_price_per_hour"))
        assert listed == {
            "2x-H200-32-65536": Decimal("5.040000"),
            "2x-H200-32-65536 · listing 2": Decimal("5.180000"),
        }


@pytest.mark.parametrize(
    ("provider", "instance", "slug"),
    [
        ("aws", "p5.48xlarge", "h100-sxm5-80-gb"),
        ("aws", "p5e.48xlarge", "h200-sxm-141-gb"),
        ("aws", "p5en.48xlarge", "h200-sxm-141-gb"),
        ("aws", "p4de.24xlarge · 8x A100 (80 GB)", "a100-sxm4-80-gb"),  # FSDL's label
        ("gcp", "a3-edgegpu-8g", "h100-sxm5-80-gb"),
        ("gcp", "a2-megagpu-16g", "a100-sxm4-40-gb"),
        ("azure", "Standard_ND96isr_H100_v5", "h100-sxm5-80-gb"),
        ("azure", "Standard_ND96amsr_A100_v4", "a100-sxm4-80-gb"),
        ("azure", "ND96amsr A100 v4", "a100-sxm4-80-gb"),  # FSDL's spelling
        ("azure", "Standard_ND96asr_v4", "a100-sxm4-40-gb"),
        ("azure", "Standard_NC24ads_A100_v4", "a100-pcie-80-gb"),
        ("oci", "BM.GPU.H100.8", "h100-sxm5-80-gb"),
        ("oci", "BM.GPU.A100-v2.8", "a100-sxm4-80-gb"),
        ("runpod", "8x_A100-80GB-SXM_SECURE", "a100-sxm4-80-gb"),
        ("runpod", "1x_A100-80GB_COMMUNITY", "a100-pcie-80-gb"),
    ],
)
def test_family_patterns_cover_the_providers_instance_names(provider, instance, slug):
    from catalog.services.prices.families import instance_family_for

    found = instance_family_for(provider=provider, instance_type=instance, families=instance_families_load())
    assert found is not None and found.gpu == slug


@pytest.mark.parametrize(
    ("provider", "instance"),
    [
        ("aws", "p4.24xlarge"),
        ("aws", "g5g.xlarge"),
        ("gcp", "n1-highmem-8"),
        ("lambda", "gpu_8x_v100"),
        ("vast", "p5.48xlarge"),
    ],
)
def test_undocumented_instance_names_have_no_family(provider, instance):
    from catalog.services.prices.families import instance_family_for

    found = instance_family_for(provider=provider, instance_type=instance, families=instance_families_load())
    assert found is None
