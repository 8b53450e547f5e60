"""What every workload shares: the run context, sizes, the CUDA event timer and seeded inputs."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..energy import EnergyPolicy
from ..timing import PerfCounterTimer, Timer, TimingPolicy

GiB = 1024**3
MiB = 1024**2


class Unsupported(Exception):
    """This GPU or build cannot run the case (no FP8, not enough memory, no CUDA): skipped, not failed."""


@dataclass(frozen=True)
class SizeProfile:
    """The documented shapes (``gpu``) and the tiny ones that let the test-suite run the same code on a CPU."""

    name: str
    matmul_fixed: int
    matmul_candidates: tuple[int, ...]
    stress_size: int
    stress_matmuls: int
    membw_buffer_bytes: int
    pcie_bytes: int
    transformer: dict[str, int]
    correctness_slice: int
    llm: dict[str, Any]
    llm_tp: dict[str, Any]
    # llm-train: how many of the llm shape's layers, the sequence length and the sequences per optimizer step.
    llm_train: dict[str, int]
    allreduce_bytes: tuple[int, ...]
    # The serving sweep's energy window (energy.py): at least 5 s of steady steps on a GPU.
    serve_energy: EnergyPolicy = EnergyPolicy()


GPU_SIZES = SizeProfile(
    name="gpu",
    matmul_fixed=8192,
    matmul_candidates=(4096, 6144, 8192, 12288, 16384),
    stress_size=8192,
    stress_matmuls=100,
    membw_buffer_bytes=4 * GiB,
    pcie_bytes=1 * GiB,
    transformer={"batch": 8, "seq_len": 2048, "d_model": 2048, "n_heads": 16, "d_ff": 8192},
    correctness_slice=256,
    # Llama 3 8B (Meta's config.json for Meta-Llama-3-8B); prompt and output lengths as llama.cpp's pp512 / tg128.
    llm={
        "model": "llama3-8b",
        "n_layers": 32,
        "d_model": 4096,
        "n_heads": 32,
        "n_kv_heads": 8,
        "d_ff": 14336,
        "vocab": 128256,
        "rope_theta": 500000.0,
        "prompt_len": 512,
        "generated_tokens": 128,
        "batches": (1, 128),
        # The serving sweep: tokens of context already cached when the timed steps run (a chat turn
        # and a long document).
        "serve_contexts": (1024, 4096),
    },
    # Llama 3 70B (Meta's config.json for Meta-Llama-3-70B): the tensor-parallel sweep's model.
    llm_tp={
        "model": "llama3-70b",
        "n_layers": 80,
        "d_model": 8192,
        "n_heads": 64,
        "n_kv_heads": 8,
        "d_ff": 28672,
        "vocab": 128256,
        "rope_theta": 500000.0,
    },
    # 4 of Llama 3 8B's 32 layers with their weights, gradients and AdamW state take about 16 GiB, so a
    # 24 GB card trains them a sequence at a time; an 80 GB card takes the 8 sequences of a step at once.
    llm_train={"n_layers": 4, "seq_len": 4096, "batch": 8},
    # nccl-tests' usual sweep points: latency-bound, middle, and bandwidth-bound (1 GiB).
    allreduce_bytes=(1 * MiB, 8 * MiB, 64 * MiB, 1 * GiB),
)

CPU_TINY_SIZES = SizeProfile(
    name="cpu-tiny",
    matmul_fixed=128,
    matmul_candidates=(64, 128, 192),
    stress_size=64,
    stress_matmuls=100,
    membw_buffer_bytes=4 * MiB,
    pcie_bytes=1 * MiB,
    transformer={"batch": 2, "seq_len": 32, "d_model": 64, "n_heads": 4, "d_ff": 256},
    correctness_slice=32,
    llm={
        "model": "tiny-test",
        "n_layers": 2,
        "d_model": 64,
        "n_heads": 4,
        "n_kv_heads": 2,
        "d_ff": 128,
        "vocab": 256,
        "rope_theta": 10000.0,
        "prompt_len": 8,
        "generated_tokens": 4,
        "batches": (1, 3),
        "serve_contexts": (16, 64),
        # No GPU memory to run out of on the CPU: the sweep stops where this much would be full.
        "serve_cpu_memory_bytes": 370_000,
    },
    llm_tp={
        "model": "tiny-test-tp",
        "n_layers": 2,
        "d_model": 64,
        "n_heads": 4,
        "n_kv_heads": 2,
        "d_ff": 128,
        "vocab": 256,
        "rope_theta": 10000.0,
        "serve_cpu_memory_bytes": 370_000,
    },
    # Two micro-batches of two: the gradient accumulation runs as on a GPU that holds one sequence at a time.
    llm_train={"n_layers": 2, "seq_len": 32, "batch": 4, "cpu_micro_batch": 2},
    allreduce_bytes=(4096, 65536),
    # No energy counter on the CPU: the window only has to run the code.
    serve_energy=EnergyPolicy(warmup_s=0.0, window_s=0.002, chunk_s=0.001),
)


@dataclass(frozen=True)
class ServePlan:
    """Which serving points to measure (``run --serve-contexts / --serve-max-concurrency``).

    ``contexts`` None: the size profile's (1,024 and 4,096 tokens on a GPU). Concurrency doubles from
    1 until the KV cache no longer fits beside the weights, or past ``max_concurrency``.
    """

    contexts: tuple[int, ...] | None = None
    max_concurrency: int = 1024
    # llm-decode's phases to run (``run --llm-phases``): prefill, decode (the 128-token graph), serve.
    phases: tuple[str, ...] = ("prefill", "decode", "serve")
    # The precisions of the tensor-parallel sweep (``run --precisions``; the single-GPU sweep takes
    # them from the run's precisions).
    precisions: tuple[str, ...] = ("bf16", "fp8")


def _no_reading() -> float | None:
    return None


class CudaEventTimer:
    """CUDA events recorded around the calls on the current stream; waits for the end event."""

    method = "cuda_events"

    def __init__(self, torch: Any) -> None:
        self._torch = torch

    def time(self, fn: Callable[[], object], iterations: int) -> float:
        start = self._torch.cuda.Event(enable_timing=True)
        end = self._torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iterations):
            fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1000.0


@dataclass
class Context:
    """One device's run: PyTorch, the device, sizes and the timing policy."""

    torch: Any
    device: Any  # torch.device
    cpu_only: bool
    sizes: SizeProfile
    policy: TimingPolicy
    seed: int
    compute_capability: tuple[int, int] | None
    l2_bytes: int | None
    cache: dict[str, Any] = field(default_factory=dict)
    serve: ServePlan = field(default_factory=ServePlan)
    # The GPU's total energy counter in mJ (NVML), None where there is none; its power reading in W
    # (NVML), and the power limit the board enforces (W), None where unknown.
    energy_mj: Callable[[], float | None] = _no_reading
    power_w: Callable[[], float | None] = _no_reading
    power_limit_w: float | None = None

    @property
    def timer(self) -> Timer:
        if self.cpu_only:
            return PerfCounterTimer()
        return CudaEventTimer(self.torch)

    def synchronize(self) -> None:
        if not self.cpu_only:
            self.torch.cuda.synchronize(self.device)

    def generator(self, offset: int) -> Any:
        """A seeded generator on the device: every run draws the same inputs, never zeros."""
        generator = self.torch.Generator(device=self.device)
        generator.manual_seed(self.seed * 1000 + offset)
        return generator

    def free_bytes(self) -> int | None:
        if self.cpu_only:
            return None
        free, _total = self.torch.cuda.mem_get_info(self.device)
        return int(free)

    def forget(self, key: str) -> None:
        """Drop what cases shared under ``key`` (the serving sweep's model), then give the memory back."""
        self.cache.pop(key, None)
        self.release()

    def release(self) -> None:
        """Hand cached blocks back so that the next case starts from the same free memory."""
        if not self.cpu_only:
            self.torch.cuda.synchronize(self.device)
            self.torch.cuda.empty_cache()


def require_ampere_for(ctx: Context, precision: str) -> None:
    """TF32 and BF16 tensor cores arrived with Ampere (8.0); older GPUs would report an FP32 figure as TF32."""
    if ctx.cpu_only or precision not in {"tf32", "bf16"}:
        return
    if ctx.compute_capability is None or ctx.compute_capability < (8, 0):
        raise Unsupported(f"{precision} needs compute capability 8.0 or newer; this GPU is {ctx.compute_capability}")


@dataclass
class Prepared:
    """A case ready to time: ``fn`` is one call, ``work`` what one call does in the unit's numerator."""

    fn: Callable[[], object]
    work: float
    check: Callable[[], dict[str, Any]] | None = None
    extra: Callable[[float], dict[str, Any]] | None = None
    policy: TimingPolicy | None = None
    teardown: Callable[[], None] | None = None
    # Multi-GPU cases: what one rank's call does, for the per-GPU figures (``work`` is the group's).
    per_gpu_work: float | None = None


@dataclass
class Case:
    """One result to measure: a workload id, precision, the params that define it, and its builder."""

    workload: str
    precision: str
    params: dict[str, Any]
    build: Callable[[Context], Prepared]
    label: str


def relative_errors(torch: Any, out: Any, ref: Any) -> tuple[float, float]:
    """(||out - ref|| / ||ref||, max|out - ref| / max|ref|) in float64; NaN becomes infinity."""
    out64 = out.to(torch.float64)
    ref64 = ref.to(torch.float64)
    if not bool(torch.isfinite(out64).all()):
        return math.inf, math.inf
    diff = out64 - ref64
    ref_norm = float(torch.linalg.vector_norm(ref64))
    ref_max = float(ref64.abs().max())
    if ref_norm == 0 or ref_max == 0:
        return math.inf, math.inf
    return float(torch.linalg.vector_norm(diff)) / ref_norm, float(diff.abs().max()) / ref_max


def correctness_record(*, method: str, rel: float, max_rel: float, tolerance: float) -> dict[str, Any]:
    finite = math.isfinite(rel) and math.isfinite(max_rel)
    return {
        "method": method,
        "rel_error": float(f"{rel:.4g}") if finite else None,
        "max_rel_error": float(f"{max_rel:.4g}") if finite else None,
        "tolerance": tolerance,
        "passed": bool(finite and rel <= tolerance),
    }
