"""Training on several GPUs of one host: the rate of n GPUs once they pay for talking to each other
over the link they actually have. Pure arithmetic on plain values.

Three ways to split the job, each priced; the fastest that fits is used and named:

* ``data``: data parallelism (PyTorch DDP). Every GPU holds the whole model and trains its own
  batch; after the backward pass the gradients are all-reduced in buckets of
  :data:`DDP_BUCKET_BYTES` (PyTorch's default ``bucket_cap_mb`` = 25). Only where the model's
  state fits on one GPU.
* ``zero3``: fully sharded data parallelism (ZeRO stage 3 / FSDP), the split the memory model
  assumes (fitcalc.plan): every layer's weights are all-gathered before its forward and again
  before its backward, and its gradients reduce-scattered; an all-gather or a reduce-scatter moves
  half the bytes of an all-reduce (Rajbhandari et al. 2020, arXiv:1910.02054, section 7.2: 1.5x
  the traffic of data parallelism).
* ``tensor``: tensor parallelism (Megatron-LM, Shoeybi et al. 2019, arXiv:1909.08053): every
  layer's matrices are split over the n GPUs, which train one batch together; each layer all-reduces
  the activations of every token (``tokens x hidden x 2`` bytes) twice in the forward pass and twice
  in the backward, twice more when activation checkpointing recomputes the forward.

An all-reduce of ``m`` bytes over n GPUs takes ``2 (n - 1) / n x m / bus bandwidth`` (nccl-tests'
definition of bus bandwidth). The bus bandwidth is the one *measured* on this GPU model, at this GPU
count and over this kind of link (allreduce-busbw of the benchmark client, interpolated on the
logarithm of the message size between the measured sizes, the nearest measured size beyond them);
else the datasheet figure of the link (llm.serving.comm: NVLink, PCIe with peer-to-peer, PCIe
staged through host memory, with their sources). Every count's note says which one was used.

Communication is not overlapped with compute here: ``step = compute + communication``. For
data parallelism on a host where the client measured DDP scaling at this count, the exposed
communication of that run (its step time on n GPUs minus on one) is compared with what this
model prices for the same run, and the job's communication is scaled by that ratio: the measured
run calibrates overlap, bucket overheads and the framework in one figure.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from django.utils.translation import gettext as _

from dashboard.multi_gpu_maths import AllreduceLine, ScalingLine, interconnect_label
from fitcalc.plan import SCALING_EFFICIENCY_PER_DOUBLING, CountRate, scaling_speedup
from llm.serving.comm import GpuLink
from llm.serving.comm import allreduce_seconds as datasheet_allreduce_seconds

DDP_BUCKET_BYTES = 25 * 2**20
ACTIVATION_BYTES = 2.0  # 16-bit activations
# The measured host's interconnect (params.interconnect of allreduce-busbw) for each link kind of
# the catalogue (llm.serving.comm.GpuLink.kind): a PCIe host measures both PCIe kinds.
MEASURED_INTERCONNECT = {"fabric": "nvlink", "pcie_p2p": "pcie", "pcie_host": "pcie"}
STRATEGIES = ("data", "zero3", "tensor")


@dataclass(frozen=True)
class MeasuredBusBandwidth:
    """All-reduce bus bandwidth measured on one GPU model at one GPU count over one interconnect."""

    gpu_count: int
    interconnect: str  # nvlink | pcie | mixed
    points: tuple[tuple[int, float], ...]  # (message bytes, bus bandwidth GB/s), by size
    n: int  # results behind the figures

    def busbw_gbs(self, message_bytes: float) -> float:
        """Interpolated on log(size) between measured sizes; the nearest measured size beyond them."""
        points = sorted(self.points)
        if message_bytes <= points[0][0]:
            return points[0][1]
        if message_bytes >= points[-1][0]:
            return points[-1][1]
        for (low_size, low_bw), (high_size, high_bw) in zip(points, points[1:], strict=False):
            if low_size <= message_bytes <= high_size:
                share = math.log(message_bytes / low_size) / math.log(high_size / low_size)
                return low_bw + share * (high_bw - low_bw)
        return points[-1][1]  # unreachable: the sizes are sorted


@dataclass(frozen=True)
class DdpCalibration:
    """A measured data-parallel run at one count: what the calibration needs (module doc)."""

    gpu_count: int
    efficiency: float  # tokens/s at n / (n x tokens/s at 1) of the same run
    one_gpu_tokens_per_s: float
    tokens_per_step: int | None  # per GPU; None: the run did not say (no calibration then)
    gradient_bytes: float | None
    interconnect: str
    n: int

    @property
    def interconnect_label(self) -> str:
        return interconnect_label(self.interconnect)


@dataclass(frozen=True)
class TrainingJob:
    """What the communication depends on, per GPU and step (from the memory breakdown)."""

    tokens_per_step: int  # batch x context, each GPU's own batch
    weight_bytes: float  # the weights all-gathered by ZeRO-3 (16-bit: 2 bytes a parameter)
    gradient_bytes: float  # the gradients all-reduced or reduce-scattered
    layers: int | None
    hidden: int | None
    checkpointing: bool


@dataclass(frozen=True)
class LinkFigures:
    """How this GPU model's GPUs reach each other: the catalogue link, and what was measured."""

    link: GpuLink
    measured: Mapping[int, MeasuredBusBandwidth]  # GPU count -> measured on the matching link
    ddp: Mapping[int, DdpCalibration]  # GPU count -> measured DDP run on the matching link

    def allreduce_seconds(self, *, gpus: int, message_bytes: float) -> float | None:
        measured = self.measured.get(gpus)
        if measured is not None:
            return 2.0 * (gpus - 1) / gpus * message_bytes / (measured.busbw_gbs(message_bytes) * 1e9)
        return datasheet_allreduce_seconds(link=self.link, gpus=gpus, message_bytes=message_bytes)

    def source(self, gpus: int, *, message_bytes: float) -> str:
        measured = self.measured.get(gpus)
        if measured is not None:
            return _(
                "all-reduce bus bandwidth measured on %(count)d of these GPUs over %(link)s: %(busbw).0f GB/s at "
                "%(size).0f MiB (gpuatlas-bench allreduce-busbw, n = %(n)d)"
            ) % {
                "count": gpus,
                "link": measured.interconnect,
                "busbw": measured.busbw_gbs(message_bytes),
                "size": message_bytes / 2**20,
                "n": measured.n,
            }
        bus = self.link.bus_gbs(gpus)
        return _("all-reduce over %(link)s from the datasheet: %(busbw).0f GB/s bus bandwidth (not measured)") % {
            "link": link_kind_label(self.link.kind(gpus)),
            "busbw": bus or 0.0,
        }


#: Bytes a parameter's gradient takes in the client's DDP run, by its precision.
GRADIENT_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4, "tf32": 4}


def link_figures(
    *, link: GpuLink, allreduce: Sequence[AllreduceLine], training: Sequence[ScalingLine], counts: Sequence[int]
) -> LinkFigures:
    """The catalogue link with what the client measured on it: for each count, the all-reduce lines and
    the DDP run measured at that count over the interconnect the catalogue says these GPUs use there
    (a PCIe host's figures never price an NVLink board, nor the reverse)."""
    measured: dict[int, MeasuredBusBandwidth] = {}
    ddp: dict[int, DdpCalibration] = {}
    for count in counts:
        kind = link.kind(count)
        # A fabric board whose bandwidth the catalogue lacks: what was measured on its NVLink prices it.
        wanted = "nvlink" if kind == "unknown" and link.fabric_unknown else MEASURED_INTERCONNECT.get(kind)
        if count < 2 or wanted is None:
            continue
        lines = [a for a in allreduce if a.gpu_count == count and a.interconnect == wanted and a.bytes > 0]
        if lines:
            newest = max(line.version for line in lines)
            lines = [a for a in lines if a.version == newest]
            measured[count] = MeasuredBusBandwidth(
                gpu_count=count,
                interconnect=lines[0].interconnect_label,
                points=tuple(sorted((a.bytes, a.busbw_gbs) for a in lines)),
                n=min(a.n for a in lines),
            )
        runs = [
            t
            for t in training
            if t.gpu_count == count and t.interconnect == wanted and t.efficiency and t.one_gpu_tokens_per_s
        ]  # fmt: skip
        if runs:
            run = max(runs, key=lambda t: (t.efficiency_n, t.host.measured_at))
            assert run.efficiency and run.one_gpu_tokens_per_s
            known = run.parameters and run.precision in GRADIENT_BYTES
            ddp[count] = DdpCalibration(
                gpu_count=count,
                efficiency=run.efficiency,
                one_gpu_tokens_per_s=run.one_gpu_tokens_per_s,
                tokens_per_step=run.tokens_per_step,
                gradient_bytes=float(run.parameters * GRADIENT_BYTES[run.precision])
                if known and run.parameters
                else None,
                interconnect=run.interconnect,
                n=run.efficiency_n,
            )
    return LinkFigures(link=link, measured=measured, ddp=ddp)


def link_kind_label(kind: str) -> str:
    return {
        "fabric": _("NVLink or another GPU fabric"),
        "pcie_p2p": _("PCIe with peer-to-peer transfers"),
        "pcie_host": _("PCIe without peer-to-peer (staged through host memory)"),
    }.get(kind, _("an unknown link"))


def _ddp_seconds(job_gradient_bytes: float, *, link: LinkFigures, gpus: int) -> float | None:
    if job_gradient_bytes <= 0:
        return 0.0
    bucket = min(job_gradient_bytes, DDP_BUCKET_BYTES)
    one = link.allreduce_seconds(gpus=gpus, message_bytes=bucket)
    return None if one is None else one * job_gradient_bytes / bucket


def ddp_overhead_factor(*, link: LinkFigures, gpus: int) -> float | None:
    """Measured exposed communication of the client's DDP run at ``gpus`` over this model's price of
    the same run (module doc); None where no run was measured at this count on this link."""
    run = link.ddp.get(gpus)
    if run is None or run.efficiency <= 0 or run.one_gpu_tokens_per_s <= 0:
        return None
    if not run.tokens_per_step or not run.gradient_bytes:
        return None
    compute = run.tokens_per_step / run.one_gpu_tokens_per_s
    exposed = compute / run.efficiency - compute
    priced = _ddp_seconds(run.gradient_bytes, link=link, gpus=gpus)
    if not priced or priced <= 0:
        return None
    return max(0.0, exposed / priced)


@dataclass(frozen=True)
class StrategyRate:
    strategy: str
    per_s: float
    communication_s: float  # per step
    compute_s: float  # per step


def strategy_rates(
    *, per_gpu_per_s: float, gpus: int, job: TrainingJob, link: LinkFigures, fits_whole: bool
) -> list[StrategyRate]:
    """The rate of ``gpus`` GPUs under each split that can be priced (module doc)."""
    compute = job.tokens_per_step / per_gpu_per_s
    out: list[StrategyRate] = []
    if fits_whole:
        comm = _ddp_seconds(job.gradient_bytes, link=link, gpus=gpus)
        factor = ddp_overhead_factor(link=link, gpus=gpus)
        if comm is not None:
            comm *= 1.0 if factor is None else factor
            out.append(StrategyRate("data", gpus * job.tokens_per_step / (compute + comm), comm, compute))
    layers = job.layers or 1
    gather = link.allreduce_seconds(gpus=gpus, message_bytes=job.weight_bytes / layers)
    scatter = link.allreduce_seconds(gpus=gpus, message_bytes=max(job.gradient_bytes, 1.0) / layers)
    if gather is not None and scatter is not None:
        # Two all-gathers of the weights and one reduce-scatter of the gradients, each half an all-reduce.
        comm = layers * (gather + (scatter / 2 if job.gradient_bytes > 0 else 0.0))
        out.append(StrategyRate("zero3", gpus * job.tokens_per_step / (compute + comm), comm, compute))
    if job.layers and job.hidden:
        one = link.allreduce_seconds(gpus=gpus, message_bytes=job.tokens_per_step * job.hidden * ACTIVATION_BYTES)
        if one is not None:
            comm = job.layers * one * (6 if job.checkpointing else 4)
            out.append(StrategyRate("tensor", job.tokens_per_step / (compute / gpus + comm), comm, compute / gpus))
    return out


def strategy_label(strategy: str) -> str:
    return {
        "data": _("data parallel (DDP)"),
        "zero3": _("fully sharded (ZeRO-3 / FSDP)"),
        "tensor": _("tensor parallel"),
    }[strategy]


def training_count_rates(
    *,
    per_gpu: float | None,
    basis: str,
    counts: Sequence[int],
    job: TrainingJob,
    link: LinkFigures,
    fits_whole: bool,
    typical_error: float | None = None,
    note: str = "",
) -> dict[int, CountRate]:
    """Training on n GPUs: one GPU's rate, then for each count the fastest priced split (module doc);
    where the link cannot be priced, the assumed speed-up of fitcalc.plan, said so."""
    out: dict[int, CountRate] = {}
    for count in counts:
        if per_gpu is None:
            out[count] = CountRate(None, "none", "single" if count == 1 else "assumed")
            continue
        if count == 1:
            out[count] = CountRate(per_gpu, basis, "single", note, typical_error)
            continue
        rates = strategy_rates(per_gpu_per_s=per_gpu, gpus=count, job=job, link=link, fits_whole=fits_whole)
        run = link.ddp.get(count)
        if not rates and run is not None and fits_whole:
            as_measured = _(
                "data-parallel scaling measured on this GPU: %(efficiency).0f%% at %(count)d GPUs "
                "(transformer-train-ddp, n = %(n)d, %(link)s); the link's bandwidth is not known, so the "
                "measured efficiency is used as it is"
            ) % {"efficiency": run.efficiency * 100, "count": count, "n": run.n, "link": run.interconnect_label}
            out[count] = CountRate(
                per_gpu * count * run.efficiency,
                basis,
                "measured",
                f"{note}; {as_measured}" if note else as_measured,
                typical_error,
                configuration="data",
            )
            continue
        if not rates:
            speedup = scaling_speedup(count=count)
            assumed = _(
                "the link between these GPUs is not known, so communication is not priced: each doubling is "
                "assumed to keep %(kept).0f%% of the per-GPU speed (%(speedup).2f× on %(count)d GPUs)"
            ) % {"kept": SCALING_EFFICIENCY_PER_DOUBLING * 100, "speedup": speedup, "count": count}
            out[count] = CountRate(
                per_gpu * speedup, basis, "assumed", f"{note}; {assumed}" if note else assumed, typical_error
            )
            continue
        best = max(rates, key=lambda r: r.per_s)
        message = _strategy_message(best, job=job, gpus=count)
        scaling_note = _(
            "%(strategy)s on %(count)d GPUs: %(efficiency).0f%% of %(count)d× one GPU, %(comm).1f ms of "
            "communication per %(compute).1f ms step of compute, not overlapped; %(source)s"
        ) % {
            "strategy": strategy_label(best.strategy),
            "count": count,
            "efficiency": best.per_s / (count * per_gpu) * 100,
            "comm": best.communication_s * 1e3,
            "compute": best.compute_s * 1e3,
            "source": link.source(count, message_bytes=message),
        }
        if best.strategy == "data" and run is not None:
            scaling_note += _(
                "; scaled to the DDP scaling measured on this GPU (%(efficiency).0f%% at %(count)d GPUs, "
                "transformer-train-ddp, n = %(n)d)"
            ) % {"efficiency": run.efficiency * 100, "count": count, "n": run.n}
        measured = link.measured.get(count) is not None
        out[count] = CountRate(
            best.per_s,
            basis,
            "measured" if measured else "modelled",
            f"{note}; {scaling_note}" if note else scaling_note,
            typical_error,
            configuration=best.strategy,
        )
    return out


def _strategy_message(rate: StrategyRate, *, job: TrainingJob, gpus: int) -> float:
    """The message size whose bus bandwidth priced the strategy (for the note)."""
    if rate.strategy == "data":
        return min(job.gradient_bytes, DDP_BUCKET_BYTES) or DDP_BUCKET_BYTES
    if rate.strategy == "zero3":
        return job.weight_bytes / (job.layers or 1)
    return job.tokens_per_step * (job.hidden or 0) * ACTIVATION_BYTES
