"""GPU name matching: aliases, vendor prefixes, variant words and memory snapping."""

import pytest

from catalog.matching import GpuMatcher
from tests.factories import GpuAliasFactory, GpuFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def h100_family():
    sxm = GpuFactory(name="H100 SXM5 80 GB", slug="h100-sxm5-80-gb", family="H100", variant="SXM", memory_gib=80)
    pcie = GpuFactory(name="H100 PCIe 80 GB", slug="h100-pcie-80-gb", family="H100", variant="PCIe", memory_gib=80)
    nvl = GpuFactory(name="H100 NVL 94 GB", slug="h100-nvl-94-gb", family="H100", variant="NVL", memory_gib=94)
    GpuAliasFactory(gpu=sxm, alias="H100")
    GpuAliasFactory(gpu=sxm, alias="NVIDIA H100 80GB HBM3")
    GpuAliasFactory(gpu=pcie, alias="NVIDIA H100 PCIe")
    return sxm, pcie, nvl


def test_alias_and_normalisation(h100_family):
    sxm, pcie, _ = h100_family
    matcher = GpuMatcher.load()
    assert matcher.match(name="NVIDIA H100 80GB HBM3").gpu_id == sxm.id
    assert matcher.match(name="nvidia-h100-80gb-hbm3").gpu_id == sxm.id
    assert matcher.match(name="NVIDIA H100 PCIe").gpu_id == pcie.id


def test_ambiguous_name_uses_instance_hints_and_memory(h100_family):
    sxm, pcie, nvl = h100_family
    matcher = GpuMatcher.load()
    assert matcher.match(name="H100").gpu_id == sxm.id
    assert matcher.match(name="H100", hints="gpu_1x_h100_pcie").gpu_id == pcie.id
    # 94 GB reported: snaps to the NVL sibling (within 7%), not the 80 GB SXM.
    result = matcher.match(name="H100", memory_gib=93.0)
    assert result.gpu_id == nvl.id and "memory" in result.how
    # 85 GB is within 7% of 80 GB: stays on the alias target.
    assert matcher.match(name="H100", memory_gib=85.0).gpu_id == sxm.id


def test_vendor_prefix_and_catalogue_name_fallbacks():
    gpu = GpuFactory(name="GeForce RTX 4090", slug="geforce-rtx-4090", family="RTX 4090")
    matcher = GpuMatcher.load()
    assert matcher.match(name="NVIDIA GeForce RTX 4090").gpu_id == gpu.id
    assert matcher.match(name="geforce_rtx_4090").gpu_id == gpu.id


def test_unknown_name_is_unmatched_with_a_reason():
    GpuFactory(name="A100 SXM4 80 GB")
    result = GpuMatcher.load().match(name="Tencent Zixiao C100")
    assert not result.matched and "Tencent Zixiao C100" in result.note


def test_memory_far_from_catalogue_is_a_conflict_naming_the_gpu_of_the_name():
    gpu = GpuFactory(name="L40S", slug="l40s", memory_gib=48)
    result = GpuMatcher.load().match(name="L40S", memory_gib=24)
    # The verdict refuses the match; gpu_id still says what the name alone identifies.
    assert result.status == "conflict" and "disagree" in result.reason
    assert result.gpu_id == gpu.id and "differs" in result.note


def test_laptop_marker_and_cut_names_choose_among_siblings():
    desktop = GpuFactory(name="GeForce RTX 3080", slug="geforce-rtx-3080", memory_gib=10, segment="consumer")
    twelve = GpuFactory(name="GeForce RTX 3080 12 GB", slug="geforce-rtx-3080-12-gb", memory_gib=12)
    mobile = GpuFactory(name="GeForce RTX 3080 Mobile", slug="geforce-rtx-3080-mobile", memory_gib=8)
    GpuFactory(name="GeForce RTX 3080 Max-Q", slug="geforce-rtx-3080-max-q", memory_gib=8)
    matcher = GpuMatcher.load()
    assert matcher.match(name="NVIDIA GeForce RTX 3080").gpu_id == desktop.id
    assert matcher.match(name="NVIDIA GeForce RTX 3080", memory_gib=12.0).gpu_id == twelve.id
    assert matcher.match(name="NVIDIA GeForce RTX 3080 Laptop GPU").gpu_id == mobile.id
    # "Lapt..." is what nvidia-smi leaves of "Laptop GPU".
    assert matcher.match(name="NVIDIA GeForce RTX 3080 Lapt...").gpu_id == mobile.id
    # A cut name that several GPUs start with is not guessed.
    cut = matcher.match(name="NVIDIA GeForce RTX 30...", memory_gib=8.0)
    assert cut.status == "ambiguous" and not cut.matched
    assert {c.slug for c in cut.candidates} == {"geforce-rtx-3080-mobile", "geforce-rtx-3080-max-q"}


def test_bare_name_with_memory_keeps_the_alias_targets_variant():
    sxm40 = GpuFactory(name="A100 SXM4 40 GB", slug="a100-sxm4-40-gb", family="A100", variant="SXM", memory_gib=40)
    GpuFactory(name="A100 PCIe 80 GB", slug="a100-pcie-80-gb", family="A100", variant="PCIe", memory_gib=80)
    sxm80 = GpuFactory(name="A100 SXM4 80 GB", slug="a100-sxm4-80-gb", family="A100", variant="SXM", memory_gib=80)
    GpuAliasFactory(gpu=sxm40, alias="A100")
    matcher = GpuMatcher.load()
    assert matcher.match(name="A100", memory_gib=80).gpu_id == sxm80.id
    assert matcher.match(name="A100").gpu_id == sxm40.id


def test_real_curated_catalogue_imports_without_problems():
    from catalog.services.catalog_import import catalog_import

    summaries = catalog_import()
    assert summaries["curated"].problems == []
    assert summaries["curated"].created + summaries["curated"].updated >= 60
    matcher = GpuMatcher.load()
    for name, slug in [
        ("NVIDIA H100 80GB HBM3", "h100-sxm5-80-gb"),
        ("NVIDIA A100-SXM4-80GB", "a100-sxm4-80-gb"),
        ("Tesla V100-SXM2-32GB", "tesla-v100-sxm2-32-gb"),
        ("NVIDIA GeForce RTX 4090", "geforce-rtx-4090"),
    ]:
        assert matcher.match(name=name).slug == slug, name
