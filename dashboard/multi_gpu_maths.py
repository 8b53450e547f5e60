"""Multi-GPU figures of the benchmark client's host runs: data-parallel training scaling and
all-reduce bus bandwidth. Pure arithmetic over plain values; dashboard/selectors/scaling.py
reads the rows, tests/test_dashboard_scaling.py checks every rule with literals.

Method, as the GPU page and the API state it
-------------------------------------------
* A host run is one submission of ``gpuatlas-bench --all-devices`` on a host of several GPUs:
  transformer-train-ddp at 1, 2, 4, ... N GPUs and allreduce-busbw at 2 ... N GPUs, each result
  with its GPU count, its interconnect (``params.interconnect``: nvlink, pcie, mixed) and each
  rank's own figure (``per_gpu``).
* Scaling efficiency of a run at N GPUs = its tokens/s at N / (N x its tokens/s at 1 GPU): both
  from the same run (the same submission, workload version, precision and shape), both trusted.
  A run without a trusted 1-GPU result has no efficiency. The client's own
  ``extra.scaling_efficiency`` is not read: the server recomputes it from the stored figures.
* Several runs at one GPU count and interconnect: the median of the per-run efficiencies, with
  their count (``efficiency_n``) and range; the 1-GPU figure they are relative to is the median
  of those runs' 1-GPU results. Per-GPU throughput is the group's tokens/s divided by N
  (median over runs); ``rank_min``/``rank_max`` are the slowest and fastest rank seen.
* Figures are kept apart by workload version, GPU count and interconnect: NVLink and PCIe
  results are never combined. All-reduce figures are also kept apart by message size.
* ``ranked`` (training): the figure counts in the rankings, by the rankings' rule (a lab result,
  or at least ``min_results`` community results: for efficiencies, runs with an efficiency).
  All-reduce bandwidth is shown, never ranked.
"""

from __future__ import annotations

import datetime as dt
import json
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

DDP_WORKLOAD = "transformer-train-ddp"
ALLREDUCE_WORKLOAD = "allreduce-busbw"
HOST_WORKLOADS = (DDP_WORKLOAD, ALLREDUCE_WORKLOAD)
INTERCONNECT_PARAM = "interconnect"
# Order of interconnects on pages: the fast links first.
INTERCONNECT_ORDER = ("nvlink", "mixed", "pcie", "unknown", "none")
INTERCONNECT_LABELS: dict[str, str | Promise] = {
    "nvlink": _("NVLink"),
    "pcie": _("PCIe"),
    "mixed": _("mixed (NVLink and PCIe)"),
    "unknown": _("interconnect unknown"),
    "none": _("one GPU"),
}

SCALING_METHOD = _(
    "Scaling efficiency = tokens/s on N GPUs ÷ (N × tokens/s on 1 GPU), both from the same run, so the host, "
    "driver and software are the same; perfect scaling is 100 %. Where several runs exist, the figure is the "
    "median of the per-run efficiencies, with the number of runs and their range. NVLink and PCIe hosts are never "
    "combined. Per-GPU throughput is the group's tokens/s divided by its GPUs; the slowest and fastest GPU are "
    "each rank's own figure. These figures are shown beside the rankings' performance, never mixed into it."
)
ALLREDUCE_METHOD = _(
    "Bus bandwidth as nccl-tests defines it: the algorithm bandwidth (bytes per GPU ÷ time of one all-reduce) "
    "× 2(n − 1)/n, which makes runs on different GPU counts comparable with the link's speed. FP32 buffers; the "
    "time of a repetition is the mean over the GPUs; median over runs."
)


def interconnect_label(name: str) -> str:
    return str(INTERCONNECT_LABELS.get(name, name))


def bytes_label(size: int) -> str:
    """1048576 -> "1 MiB": the message sizes as the client and nccl-tests name them."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:g} {unit}"
    return f"{size} B"


def workload_runs_on_a_host(rules: Mapping[str, Any] | None) -> bool:
    """Whether a workload's results are host runs over several GPUs: its submission rules let a
    result carry the interconnect among its GPUs (workloads.json)."""
    return INTERCONNECT_PARAM in ((rules or {}).get("params") or {})


@dataclass(frozen=True)
class HostResult:
    """One trusted result of a multi-GPU workload as stored (BenchmarkResult and its environment)."""

    run_id: int  # the submission: results of one run share it
    workload: str
    version: str
    precision: str
    gpu_count: int
    params: Mapping[str, Any]
    value: float
    submitter_key: str
    measured_at: dt.datetime
    per_gpu: tuple[float, ...] = ()
    host: Mapping[str, Any] = field(default_factory=dict)
    extra: Mapping[str, Any] = field(default_factory=dict)
    lab: bool = False

    @property
    def interconnect(self) -> str:
        return str(self.params.get(INTERCONNECT_PARAM) or "unknown")

    @property
    def shape(self) -> str:
        """The run parameters apart from the interconnect: what a 1-GPU result must share."""
        return json.dumps({k: v for k, v in self.params.items() if k != INTERCONNECT_PARAM}, sort_keys=True)


@dataclass(frozen=True)
class HostFacts:
    """How the GPUs of the newest run behind a figure were joined, as its client read it."""

    interconnect: str
    topology_source: str
    links: tuple[str, ...]  # the distinct nvidia-smi topo cells between the GPUs used (NV18, PIX, SYS ...)
    peer_access: bool | None
    backend: str
    nccl_version: str
    nccl_env: tuple[tuple[str, str], ...]
    host_gpu_count: int | None
    measured_at: dt.datetime

    @property
    def key(self) -> tuple[Any, ...]:
        """What tells two hosts apart on a page (the date and the line's own interconnect aside)."""
        return (
            self.topology_source, self.links, self.peer_access, self.backend, self.nccl_version, self.nccl_env,
            self.host_gpu_count,
        )  # fmt: skip

    def as_dict(self) -> dict[str, Any]:
        return {
            "interconnect": self.interconnect,
            "topology_source": self.topology_source,
            "links": list(self.links),
            "peer_access": self.peer_access,
            "backend": self.backend,
            "nccl_version": self.nccl_version,
            "host_gpu_count": self.host_gpu_count,
            "measured_at": self.measured_at,
        }


def host_facts(result: HostResult) -> HostFacts:
    host = result.host
    count = result.gpu_count
    matrix = host.get("link_matrix") or []
    links = sorted(
        {
            str(cell)
            for a, row in enumerate(matrix[:count])
            if isinstance(row, list)
            for b, cell in enumerate(row[:count])
            if a != b and cell not in (None, "", "X")
        }
    )
    env = host.get("nccl_env") or {}
    return HostFacts(
        interconnect=result.interconnect,
        topology_source=str(host.get("topology_source") or ""),
        links=tuple(links),
        peer_access=host.get("peer_access") if isinstance(host.get("peer_access"), bool) else None,
        backend=str(host.get("backend") or ""),
        nccl_version=str(host.get("nccl_version") or ""),
        nccl_env=tuple(sorted((str(k), str(v)) for k, v in env.items())) if isinstance(env, Mapping) else (),
        host_gpu_count=host.get("gpu_count") if isinstance(host.get("gpu_count"), int) else None,
        measured_at=result.measured_at,
    )


def _median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def _ranked(*, n: int, lab: bool, min_results: int) -> bool:
    return lab or n >= min_results


@dataclass(frozen=True)
class ScalingLine:
    """Data-parallel training at one GPU count and interconnect (one workload version)."""

    workload: str
    version: str
    precision: str
    gpu_count: int
    interconnect: str
    n: int  # results (one per run)
    distinct_submitters: int
    tokens_per_s: float  # the whole group, median over runs
    tokens_per_s_per_gpu: float  # tokens_per_s / gpu_count
    rank_min: float | None  # slowest rank's own tokens/s over the runs (per_gpu)
    rank_max: float | None
    efficiency: float | None  # median of the per-run efficiencies; None at 1 GPU or without a 1-GPU result
    efficiency_n: int  # runs behind the efficiency
    efficiency_submitters: int  # distinct submitters of those runs
    efficiency_min: float | None
    efficiency_max: float | None
    one_gpu_tokens_per_s: float | None  # median 1-GPU figure of the runs behind the efficiency
    ranked: bool  # counts in the rankings (see module doc)
    host: HostFacts  # of the newest run
    tokens_per_step: int | None = None  # per GPU: params batch x seq_len (the shape is the line's)
    parameters: int | None = None  # the trained block's parameters (extra.parameters of the newest run)

    @property
    def interconnect_label(self) -> str:
        return interconnect_label(self.interconnect)


def _positive_int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _tokens_per_step(params: Mapping[str, Any]) -> int | None:
    batch, seq = _positive_int(params.get("batch")), _positive_int(params.get("seq_len"))
    return batch * seq if batch and seq else None


@dataclass(frozen=True)
class AllreduceLine:
    """All-reduce bus bandwidth at one GPU count, interconnect and message size."""

    workload: str
    version: str
    gpu_count: int
    interconnect: str
    bytes: int
    dtype: str
    n: int
    distinct_submitters: int
    busbw_gbs: float  # median over runs (nccl-tests' bus bandwidth)
    algbw_gbs: float | None  # median of the runs' algorithm bandwidth (bytes / time)
    time_us: float | None  # median time of one all-reduce
    rank_min: float | None
    rank_max: float | None
    host: HostFacts

    @property
    def interconnect_label(self) -> str:
        return interconnect_label(self.interconnect)

    @property
    def size_label(self) -> str:
        return bytes_label(self.bytes)


def _newest(results: Iterable[HostResult]) -> HostResult:
    return max(results, key=lambda r: (r.measured_at, r.run_id))


def _interconnect_rank(name: str) -> int:
    return INTERCONNECT_ORDER.index(name) if name in INTERCONNECT_ORDER else len(INTERCONNECT_ORDER)


def _submitters(results: Iterable[HostResult]) -> int:
    return len({r.submitter_key for r in results if r.submitter_key})


def _extra_median(results: Iterable[HostResult], name: str) -> float | None:
    """Median of a figure the client reports under ``extra`` (all-reduce: algbw_gbs, time_us)."""
    return _median([float(r.extra[name]) for r in results if isinstance(r.extra.get(name), int | float)])


def _ranks(results: Iterable[HostResult]) -> tuple[float | None, float | None]:
    figures = [v for r in results for v in r.per_gpu]
    return (min(figures), max(figures)) if figures else (None, None)


def run_efficiencies(results: Iterable[HostResult]) -> dict[tuple[int, str, str, str, int, str], tuple[float, float]]:
    """Per (run, version, precision, shape, GPU count, interconnect): (efficiency, the run's 1-GPU tokens/s).

    Only counts of 2 or more with a 1-GPU result of the same run and shape.
    """
    items = list(results)
    one_gpu = {(r.run_id, r.version, r.precision, r.shape): r.value for r in items if r.gpu_count == 1}
    out = {}
    for r in items:
        one = one_gpu.get((r.run_id, r.version, r.precision, r.shape))
        if r.gpu_count < 2 or not one:
            continue
        out[(r.run_id, r.version, r.precision, r.shape, r.gpu_count, r.interconnect)] = (
            r.value / (r.gpu_count * one),
            one,
        )
    return out


def scaling_lines(results: Iterable[HostResult], *, min_results: int) -> list[ScalingLine]:
    """DDP results of one GPU as lines by (version, precision, shape, GPU count, interconnect),
    ordered by version, GPU count and interconnect (see the module doc for every figure)."""
    items = [r for r in results if r.workload == DDP_WORKLOAD]
    efficiencies = run_efficiencies(items)
    groups: dict[tuple[str, str, str, int, str], list[HostResult]] = defaultdict(list)
    for r in items:
        groups[(r.version, r.precision, r.shape, r.gpu_count, r.interconnect)].append(r)
    lines = []
    for (version, precision, shape, count, interconnect), members in groups.items():
        runs = [efficiencies.get((r.run_id, version, precision, shape, count, interconnect)) for r in members]
        found = [(r, run) for r, run in zip(members, runs, strict=True) if run is not None]
        effs = [e for _r, (e, _one) in found]
        median_value = statistics.median(r.value for r in members)
        rank_min, rank_max = _ranks(members)
        lab = any(r.lab for r in members)
        newest = _newest(members)
        lines.append(
            ScalingLine(
                workload=DDP_WORKLOAD,
                version=version,
                precision=precision,
                gpu_count=count,
                interconnect=interconnect,
                n=len(members),
                distinct_submitters=_submitters(members),
                tokens_per_s=median_value,
                tokens_per_s_per_gpu=median_value / count,
                rank_min=rank_min,
                rank_max=rank_max,
                efficiency=_median(effs),
                efficiency_n=len(effs),
                efficiency_submitters=_submitters(r for r, _run in found),
                efficiency_min=min(effs) if effs else None,
                efficiency_max=max(effs) if effs else None,
                one_gpu_tokens_per_s=_median([one for _r, (_e, one) in found]),
                ranked=_ranked(n=len(effs) if count > 1 else len(members), lab=lab, min_results=min_results),
                host=host_facts(newest),
                tokens_per_step=_tokens_per_step(newest.params),
                parameters=_positive_int(newest.extra.get("parameters")),
            )
        )
    return sorted(lines, key=lambda x: (x.version, x.precision, x.gpu_count, _interconnect_rank(x.interconnect)))


def allreduce_lines(results: Iterable[HostResult]) -> list[AllreduceLine]:
    """All-reduce results of one GPU by (version, GPU count, interconnect, message size)."""
    groups: dict[tuple[str, int, str, int, str], list[HostResult]] = defaultdict(list)
    for r in results:
        if r.workload == ALLREDUCE_WORKLOAD and r.gpu_count >= 2:
            groups[
                (
                    r.version,
                    r.gpu_count,
                    r.interconnect,
                    int(r.params.get("bytes") or 0),
                    str(r.params.get("dtype") or ""),
                )
            ].append(r)
    lines = []
    for (version, count, interconnect, size, dtype), members in groups.items():
        rank_min, rank_max = _ranks(members)
        lines.append(
            AllreduceLine(
                workload=ALLREDUCE_WORKLOAD,
                version=version,
                gpu_count=count,
                interconnect=interconnect,
                bytes=size,
                dtype=dtype,
                n=len(members),
                distinct_submitters=_submitters(members),
                busbw_gbs=statistics.median(r.value for r in members),
                algbw_gbs=_extra_median(members, "algbw_gbs"),
                time_us=_extra_median(members, "time_us"),
                rank_min=rank_min,
                rank_max=rank_max,
                host=host_facts(_newest(members)),
            )
        )
    return sorted(lines, key=lambda x: (x.version, x.gpu_count, _interconnect_rank(x.interconnect), x.bytes))


@dataclass(frozen=True)
class MeasuredScaling:
    """The measured scaling of a GPU at one GPU count: what the rankings and the fit calculator use."""

    gpu_count: int
    efficiency: float
    n: int  # runs behind the efficiency
    distinct_submitters: int
    interconnect: str
    tokens_per_s_per_gpu: float
    one_gpu_tokens_per_s: float | None
    ranked: bool

    @property
    def interconnect_label(self) -> str:
        return interconnect_label(self.interconnect)


def scaling_by_count(lines: Iterable[ScalingLine]) -> dict[int, MeasuredScaling]:
    """GPU count -> one measured efficiency: where several interconnects or versions were measured at a
    count, the line with the most runs (then the most submitters, then the newest run)."""
    best: dict[int, ScalingLine] = {}
    for line in lines:
        if line.efficiency is None or line.gpu_count < 2:
            continue
        current = best.get(line.gpu_count)
        key = (line.efficiency_n, line.efficiency_submitters, line.host.measured_at)
        if current is None or key > (current.efficiency_n, current.efficiency_submitters, current.host.measured_at):
            best[line.gpu_count] = line
    return {
        count: MeasuredScaling(
            gpu_count=count,
            efficiency=line.efficiency,
            n=line.efficiency_n,
            distinct_submitters=line.efficiency_submitters,
            interconnect=line.interconnect,
            tokens_per_s_per_gpu=line.tokens_per_s_per_gpu,
            one_gpu_tokens_per_s=line.one_gpu_tokens_per_s,
            ranked=line.ranked,
        )
        for count, line in sorted(best.items())
        if line.efficiency is not None
    }


def scaling_headline(by_count: Mapping[int, MeasuredScaling]) -> MeasuredScaling | None:
    """The rankings' figure: the measured efficiency at the largest GPU count that counts in the rankings."""
    ranked = [s for s in by_count.values() if s.ranked]
    return max(ranked, key=lambda s: s.gpu_count) if ranked else None
