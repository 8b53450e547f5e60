"""Multi-GPU arithmetic and figures with literals: no database (dashboard/multi_gpu_maths.py, dashboard/figures/multi_gpu.py)."""

from __future__ import annotations

import datetime as dt

import pytest

from dashboard.figures.multi_gpu import allreduce_figure, scaling_figure
from dashboard.multi_gpu_maths import (
    HostResult,
    allreduce_lines,
    bytes_label,
    host_facts,
    run_efficiencies,
    scaling_by_count,
    scaling_headline,
    scaling_lines,
    workload_runs_on_a_host,
)
from dashboard.ranking.maths import AggregatePoint, best_per_group, measured_relative

DAY = dt.datetime(2026, 11, 20, tzinfo=dt.UTC)
SHAPE = {"batch": 8, "seq_len": 2048, "d_model": 2048, "n_heads": 16, "d_ff": 8192}


def ddp(run, count, value, *, interconnect="nvlink", submitter="", day=0, per_gpu=(), host=None, version="1.0"):
    return HostResult(
        run_id=run,
        workload="transformer-train-ddp",
        version=version,
        precision="bf16",
        gpu_count=count,
        params={**SHAPE, "interconnect": "none" if count == 1 else interconnect},
        value=value,
        submitter_key=submitter or f"user:{run}",
        measured_at=DAY + dt.timedelta(days=day),
        per_gpu=tuple(per_gpu),
        host=host or {},
    )


def allreduce(run, count, size, busbw, *, interconnect="nvlink", algbw=None, time_us=None):
    return HostResult(
        run_id=run,
        workload="allreduce-busbw",
        version="1.0",
        precision="fp32",
        gpu_count=count,
        params={"bytes": size, "dtype": "float32", "op": "avg", "interconnect": interconnect},
        value=busbw,
        submitter_key=f"user:{run}",
        measured_at=DAY,
        extra={"algbw_gbs": algbw, "time_us": time_us} if algbw else {},
    )


def test_efficiency_pairs_each_result_with_the_1_gpu_result_of_its_own_run():
    results = [ddp(1, 1, 100.0), ddp(1, 2, 190.0), ddp(2, 1, 80.0), ddp(2, 4, 300.0), ddp(3, 2, 150.0)]
    found = run_efficiencies(results)
    assert {key[0]: value for key, value in found.items()} == {1: (0.95, 100.0), 2: (300.0 / 320.0, 80.0)}
    # run 3 has no 1-GPU result: no efficiency, not another run's


def test_several_runs_combine_as_the_median_of_their_efficiencies_not_the_ratio_of_medians():
    runs = [(1, 160.0, 310.0), (2, 150.0, 285.0), (3, 162.0, 300.0)]
    results = [r for run, one, two in runs for r in (ddp(run, 1, one), ddp(run, 2, two, day=run))]
    one, two = scaling_lines(results, min_results=3)
    assert (one.gpu_count, one.efficiency, one.n) == (1, None, 3)
    assert two.efficiency == pytest.approx(0.95)  # median of 0.96875, 0.95, 0.9259
    assert two.efficiency != pytest.approx(two.tokens_per_s / (2 * one.tokens_per_s))
    assert (two.efficiency_n, two.efficiency_min, two.efficiency_max) == (3, pytest.approx(300 / 324), 310 / 320)
    assert two.one_gpu_tokens_per_s == 160.0 and two.tokens_per_s_per_gpu == 150.0
    assert two.ranked and one.ranked


def test_nvlink_and_pcie_are_separate_lines_and_the_count_keeps_the_one_with_most_runs():
    results = [ddp(1, 1, 100.0), ddp(1, 2, 190.0), ddp(2, 1, 100.0), ddp(2, 2, 150.0, interconnect="pcie")]
    results += [ddp(3, 1, 100.0), ddp(3, 2, 160.0, interconnect="pcie")]
    lines = scaling_lines(results, min_results=3)
    assert [(line.gpu_count, line.interconnect, line.n) for line in lines] == [
        (1, "none", 3),
        (2, "nvlink", 1),
        (2, "pcie", 2),
    ]
    by_count = scaling_by_count(lines)
    assert by_count[2].interconnect == "pcie" and by_count[2].efficiency == pytest.approx(0.775)
    assert not by_count[2].ranked  # two runs: shown, not ranked
    assert scaling_headline(by_count) is None


def test_the_headline_is_the_largest_ranked_gpu_count():
    results = []
    for run in (1, 2, 3):
        results += [ddp(run, 1, 100.0), ddp(run, 2, 190.0), ddp(run, 4, 360.0)]
    results += [ddp(4, 1, 100.0), ddp(4, 8, 640.0)]  # one 8-GPU run only
    by_count = scaling_by_count(scaling_lines(results, min_results=3))
    assert sorted(by_count) == [2, 4, 8]
    headline = scaling_headline(by_count)
    assert headline is not None and (headline.gpu_count, headline.efficiency, headline.n) == (4, 0.9, 3)


def test_host_facts_read_the_links_between_the_gpus_of_the_result_only():
    matrix = [["X", "NV18", "SYS"], ["NV18", "X", "SYS"], ["SYS", "SYS", "X"]]
    host = {"link_matrix": matrix, "topology_source": "nvidia-smi", "peer_access": True, "backend": "nccl",
            "nccl_version": "2.28.9", "nccl_env": {"NCCL_NVLS_ENABLE": "0"}, "gpu_count": 3}  # fmt: skip
    facts = host_facts(ddp(1, 2, 190.0, host=host))
    assert facts.links == ("NV18",) and facts.peer_access is True and facts.host_gpu_count == 3
    assert host_facts(ddp(1, 3, 250.0, interconnect="mixed", host=host)).links == ("NV18", "SYS")
    assert host_facts(ddp(1, 2, 190.0, host={"link_matrix": None})).links == ()


def test_rank_spread_comes_from_per_gpu_figures():
    line = scaling_lines([ddp(1, 1, 100.0), ddp(1, 2, 190.0, per_gpu=(93.0, 97.5))], min_results=3)[1]
    assert (line.rank_min, line.rank_max) == (93.0, 97.5)


def test_versions_are_never_combined():
    results = [ddp(1, 1, 100.0), ddp(1, 2, 190.0), ddp(2, 1, 100.0, version="1.1"), ddp(2, 2, 150.0, version="1.1")]
    lines = scaling_lines(results, min_results=1)
    assert [(line.version, line.gpu_count, line.efficiency) for line in lines] == [
        ("1.0", 1, None),
        ("1.0", 2, 0.95),
        ("1.1", 1, None),
        ("1.1", 2, 0.75),
    ]


def test_allreduce_lines_by_count_interconnect_and_size():
    results = [
        allreduce(1, 2, 1 << 30, 330.0, algbw=330.0, time_us=3254.0),
        allreduce(2, 2, 1 << 30, 320.0, algbw=320.0, time_us=3355.0),
        allreduce(1, 2, 1 << 20, 40.0),
        allreduce(3, 2, 1 << 30, 25.0, interconnect="pcie"),
        allreduce(1, 1, 1 << 30, 1241.0),  # one GPU has no bus bandwidth: never a line
    ]
    lines = allreduce_lines(results)
    assert [(line.interconnect, line.size_label, line.n) for line in lines] == [
        ("nvlink", "1 MiB", 1),
        ("nvlink", "1 GiB", 2),
        ("pcie", "1 GiB", 1),
    ]
    assert lines[1].busbw_gbs == 325.0 and lines[1].algbw_gbs == 325.0 and lines[1].time_us == pytest.approx(3304.5)
    assert lines[0].algbw_gbs is None


def test_bytes_label():
    assert [bytes_label(size) for size in (1 << 20, 8 << 20, 64 << 20, 1 << 30, 512)] == [
        "1 MiB", "8 MiB", "64 MiB", "1 GiB", "512 B"
    ]  # fmt: skip


def test_host_workloads_are_those_whose_results_carry_the_interconnect():
    assert workload_runs_on_a_host({"params": {"bytes": {}, "interconnect": {"type": "string"}}})
    assert not workload_runs_on_a_host({"params": {"batch": {}}})
    assert not workload_runs_on_a_host(None)


def _point(gpu, count, median, *, host_run):
    return AggregatePoint(
        gpu_id=gpu, group=(7, "bf16", count), median=median, n=3, distinct_submitters=3, has_lab=False,
        host_run=host_run,
    )  # fmt: skip


def test_best_per_group_keeps_a_host_runs_2_gpu_result_out_of_the_relative_figure():
    points = [_point(1, 1, 100.0, host_run=True), _point(1, 2, 190.0, host_run=True)]
    points += [_point(2, 1, 160.0, host_run=True), _point(2, 2, 310.0, host_run=True)]
    assert {gpu: list(groups) for gpu, groups in best_per_group(points).items()} == {
        1: [(7, "bf16", 1)],
        2: [(7, "bf16", 1)],
    }
    figure = measured_relative(points, baseline_gpu_id=1)[2]
    assert (figure.value, figure.groups, figure.n) == (1.6, 1, 3)
    # Lab tables of whole multi-GPU systems (Lambda's 8x configurations) stay compared at equal counts.
    lab = [_point(1, 8, 800.0, host_run=False), _point(2, 8, 1600.0, host_run=False)]
    assert measured_relative(lab, baseline_gpu_id=1)[2].value == 2.0


def _line_results():
    results = []
    for run, (one, two, four) in enumerate(((100.0, 190.0, 360.0), (100.0, 180.0, 340.0)), start=1):
        results += [ddp(run, 1, one), ddp(run, 2, two), ddp(run, 4, four), ddp(run, 4, 300.0, interconnect="pcie")]
    return scaling_lines(results, min_results=3)


def test_scaling_figure_plots_per_gpu_throughput_and_efficiency_from_the_1_gpu_point():
    figure = scaling_figure(_line_results())
    per_gpu = [t for t in figure["data"] if t.get("yaxis", "y") == "y"]
    efficiency = [t for t in figure["data"] if t.get("yaxis") == "y2"]
    assert [t["name"] for t in per_gpu] == ["NVLink", "PCIe"]
    assert per_gpu[0]["x"] == ["1", "2", "4"] and per_gpu[0]["y"] == [100.0, 92.5, 87.5]
    assert efficiency[0]["y"] == pytest.approx([100.0, 92.5, 87.5])
    assert efficiency[1]["x"] == ["1", "4"] and efficiency[1]["y"] == pytest.approx([100.0, 75.0])
    assert figure["layout"]["xaxis"]["categoryarray"] == ["1", "2", "4"]
    assert "n = %{customdata[1]}" in per_gpu[0]["hovertemplate"]


def test_allreduce_figure_has_one_line_per_count_and_interconnect_on_a_log_size_axis():
    lines = allreduce_lines(
        [allreduce(1, 2, 1 << 20, 40.0), allreduce(1, 2, 1 << 30, 330.0), allreduce(2, 4, 1 << 30, 350.0)]
    )
    figure = allreduce_figure(lines)
    assert [t["name"] for t in figure["data"]] == ["2 GPUs · NVLink", "4 GPUs · NVLink"]
    assert figure["data"][0]["y"] == [40.0, 330.0]
    assert figure["layout"]["xaxis"]["type"] == "log"
    assert figure["layout"]["xaxis"]["ticktext"] == ["1 MiB", "1 GiB"]
