"""A small GPU catalogue with the aliases cloud catalogues use, and helpers to write price files.

Until the curated catalogue lands, price tests build their GPUs here (names and memory sizes
are the real products'; no prices are invented: price figures in tests are test inputs).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from catalog.models import Gpu
from tests.factories import GpuAliasFactory, GpuFactory


@dataclass
class Catalogue:
    h100_sxm: Gpu
    h100_pcie: Gpu
    h100_nvl: Gpu
    a100_sxm_40: Gpu
    a100_sxm_80: Gpu
    a100_pcie_80: Gpu
    h200: Gpu
    rtx4090: Gpu


def catalogue_build() -> Catalogue:
    h100_sxm = GpuFactory(name="H100 SXM5 80 GB", slug="h100-sxm5-80-gb", family="H100", variant="SXM", memory_gib=80)
    h100_pcie = GpuFactory(name="H100 PCIe 80 GB", slug="h100-pcie-80-gb", family="H100", variant="PCIe", memory_gib=80)
    h100_nvl = GpuFactory(name="H100 NVL 94 GB", slug="h100-nvl-94-gb", family="H100", variant="NVL", memory_gib=94)
    a100_sxm_40 = GpuFactory(
        name="A100 SXM4 40 GB", slug="a100-sxm4-40-gb", family="A100", variant="SXM", memory_gib=40
    )
    a100_sxm_80 = GpuFactory(
        name="A100 SXM4 80 GB", slug="a100-sxm4-80-gb", family="A100", variant="SXM", memory_gib=80
    )
    a100_pcie_80 = GpuFactory(
        name="A100 PCIe 80 GB", slug="a100-pcie-80-gb", family="A100", variant="PCIe", memory_gib=80
    )
    h200 = GpuFactory(name="H200 SXM 141 GB", slug="h200-sxm-141-gb", family="H200", variant="SXM", memory_gib=141)
    rtx4090 = GpuFactory(
        name="GeForce RTX 4090", slug="geforce-rtx-4090", family="RTX 4090", memory_gib=24, segment="consumer"
    )
    for gpu, alias in (
        (h100_sxm, "H100"),
        (h100_sxm, "H100-SXM"),
        (a100_sxm_40, "A100"),
        (a100_sxm_80, "A100-80GB"),
        (h200, "H200"),
        (rtx4090, "RTX4090"),
    ):
        GpuAliasFactory(gpu=gpu, alias=alias)
    return Catalogue(h100_sxm, h100_pcie, h100_nvl, a100_sxm_40, a100_sxm_80, a100_pcie_80, h200, rtx4090)


def write_catalogue_file(root: Path, cloud: str, text: str, *, version: str = "v8") -> Path:
    """Write ``text`` as ``<root>/<version>/<cloud>/vms.csv`` (the feed key comes from that path)."""
    path = root / version / cloud / "vms.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path
