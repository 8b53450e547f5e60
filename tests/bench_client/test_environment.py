"""Finding the right GPU's telemetry (nvidia-smi path) and the version/identity helpers."""

from __future__ import annotations

import stat
import sys

import pytest
from gpuatlas_bench import environment
from gpuatlas_bench.environment import _pci_key, _uuid_key, telemetry_open

SMI_ROWS = """\
0, NVIDIA H100 80GB HBM3, GPU-aaaaaaaa-0000-0000-0000-000000000000, 00000000:19:00.0, 81559, 580.159.04, 1980, 2619, 1980, 71.25, 700.00, 35
1, NVIDIA H100 80GB HBM3, GPU-bbbbbbbb-1111-1111-1111-111111111111, 00000000:3B:00.0, 81559, 580.159.04, 1755, 2619, 1980, [N/A], 700.00, 61
"""


@pytest.fixture
def fake_smi(tmp_path, monkeypatch):
    """An nvidia-smi on PATH that prints two GPUs (the second one's power draw unreadable)."""
    script = tmp_path / "nvidia-smi"
    script.write_text(
        f"#!{sys.executable}\n"
        "import sys\n"
        f"rows = {SMI_ROWS!r}.splitlines()\n"
        "if '-i' in sys.argv:\n"
        "    rows = [row for row in rows if row.split(',')[0] == sys.argv[sys.argv.index('-i') + 1]]\n"
        "if any(arg.startswith('--query-gpu') for arg in sys.argv):\n"
        "    print('\\n'.join(rows))\n"
        "else:\n"
        "    print('| NVIDIA-SMI 580.159.04   Driver Version: 580.159.04   CUDA Version: 13.0 |')\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    monkeypatch.setitem(sys.modules, "pynvml", None)  # force the nvidia-smi path even where NVML exists
    return script


def test_telemetry_follows_the_uuid_not_the_index(fake_smi):
    # PyTorch's device 0 is nvidia-smi's GPU 1 (CUDA_VISIBLE_DEVICES=1, say).
    telemetry = telemetry_open(torch_index=0, uuid="bbbbbbbb-1111-1111-1111-111111111111", pci_bus_id=None)
    assert telemetry.source == "nvidia-smi"
    static = telemetry.static()
    assert static.uuid == "GPU-bbbbbbbb-1111-1111-1111-111111111111"
    assert static.driver_version == "580.159.04"
    assert static.cuda_driver_version == "13.0"
    assert static.power_limit_w == 700.0 and static.max_sm_mhz == 1980.0
    assert telemetry.sample() == {"sm_mhz": 1755.0, "mem_mhz": 2619.0, "power_draw_w": None, "temperature_c": 61.0}


def test_telemetry_matches_the_pci_bus_id_in_either_spelling(fake_smi):
    telemetry = telemetry_open(torch_index=1, uuid=None, pci_bus_id="0000:19:00.0")
    assert telemetry.static().uuid.startswith("GPU-aaaaaaaa")


def test_no_nvidia_smi_means_no_telemetry(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setitem(sys.modules, "pynvml", None)
    telemetry = telemetry_open(torch_index=0, uuid="x", pci_bus_id=None)
    assert telemetry.source == "none"
    assert telemetry.sample()["sm_mhz"] is None


def test_identity_keys():
    assert _uuid_key("GPU-ABC-1") == _uuid_key("abc-1")
    assert _pci_key("00000000:3B:00.0") == _pci_key("0000:3b:00.0")
    assert _pci_key("00000000:3B:00.0") != _pci_key("00000000:3C:00.0")


def test_cpu_and_memory_are_read():
    assert environment.cpu_model()
    assert environment.ram_gib() > 0
