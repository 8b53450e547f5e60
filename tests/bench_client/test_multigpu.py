"""Multi-GPU workloads: topology, group sizes, the lock-step timer, and a real two-process gloo run on the CPU."""

from __future__ import annotations

import copy
import json
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest
from gpuatlas_bench import cli
from gpuatlas_bench.cli import _out_path, main
from gpuatlas_bench.multigpu import _scaling_add, world_sizes
from gpuatlas_bench.runner import POLICIES
from gpuatlas_bench.schema import submission_validate
from gpuatlas_bench.topology import Topology, interconnect_classify, link_kind, topology_matrix_parse
from gpuatlas_bench.workloads import collective
from gpuatlas_bench.workloads.collective import CollectiveTimer, busbw_factor

# `nvidia-smi topo -m` of an 8x H100 SXM host (HGX, NVSwitch), as printed there: tab-separated,
# the header underlined with escape codes on a terminal, NIC rows and the legend after the GPUs.
HGX_H100 = (
    "\t\x1b[4mGPU0\tGPU1\tGPU2\tGPU3\tGPU4\tGPU5\tGPU6\tGPU7\tNIC0\tNIC1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\x1b[0m\n"
    + "".join(
        f"GPU{row}\t"
        + "\t".join(" X " if col == row else "NV18" for col in range(8))
        + f"\t{'PXB' if row == 0 else 'SYS'}\tSYS\t{'0-55,112-167' if row < 4 else '56-111,168-223'}\t{row // 4}\t\tN/A\n"
        for row in range(8)
    )
    + "NIC0\tPXB\tNODE\tNODE\tNODE\tSYS\tSYS\tSYS\tSYS\t X \tNODE\t\t\t\t\n"
    + "\nLegend:\n\n  X    = Self\n  SYS  = Connection traversing PCIe as well as the SMP interconnect\n"
    + "  NV#  = Connection traversing a bonded set of # NVLinks\n"
)
# Four PCIe cards, two of them joined by an NVLink bridge (NV4), over two CPU sockets.
BRIDGED_PCIE = (
    "\tGPU0\tGPU1\tGPU2\tGPU3\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
    "GPU0\t X \tNV4\tNODE\tSYS\t0-31\t0\t\tN/A\n"
    "GPU1\tNV4\t X \tNODE\tSYS\t0-31\t0\t\tN/A\n"
    "GPU2\tNODE\tNODE\t X \tSYS\t0-31\t0\t\tN/A\n"
    "GPU3\tSYS\tSYS\tSYS\t X \t32-63\t1\t\tN/A\n"
    "\nLegend:\n"
)
# The lent H100 (bench_client/perf/results/h100-2026-11-25/topo-1gpu.txt): one GPU.
ONE_GPU = (Path(__file__).resolve().parents[2] / "bench_client/perf/results/h100-2026-11-25/topo-1gpu.txt").read_text()


def test_topology_matrix_is_read_from_nvidia_smi_output():
    matrix = topology_matrix_parse(HGX_H100)
    assert sorted(matrix) == [f"GPU{i}" for i in range(8)]
    assert matrix["GPU0"]["GPU0"] == "X"
    assert matrix["GPU3"]["GPU5"] == "NV18"
    assert "NIC0" not in matrix["GPU0"]
    assert topology_matrix_parse(ONE_GPU) == {"GPU0": {"GPU0": "X"}}


@pytest.mark.parametrize(
    ("cells", "expected"),
    [
        (["NV18", "NV18"], "nvlink"),
        (["PIX", "SYS", "NODE", "PHB", "PXB"], "pcie"),
        (["NV4", "SYS"], "mixed"),
        (["NV4", "??"], "unknown"),
        ([], "none"),
    ],
)
def test_interconnect_of_a_set_of_links(cells, expected):
    assert interconnect_classify([link_kind(cell) for cell in cells]) == expected


def test_interconnect_depends_on_which_gpus_a_result_used():
    matrix = topology_matrix_parse(BRIDGED_PCIE)
    labels = ["GPU0", "GPU1", "GPU2", "GPU3"]
    topology = Topology(
        devices=[0, 1, 2, 3], source="nvidia-smi", links=[[matrix[a][b] for b in labels] for a in labels]
    )
    assert [topology.interconnect(n) for n in (1, 2, 3, 4)] == ["none", "nvlink", "mixed", "mixed"]
    assert Topology(devices=[0, 1], source="nvml", nvlink_counts=[0, 0]).interconnect() == "pcie"
    assert Topology(devices=[0, 1]).interconnect() == "unknown"


def test_group_sizes_and_bus_bandwidth_factor():
    assert world_sizes(1) == [1]
    assert world_sizes(2) == [1, 2]
    assert world_sizes(6) == [1, 2, 4, 6]
    assert world_sizes(8) == [1, 2, 4, 8]
    assert busbw_factor(2) == 1.0
    assert busbw_factor(8) == 1.75  # nccl-tests: 2(n-1)/n


class _FakeGroup:
    """Two ranks whose elapsed times are scripted; gather returns every rank's, as all_gather does."""

    def __init__(self, times):
        self.times = iter(times)
        self.barriers = 0

    def barrier(self):
        self.barriers += 1

    def gather(self, value):
        return [value, next(self.times)]


class _FixedTimer:
    method = "perf_counter"

    def __init__(self, seconds):
        self.seconds = iter(seconds)

    def time(self, fn, iterations):
        return next(self.seconds)


@pytest.mark.parametrize(("reduce", "expected"), [("mean", [1.5, 3.0]), ("max", [2.0, 4.0])])
def test_collective_timer_reduces_every_ranks_time_the_same_way(reduce, expected):
    group = _FakeGroup([2.0, 4.0])
    timer = CollectiveTimer(_FixedTimer([1.0, 2.0]), group, reduce=reduce)
    assert [timer.time(lambda: None, 1), timer.time(lambda: None, 1)] == expected
    assert timer.per_rank == [[1.0, 2.0], [2.0, 4.0]]
    assert group.barriers == 2  # every timed call starts together


def test_scaling_efficiency_against_the_one_gpu_result_of_the_same_shape():
    def ddp(count, median, interconnect):
        params = {"batch": 8, "seq_len": 2048, "interconnect": interconnect}
        return {
            "workload": "transformer-train-ddp",
            "precision": "bf16",
            "gpu_count": count,
            "params": params,
            "median": median,
        }

    results = [ddp(1, 1000.0, "none"), ddp(2, 1900.0, "nvlink"), ddp(4, 3600.0, "nvlink")]
    _scaling_add(results)
    assert "scaling_efficiency" not in results[0].get("extra", {})
    assert results[1]["extra"]["scaling_efficiency"] == 0.95
    assert results[2]["extra"]["scaling_efficiency"] == 0.9
    assert results[2]["extra"]["baseline_1gpu_tokens_per_s"] == 1000.0


torch = pytest.importorskip("torch", reason="the multi-GPU workloads run through PyTorch")


def test_two_gloo_processes_measure_allreduce_and_ddp_scaling(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("NCCL_NVLS_ENABLE", "0")
    monkeypatch.setenv("NCCL_debug_file", "/tmp/x")  # not a name the schema takes: left out
    out = tmp_path / "multi.json"
    code = main(
        ["run", "--allow-cpu", "--quick", "--quiet"]
        + ["--workloads", "allreduce-busbw", "transformer-train-ddp", "--out", str(out)]
    )
    assert code == 0, capsys.readouterr().err
    payload = json.loads(out.read_text())
    assert submission_validate(payload, require_schema=True) == []
    host = payload["host"]
    assert (host["backend"], host["ranks"], host["devices"], host["gpu_count"]) == ("gloo", 2, [], 0)
    assert host["nccl_env"]["NCCL_NVLS_ENABLE"] == "0" and "NCCL_debug_file" not in host["nccl_env"]

    allreduce = [r for r in payload["results"] if r["workload"] == "allreduce-busbw"]
    assert [(r["gpu_count"], r["params"]["bytes"]) for r in allreduce] == [(2, 4096), (2, 65536)]
    for result in allreduce:
        assert result["unit"] == "GB/s"
        assert result["correctness"]["passed"], result["correctness"]
        assert [entry["rank"] for entry in result["per_gpu"]] == [0, 1]
        assert result["extra"]["busbw_factor"] == 1.0
    one_rank = next(s for s in payload["skipped"] if s["workload"] == "allreduce-busbw")
    assert "bus bandwidth is 0 by definition" in one_rank["reason"]
    assert "summed correctly" in one_rank["reason"]

    ddp = {r["gpu_count"]: r for r in payload["results"] if r["workload"] == "transformer-train-ddp"}
    assert set(ddp) == {1, 2}
    assert ddp[1]["params"]["interconnect"] == "none"
    two = ddp[2]
    assert two["correctness"]["passed"], two["correctness"]  # gradients equal on both ranks
    assert two["extra"]["scaling_efficiency"] == pytest.approx(two["median"] / (2 * ddp[1]["median"]), abs=1e-4)
    # A step of the group takes the slowest rank's time, so in every repetition each rank alone did at
    # least half the group's tokens/s; medians keep that order.
    assert all(entry["median"] >= two["median"] / 2 * (1 - 1e-5) for entry in two["per_gpu"])


def _multi_gpu_payload(h100_run_path):
    payload = json.loads(h100_run_path.read_text())
    result = copy.deepcopy(next(r for r in payload["results"] if r["workload"] == "transformer-train"))
    result.update(workload="transformer-train-ddp", gpu_count=2)
    result["params"]["interconnect"] = "nvlink"
    result["per_gpu"] = [
        {
            "rank": rank,
            "device_index": rank,
            "median": result["median"] / 2,
            "min": result["min"] / 2,
            "max": result["max"] / 2,
        }
        for rank in (0, 1)
    ]
    payload["results"] = [result]
    payload["host"] = {
        "gpu_count": 2,
        "devices": [0, 1],
        "ranks": 2,
        "gpus": [],
        "interconnect": "nvlink",
        "topology_source": "nvidia-smi",
        "backend": "nccl",
    }
    return payload


def test_schema_requires_per_gpu_figures_and_the_host_for_several_gpus(h100_run_path):
    payload = _multi_gpu_payload(h100_run_path)
    assert submission_validate(payload, require_schema=True) == []

    without_host = copy.deepcopy(payload)
    del without_host["host"]
    assert any("host" in error for error in submission_validate(without_host, require_schema=True))

    without_per_gpu = copy.deepcopy(payload)
    del without_per_gpu["results"][0]["per_gpu"]
    assert any("per_gpu" in error for error in submission_validate(without_per_gpu, require_schema=True))

    one_rank_missing = copy.deepcopy(payload)
    one_rank_missing["results"][0]["per_gpu"][1]["rank"] = 0
    assert "results/0/per_gpu: needs one entry for each rank 0 to 1, has ranks [0, 0]" in submission_validate(
        one_rank_missing, require_schema=True
    )

    more_than_ran = copy.deepcopy(payload)
    more_than_ran["host"]["ranks"] = 1
    assert any("host.ranks" in error for error in submission_validate(more_than_ran, require_schema=True))


def test_all_devices_on_a_multi_gpu_host_writes_one_file_per_gpu_and_one_for_the_host(
    tmp_path, monkeypatch, h100_run_path
):
    calls = []

    def fake_device_run(torch, *, device_index, options, progress, collective_devices=None):
        calls.append((device_index, options.workloads, collective_devices))
        payload = json.loads(h100_run_path.read_text())
        return payload, []

    fake_torch = SimpleNamespace(cuda=SimpleNamespace(is_available=lambda: True, device_count=lambda: 2))
    monkeypatch.setattr(cli, "_import_torch", lambda: fake_torch)
    monkeypatch.setattr("gpuatlas_bench.runner.device_run", fake_device_run)
    out = tmp_path / "result.json"
    code = main(
        ["run", "--all-devices", "--quiet", "--workloads", "membw-copy", "transformer-train-ddp", "--out", str(out)]
    )
    assert code == 0
    assert calls == [
        (0, ("membw-copy",), None),
        (1, ("membw-copy",), None),
        (0, ("transformer-train-ddp",), [0, 1]),
    ]
    assert sorted(path.name for path in tmp_path.iterdir()) == [
        "result-gpu0.json",
        "result-gpu1.json",
        "result-host.json",
    ]
    assert _out_path("runs/{device}.json", "host", True) == Path("runs/host.json")


class _TeardownGroup:
    """A stand-in rank: records the order of the teardown's steps."""

    def __init__(self, rank: int, backend: str, log: list[str]) -> None:
        self.rank, self.backend, self.log = rank, backend, log
        outer = self

        class Dist:
            @staticmethod
            def destroy_process_group() -> None:
                outer.log.append(f"destroy {outer.rank}")

        self.dist = Dist()

    def barrier(self) -> None:
        self.log.append(f"barrier {self.rank}")


def _teardown_spec(tmp_path):
    return collective.CollectiveSpec(
        ("allreduce-busbw",), None, 2, "cpu-tiny", POLICIES["cpu"], 1, "unknown", {}, str(tmp_path / "store"), ""
    )


def test_gloo_ranks_destroy_their_group_one_after_another(tmp_path):
    log: list[str] = []
    spec = _teardown_spec(tmp_path)
    second = threading.Thread(
        target=collective._teardown, args=(_TeardownGroup(1, "gloo", log), spec), kwargs={"meet": True}
    )
    second.start()
    second.join(timeout=0.3)
    assert second.is_alive() and log == ["barrier 1"]  # rank 1 waits for rank 0's group to be gone
    collective._teardown(_TeardownGroup(0, "gloo", log), spec, meet=True)
    second.join(timeout=5)
    assert log == ["barrier 1", "barrier 0", "destroy 0", "destroy 1"]
    assert (tmp_path / "store.down-0").exists() and (tmp_path / "store.down-1").exists()


def test_nccl_ranks_do_not_wait_and_a_failed_rank_skips_the_barrier(tmp_path, monkeypatch):
    log: list[str] = []
    collective._teardown(_TeardownGroup(1, "nccl", log), _teardown_spec(tmp_path), meet=False)
    assert log == ["destroy 1"]
    # A gloo rank whose predecessor never finishes goes on after the wait limit.
    monkeypatch.setattr(collective, "_TEARDOWN_WAIT_S", 0.05)
    log.clear()
    (tmp_path / "other").mkdir()
    collective._teardown(_TeardownGroup(1, "gloo", log), _teardown_spec(tmp_path / "other"), meet=True)
    assert log == ["barrier 1", "destroy 1"]
