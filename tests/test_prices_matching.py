"""GPU names in price files: PCIe/SXM disambiguation, memory snap, unmatched names and their mapping."""

from __future__ import annotations

import datetime as dt

import pytest
from django.core.management import call_command

from catalog.models import GpuAlias, Offer, UnmatchedGpuName
from catalog.services.prices import price_import_file, unmatched_gpu_name_resolve
from catalog.services.prices.linking import bare_model_name
from tests.factories import UserFactory, write_catalogue_file
from tests.world import PRICE_WORLD, world_build

pytestmark = pytest.mark.django_db

WHEN = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
HEADER = "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price,Region,SpotPrice\n"


def info(name, mib, count=1):
    return f"\"{{'Gpus': [{{'Name': '{name}', 'Manufacturer': null, 'Count': {count}, 'MemoryInfo': {{'SizeInMiB': {mib}}}}}], 'TotalGpuMemoryInMiB': {mib}}}\""


def test_h100_pcie_and_sxm_are_told_apart_by_instance_type(tmp_path):
    catalogue = world_build(rows=PRICE_WORLD)
    path = write_catalogue_file(
        tmp_path,
        "lambda",
        HEADER
        + f"gpu_1x_h100_pcie,H100,1,26,225,{info('H100', 81920)},2.49,us-east-1,\n"
        + f"gpu_8x_h100_sxm5,H100,8,208,1800,{info('H100', 81920, 8)},23.92,us-east-1,\n"
        + f"gpu_1x_h100_nvl,H100,1,26,225,{info('H100', 95830)},2.99,us-east-1,\n",
    )
    price_import_file(path=path, observed_at=WHEN)
    gpus = dict(Offer.objects.values_list("instance_type", "gpu_id"))
    assert gpus["gpu_1x_h100_pcie"] == catalogue.gpus["h100_pcie"].id
    assert gpus["gpu_8x_h100_sxm5"] == catalogue.gpus["h100_sxm"].id
    # No variant word, 93.6 GiB reported: snaps to the 94 GB NVL within 7%.
    assert gpus["gpu_1x_h100_nvl"] == catalogue.gpus["h100_nvl"].id


def test_memory_snap_picks_the_a100_size(tmp_path):
    catalogue = world_build(rows=PRICE_WORLD)
    path = write_catalogue_file(
        tmp_path,
        "cudo",
        HEADER
        + f"a100-40,A100,1,8,64,{info('A100', 40960)},1.10,ca-1,\n"
        + f"a100-80,A100,1,8,64,{info('A100', 81920)},1.50,ca-1,\n"
        + f"a100-80-pcie,A100-80G-PCIe,1,8,64,{info('A100-80G-PCIe', 81920)},1.35,ca-1,\n",
    )
    price_import_file(path=path, observed_at=WHEN)
    gpus = dict(Offer.objects.values_list("instance_type", "gpu_id"))
    assert gpus["a100-40"] == catalogue.gpus["a100_sxm_40"].id  # no 40 GB sibling of another form factor here
    # "A100" with 80 GiB and no SXM/PCIe word: the SXM4 80 GB or the PCIe 80 GB; kept as the
    # alias target's form factor but marked ambiguous (out of rankings until a curator maps it).
    ambiguous = Offer.objects.get(instance_type="a100-80")
    assert ambiguous.gpu_id == catalogue.gpus["a100_sxm_80"].id and ambiguous.variant_ambiguous
    assert ambiguous.extra["variant_candidates"] == ["a100-pcie-80-gb", "a100-sxm4-80-gb"]
    # No alias for "A100-80G-PCIe": retried as the bare model with the PCIe hint and 80 GiB.
    assert gpus["a100-80-pcie"] == catalogue.gpus["a100_pcie_80"].id


def test_bare_model_retry_never_strips_a_meaningful_suffix():
    assert bare_model_name("A100-80G-PCIe") == "A100"
    assert bare_model_name("H100-80G-PCIe-NVLink") == "H100"
    assert bare_model_name("NVIDIA-H100-80GB-HBM3") == "H100"
    assert bare_model_name("A100 (80 GB)") == "A100"
    assert bare_model_name("RTX6000-Ada") is None
    assert bare_model_name("RTX-PRO-6000") is None
    assert bare_model_name("H100") is None


def test_unmatched_names_are_recorded_kept_and_listed(tmp_path):
    world_build(rows=PRICE_WORLD)
    path = write_catalogue_file(
        tmp_path,
        "vast",
        HEADER
        + f'1x-RTX5090,RTX5090,1,16,64,{info("RTX5090", 32607)},0.45,"Texas, US, NA",\n'
        + f'2x-RTX5090,RTX5090,2,32,128,{info("RTX5090", 65214, 2)},0.90,"Texas, US, NA",\n'
        + f'1x-RTX4090,RTX4090,1,16,64,{info("RTX4090", 24564)},0.35,"Texas, US, NA",\n',
    )
    summary = price_import_file(path=path, observed_at=WHEN)
    assert summary.unmatched == {"RTX5090": 2}
    offers = Offer.objects.filter(gpu_name_raw="RTX5090")
    assert offers.count() == 2 and all(o.gpu_id is None for o in offers)
    unmatched = UnmatchedGpuName.objects.get()
    assert (unmatched.name, unmatched.occurrences, unmatched.context) == (
        "RTX5090",
        2,
        "skypilot-catalog/vast/vms.csv",
    )
    assert unmatched.memory_gib == pytest.approx(31.84, abs=0.01)
    # Unmatched offers never appear among current prices.
    assert not Offer.objects.current().filter(gpu_name_raw="RTX5090").exists()


def test_command_lists_unmatched_names(tmp_path, capsys):
    world_build(rows=PRICE_WORLD)
    path = write_catalogue_file(tmp_path, "vast", HEADER + f"1x-B300,B300,1,16,64,{info('B300', 274400)},4.00,EU,\n")
    call_command("import_prices", str(path), "--observed-at", "2026-01-01")
    out = capsys.readouterr().out
    assert "1 GPU name(s) not matched" in out and "B300: 1 offer(s)" in out


def test_mapping_an_unmatched_name_creates_the_alias_and_relinks_offers(tmp_path):
    catalogue = world_build(rows=PRICE_WORLD)
    body = HEADER + f"1x-RTX5090,RTX5090,1,16,64,{info('RTX5090', 32607)},0.45,EU,\n"
    path = write_catalogue_file(tmp_path, "vast", body)
    price_import_file(path=path, observed_at=WHEN)
    unmatched = UnmatchedGpuName.objects.get()
    relinked = unmatched_gpu_name_resolve(unmatched=unmatched, gpu=catalogue.gpus["rtx4090"])
    assert relinked == 1
    assert Offer.objects.get().gpu_id == catalogue.gpus["rtx4090"].id
    alias = GpuAlias.objects.get(normalised="rtx5090")
    assert alias.gpu_id == catalogue.gpus["rtx4090"].id and alias.origin == GpuAlias.Origin.CURATOR
    unmatched.refresh_from_db()
    assert unmatched.resolved_to_id == catalogue.gpus["rtx4090"].id
    # The next import matches through the alias.
    later = price_import_file(path=path, observed_at=WHEN + dt.timedelta(days=1))
    assert later.unmatched == {}


@pytest.mark.urls("tests.urls_prices_admin")
def test_admin_action_maps_names_and_relinks_offers(client, tmp_path):
    catalogue = world_build(rows=PRICE_WORLD)
    path = write_catalogue_file(
        tmp_path,
        "vast",
        HEADER + f"1x-C100-80GB-x,Tencent Zixiao C100,1,16,64,{info('x', 81920)},2.00,EU,\n",
    )
    price_import_file(path=path, observed_at=WHEN)
    unmatched = UnmatchedGpuName.objects.get()
    admin = UserFactory(username="curator", is_staff=True, is_superuser=True)
    client.force_login(admin)
    url = "/admin/catalog/unmatchedgpuname/"
    confirm = client.post(url, {"action": "map_to_gpu", "_selected_action": [unmatched.pk]})
    assert confirm.status_code == 200 and b"Map and relink" in confirm.content
    done = client.post(
        url,
        {
            "action": "map_to_gpu",
            "_selected_action": [unmatched.pk],
            "apply": "1",
            "gpu": catalogue.gpus["h100_sxm"].pk,
        },
    )
    assert done.status_code == 302
    assert Offer.objects.get().gpu_id == catalogue.gpus["h100_sxm"].id
    assert GpuAlias.objects.filter(alias="Tencent Zixiao C100", gpu=catalogue.gpus["h100_sxm"]).exists()


def test_vast_folded_names_come_from_the_instance_type_and_memory_mismatch_is_flagged(tmp_path):
    catalogue = world_build(rows=PRICE_WORLD)
    path = write_catalogue_file(
        tmp_path,
        "vast",
        HEADER
        + f'1x-RTX_4060_Ti-32-65536,RTX4060,1,32,64,{info("RTX4060", 16380)},0.13,"London, GB, EU",\n'
        + f'1x-RTX_4090-32-65536,RTX4090,1,32,64,{info("RTX4090", 49140)},0.40,"Hong Kong, HK, AS",\n',
    )
    summary = price_import_file(path=path, observed_at=WHEN)
    ti = Offer.objects.get(instance_type="1x-RTX_4060_Ti-32-65536")
    # SkyPilot folded the 4060 Ti into "RTX4060": we keep vast's own name and never guess.
    assert ti.gpu_name_raw == "RTX 4060 Ti" and ti.gpu_id is None and ti.extra["accelerator_name"] == "RTX4060"
    assert summary.unmatched == {"RTX 4060 Ti": 1}
    modded = Offer.objects.get(instance_type="1x-RTX_4090-32-65536")
    assert modded.gpu_id == catalogue.gpus["rtx4090"].id
    assert modded.extra["memory_mismatch"] == "reported 47.99 GiB per GPU, catalogue 24 GiB"
    assert "RTX 4090" in summary.memory_mismatches
