"""What the run ran on: GPU identity, software stack, clocks, power and temperature.

Telemetry comes from NVML through nvidia-ml-py when it is installed, else from ``nvidia-smi``, else it
is recorded as unavailable (null fields, ``telemetry_source: none``). Every reading is best effort: a
value the driver refuses (power draw inside some VMs, say) becomes null instead of failing the run.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib.metadata
import os
import platform
import re
import shutil
import subprocess
from dataclasses import dataclass
from typing import Any

_SMI_FIELDS = (
    "index",
    "name",
    "uuid",
    "pci.bus_id",
    "memory.total",
    "driver_version",
    "clocks.sm",
    "clocks.mem",
    "clocks.max.sm",
    "power.draw",
    "power.limit",
    "temperature.gpu",
)


def _uuid_key(value: str | None) -> str | None:
    """NVML writes 'GPU-xxxxxxxx-...', PyTorch 'xxxxxxxx-...': compare without the prefix."""
    if not value:
        return None
    value = value.strip().lower()
    for prefix in ("gpu-", "mig-"):
        if value.startswith(prefix):
            value = value[len(prefix) :]
    return value


def _pci_key(value: str | None) -> str | None:
    """'00000000:19:00.0' and '0000:19:00.0' name the same bus id."""
    if not value:
        return None
    match = re.fullmatch(r"([0-9a-fA-F]+):([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\.([0-9a-fA-F])", value.strip())
    if not match:
        return value.strip().lower()
    domain, bus, device, function = match.groups()
    return f"{int(domain, 16):08x}:{bus.lower()}:{device.lower()}.{function}"


def _number(value: Any) -> float | None:
    if value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if number == number and abs(number) != float("inf") else None


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    value = str(value).strip()
    return value[:200] or None


@dataclass
class GpuStatic:
    name: str | None = None
    uuid: str | None = None
    pci_bus_id: str | None = None
    memory_total_mib: int | None = None
    driver_version: str | None = None
    cuda_driver_version: str | None = None
    power_limit_w: float | None = None
    max_sm_mhz: float | None = None


class Telemetry:
    """Reads one GPU's clocks, power and temperature. ``source`` says how ('none' reads nothing)."""

    source = "none"

    def static(self) -> GpuStatic:
        return GpuStatic()

    def sample(self) -> dict[str, float | None]:
        return {"sm_mhz": None, "mem_mhz": None, "power_draw_w": None, "temperature_c": None}

    def energy_mj(self) -> float | None:
        """The GPU's energy counter since the driver loaded, in mJ; None where it cannot be read."""
        return None

    def power_w(self) -> float | None:
        """The GPU's power reading in W, cheap enough to take while work runs; None where there is none."""
        return None

    def close(self) -> None:
        return None


class NvmlTelemetry(Telemetry):
    source = "nvml"

    def __init__(self, pynvml: Any, handle: Any) -> None:
        self._nvml = pynvml
        self._handle = handle

    def _call(self, name: str, *args: Any) -> Any:
        try:
            return getattr(self._nvml, name)(*args)
        except Exception:  # noqa: BLE001 - any NVML refusal means 'not available here'
            return None

    def static(self) -> GpuStatic:
        nvml, handle = self._nvml, self._handle
        memory = self._call("nvmlDeviceGetMemoryInfo", handle)
        pci = self._call("nvmlDeviceGetPciInfo", handle)
        cuda_driver = self._call("nvmlSystemGetCudaDriverVersion")
        limit_mw = self._call("nvmlDeviceGetEnforcedPowerLimit", handle)
        return GpuStatic(
            name=_text(self._call("nvmlDeviceGetName", handle)),
            uuid=_text(self._call("nvmlDeviceGetUUID", handle)),
            pci_bus_id=_text(getattr(pci, "busId", None)) if pci is not None else None,
            memory_total_mib=int(memory.total // (1024 * 1024)) if memory is not None else None,
            driver_version=_text(self._call("nvmlSystemGetDriverVersion")),
            cuda_driver_version=(f"{cuda_driver // 1000}.{(cuda_driver % 1000) // 10}" if cuda_driver else None),
            power_limit_w=limit_mw / 1000.0 if limit_mw else None,
            max_sm_mhz=_number(self._call("nvmlDeviceGetMaxClockInfo", handle, nvml.NVML_CLOCK_SM)),
        )

    def sample(self) -> dict[str, float | None]:
        nvml, handle = self._nvml, self._handle
        power_mw = self._call("nvmlDeviceGetPowerUsage", handle)
        return {
            "sm_mhz": _number(self._call("nvmlDeviceGetClockInfo", handle, nvml.NVML_CLOCK_SM)),
            "mem_mhz": _number(self._call("nvmlDeviceGetClockInfo", handle, nvml.NVML_CLOCK_MEM)),
            "power_draw_w": power_mw / 1000.0 if power_mw is not None else None,
            "temperature_c": _number(self._call("nvmlDeviceGetTemperature", handle, nvml.NVML_TEMPERATURE_GPU)),
        }

    def energy_mj(self) -> float | None:
        return _number(self._call("nvmlDeviceGetTotalEnergyConsumption", self._handle))

    def power_w(self) -> float | None:
        power_mw = _number(self._call("nvmlDeviceGetPowerUsage", self._handle))
        return power_mw / 1000.0 if power_mw is not None else None

    def close(self) -> None:
        self._call("nvmlShutdown")


class SmiTelemetry(Telemetry):
    source = "nvidia-smi"

    def __init__(self, executable: str, smi_index: str) -> None:
        self._executable = executable
        self._index = smi_index

    def _row(self) -> dict[str, str | None]:
        rows = _smi_query(self._executable, index=self._index)
        return rows[0] if rows else {}

    def static(self) -> GpuStatic:
        row = self._row()
        memory = _number(row.get("memory.total"))
        return GpuStatic(
            name=_text(row.get("name")),
            uuid=_text(row.get("uuid")),
            pci_bus_id=_text(row.get("pci.bus_id")),
            memory_total_mib=int(memory) if memory is not None else None,
            driver_version=_text(row.get("driver_version")),
            cuda_driver_version=_smi_cuda_version(self._executable),
            power_limit_w=_number(row.get("power.limit")),
            max_sm_mhz=_number(row.get("clocks.max.sm")),
        )

    def sample(self) -> dict[str, float | None]:
        row = self._row()
        return {
            "sm_mhz": _number(row.get("clocks.sm")),
            "mem_mhz": _number(row.get("clocks.mem")),
            "power_draw_w": _number(row.get("power.draw")),
            "temperature_c": _number(row.get("temperature.gpu")),
        }


def _smi_query(executable: str, *, index: str | None = None) -> list[dict[str, str | None]]:
    command = [executable, f"--query-gpu={','.join(_SMI_FIELDS)}", "--format=csv,noheader,nounits"]
    if index is not None:
        command += ["-i", index]
    try:
        output = subprocess.run(command, capture_output=True, text=True, timeout=20, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    rows = []
    for line in output.splitlines():
        cells = [cell.strip() for cell in line.split(",")]
        if len(cells) != len(_SMI_FIELDS):
            continue
        rows.append(
            {
                key: (None if cell in {"", "N/A", "[N/A]", "[Not Supported]", "Not Supported"} else cell)
                for key, cell in zip(_SMI_FIELDS, cells, strict=True)
            }
        )
    return rows


def _smi_cuda_version(executable: str) -> str | None:
    try:
        output = subprocess.run([executable], capture_output=True, text=True, timeout=20, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.search(r"CUDA Version:\s*([0-9]+\.[0-9]+)", output)
    return match.group(1) if match else None


def telemetry_open(*, torch_index: int, uuid: str | None, pci_bus_id: str | None) -> Telemetry:
    """Find the NVML / nvidia-smi device that is PyTorch's ``torch_index``.

    PyTorch and NVML may number GPUs differently (CUDA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER), so the
    device is matched by UUID, then PCI bus id, and by index only as a last resort.
    """
    try:
        import pynvml  # nvidia-ml-py

        pynvml.nvmlInit()
    except Exception:  # noqa: BLE001 - not installed, or no driver: fall through to nvidia-smi
        pynvml = None
    if pynvml is not None:
        handle = None
        try:
            for position in range(pynvml.nvmlDeviceGetCount()):
                candidate = pynvml.nvmlDeviceGetHandleByIndex(position)
                probe = NvmlTelemetry(pynvml, candidate).static()
                if (uuid and _uuid_key(probe.uuid) == _uuid_key(uuid)) or (
                    pci_bus_id and _pci_key(probe.pci_bus_id) == _pci_key(pci_bus_id)
                ):
                    handle = candidate
                    break
            if handle is None and not uuid and not pci_bus_id:
                handle = pynvml.nvmlDeviceGetHandleByIndex(torch_index)
        except Exception:  # noqa: BLE001
            handle = None
        if handle is not None:
            return NvmlTelemetry(pynvml, handle)
        with contextlib.suppress(Exception):  # shutting down a library we could not use
            pynvml.nvmlShutdown()

    executable = shutil.which("nvidia-smi")
    if executable:
        rows = _smi_query(executable)
        for row in rows:
            if (uuid and _uuid_key(row.get("uuid")) == _uuid_key(uuid)) or (
                pci_bus_id and _pci_key(row.get("pci.bus_id")) == _pci_key(pci_bus_id)
            ):
                return SmiTelemetry(executable, str(row["index"]))
        if rows and not uuid and not pci_bus_id and torch_index < len(rows):
            return SmiTelemetry(executable, str(rows[torch_index]["index"]))
    return Telemetry()


def _cublas_version() -> str | None:
    """The cuBLAS PyTorch loaded: read from the library itself (cublasGetProperty), else the wheel's version."""
    try:
        with open("/proc/self/maps", encoding="utf-8") as maps:
            paths = {line.split()[-1] for line in maps if "libcublas.so" in line and "Lt" not in line}
    except OSError:
        paths = set()
    for path in sorted(paths):
        try:
            library = ctypes.CDLL(path)
            parts = []
            for kind in (0, 1, 2):  # MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL
                value = ctypes.c_int()
                if library.cublasGetProperty(kind, ctypes.byref(value)) != 0:
                    raise OSError("cublasGetProperty failed")
                parts.append(str(value.value))
            return ".".join(parts)
        except (OSError, AttributeError):
            continue
    for distribution in ("nvidia-cublas", "nvidia-cublas-cu13", "nvidia-cublas-cu12", "nvidia-cublas-cu11"):
        try:
            return importlib.metadata.version(distribution)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def _cudnn_version(torch: Any) -> str | None:
    try:
        number = torch.backends.cudnn.version()
    except Exception:  # noqa: BLE001
        return None
    if not number:
        return None
    if number >= 10000:  # cuDNN 9 encodes major*10000 + minor*100 + patch
        return f"{number // 10000}.{(number % 10000) // 100}.{number % 100}"
    return f"{number // 1000}.{(number % 1000) // 100}.{number % 100}"


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.lower().startswith(("model name", "hardware", "cpu model")):
                    name = line.split(":", 1)[1].strip()
                    if name:
                        return name[:200]
    except OSError:
        pass
    return (platform.processor() or platform.machine() or "unknown")[:200]


def ram_gib() -> float:
    try:
        with open("/proc/meminfo", encoding="utf-8") as meminfo:
            for line in meminfo:
                if line.startswith("MemTotal:"):
                    return round(int(line.split()[1]) / (1024 * 1024), 2)
    except (OSError, ValueError, IndexError):
        pass
    try:
        return round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1024**3, 2)
    except (ValueError, OSError, AttributeError):
        return 0.01


@dataclass
class DeviceInfo:
    """PyTorch's view of the measured device (or of the CPU, for --allow-cpu runs)."""

    index: int
    name: str
    count: int
    memory_total_mib: int
    compute_capability: str | None
    uuid: str | None
    pci_bus_id: str | None
    multiprocessor_count: int | None
    l2_cache_bytes: int | None


def device_describe(torch: Any, *, index: int | None) -> DeviceInfo:
    """Describe PyTorch's CUDA device ``index``, or the CPU when ``index`` is None."""
    if index is None:
        return DeviceInfo(
            index=0,
            name=cpu_model(),
            count=0,
            memory_total_mib=int(ram_gib() * 1024),
            compute_capability=None,
            uuid=None,
            pci_bus_id=None,
            multiprocessor_count=None,
            l2_cache_bytes=None,
        )
    props = torch.cuda.get_device_properties(index)
    raw_uuid = getattr(props, "uuid", None)
    pci_bus = getattr(props, "pci_bus_id", None)
    pci = None
    if isinstance(pci_bus, int):
        pci = f"{getattr(props, 'pci_domain_id', 0):08X}:{pci_bus:02X}:{getattr(props, 'pci_device_id', 0):02X}.0"
    l2 = getattr(props, "L2_cache_size", None)
    return DeviceInfo(
        index=index,
        name=torch.cuda.get_device_name(index),
        count=torch.cuda.device_count(),
        memory_total_mib=int(props.total_memory // (1024 * 1024)),
        compute_capability=f"{props.major}.{props.minor}",
        uuid=str(raw_uuid) if raw_uuid is not None else None,
        pci_bus_id=pci,
        multiprocessor_count=getattr(props, "multi_processor_count", None),
        l2_cache_bytes=int(l2) if isinstance(l2, int) and l2 > 0 else None,
    )


def environment_collect(
    *,
    torch: Any,
    device: DeviceInfo,
    telemetry: Telemetry,
    static: GpuStatic,
    before: dict[str, float | None] | None,
    after: dict[str, float | None] | None,
    cpu_only: bool,
) -> dict[str, Any]:
    """Assemble the submission's ``environment`` object (schema: $defs/environment)."""

    def clocks(sample: dict[str, float | None] | None) -> dict[str, float | None] | None:
        if sample is None or telemetry.source == "none":
            return None
        return {"sm_mhz": sample["sm_mhz"], "mem_mhz": sample["mem_mhz"], "max_sm_mhz": static.max_sm_mhz}

    uuid = device.uuid or static.uuid
    if uuid and not uuid.upper().startswith(("GPU-", "MIG-")):
        uuid = f"GPU-{uuid}"
    return {
        "gpu": {
            "name_torch": device.name[:200],
            "name_nvidia_smi": static.name,
            "count": device.count,
            "index": device.index,
            "memory_total_mib": device.memory_total_mib,
            "uuid": uuid,
            "pci_bus_id": static.pci_bus_id or device.pci_bus_id,
            "compute_capability": device.compute_capability,
            "multiprocessor_count": device.multiprocessor_count,
            "l2_cache_bytes": device.l2_cache_bytes,
        },
        "driver_version": static.driver_version,
        "cuda_version": None if cpu_only else _text(torch.version.cuda),
        "cuda_driver_version": static.cuda_driver_version,
        "torch_version": str(torch.__version__)[:100],
        "cublas_version": None if cpu_only else _cublas_version(),
        "cudnn_version": None if cpu_only else _cudnn_version(torch),
        "clocks_before": clocks(before),
        "clocks_after": clocks(after),
        "power_limit_w": static.power_limit_w,
        "power_draw_before_w": before["power_draw_w"] if before else None,
        "power_draw_after_w": after["power_draw_w"] if after else None,
        "temperature_before_c": before["temperature_c"] if before else None,
        "temperature_after_c": after["temperature_c"] if after else None,
        "telemetry_source": telemetry.source,
        "cpu": {"model": cpu_model(), "cores": os.cpu_count() or 1},
        "ram_gib": ram_gib(),
        "os": platform.platform()[:200],
        "python_version": platform.python_version(),
        "container_image": _text(os.environ.get("GPUATLAS_CONTAINER_IMAGE")),
    }
