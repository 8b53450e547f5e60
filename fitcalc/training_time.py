"""How long LLM training takes on a cluster, and how many GPUs a deadline needs: pure functions.

    time = model FLOPs / (GPUs x dense peak x MFU) + exposed communication

* Model FLOPs: ``6 N D`` for pretraining and full fine-tuning (forward 2 N, backward 4 N per
  token), ``4 N D`` for LoRA: the frozen weights need no weight gradients, so the backward pass
  computes only the activation gradients (2 N) and the adapters' own FLOPs (under 1 % at the usual
  ranks) are left out. Plus Kaplan et al.'s attention term (arXiv:2001.08361, Table 1) where the
  shape is given: the MFU is fitted with the same count
  (``benchmarks_app.services.mlperf_training_import``).
* MFU: fitted per GPU architecture on the MLPerf Training runs, against the dense peak of the
  format the run trained in (FP8 where the GPU has it). The fitted runs used tensor and pipeline
  parallelism inside their nodes, so those costs are inside the MFU.
* Exposed communication: what the model adds beyond the measured runs, the data-parallel
  gradient all-reduce of each step that the backward pass cannot hide (:func:`allreduce_s`:
  inside a node over the scale-up link, between nodes over every network port of the node, as
  NCCL's hierarchical rings do). The gradient a GPU holds is the trainable parameters' (all of
  them; LoRA's adapters only) in BF16 over the model-parallel degree; ZeRO-3 adds the parameter
  all-gathers of the forward and backward passes (1.5x the traffic; ZeRO-1/2 move the same bytes
  as plain data parallelism). Exposed per step = max(0, all-reduce time - backward time), the
  backward being 2/3 of the step's compute (4 N of 6 N; 2 N of 4 N for LoRA).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

#: BF16 gradients: bytes per trainable parameter that the all-reduce moves.
GRADIENT_BYTES = 2.0
#: Llama 2's global batch, 4M tokens per step (Touvron et al. 2023, arXiv:2307.09288, section 2.2).
DEFAULT_BATCH_TOKENS = 4 * 1024 * 1024
#: ZeRO-3's traffic over plain data parallelism: the reduce-scatter of the gradients plus two
#: all-gathers of the parameters (Rajbhandari et al. 2020, arXiv:1910.02054, section 7.2.2).
ZERO3_TRAFFIC = 1.5
#: Share of the adapter parameters in a LoRA fine-tune's model, for its gradient traffic: rank 16
#: on the attention and MLP projections of a Llama-shaped model is about 0.5 %.
LORA_TRAINABLE_SHARE = 0.005
SECONDS_PER_DAY = 86_400.0
#: Bytes of model state per parameter: BF16 weights and gradients, FP32 master weights and Adam's
#: two moments (Rajbhandari et al. 2020, arXiv:1910.02054, section 3.1: 16 bytes); LoRA keeps
#: only the frozen BF16 weights of the base model.
STATE_BYTES_FULL, STATE_BYTES_LORA = 16.0, 2.0
#: Share of GPU memory the model state may take: the rest holds activations and the runtime.
STATE_MEMORY_SHARE = 0.8


def training_flops(
    *,
    params: float,
    tokens: float,
    lora: bool = False,
    layers: int = 0,
    context: int = 0,
    attention_width: int = 0,
    checkpointing: bool = False,
) -> float:
    """FLOPs of a training run (module doc): Kaplan et al.'s forward per token ``2 N + 2 L s
    d_attn`` (the attention term where the shape is given), x3 for training, x2 for LoRA, one
    forward more with activation checkpointing (the forward runs again in the backward pass)."""
    if params <= 0 or tokens <= 0:
        raise ValueError("params and tokens must be positive")
    forward = 2.0 * params + 2.0 * max(0, layers) * max(0, context) * max(0, attention_width)
    return ((2.0 if lora else 3.0) + (1.0 if checkpointing else 0.0)) * forward * tokens


@dataclass(frozen=True)
class Cluster:
    """GPUs as nodes x GPUs per node, with the per-GPU figures the time model needs."""

    nodes: int
    gpus_per_node: int
    peak_tflops: float  # dense peak per GPU in the training format
    mfu: float  # fitted model FLOP utilisation against that peak
    scale_up_gbs: float  # per GPU, one direction, inside a node (GB/s)
    scale_out_gbs: float  # per GPU, one direction, between nodes (GB/s)

    def __post_init__(self) -> None:
        if self.nodes < 1 or self.gpus_per_node < 1:
            raise ValueError("nodes and GPUs per node must be at least 1")
        if not 0 < self.mfu <= 1:
            raise ValueError("MFU must be in (0, 1]")
        if self.peak_tflops <= 0:
            raise ValueError("the peak must be positive")

    @property
    def gpus(self) -> int:
        return self.nodes * self.gpus_per_node

    @property
    def achieved_flops(self) -> float:
        """Model FLOP/s of the whole cluster: never above GPUs x peak."""
        return self.gpus * self.peak_tflops * 1e12 * self.mfu


@dataclass(frozen=True)
class Job:
    params: float
    tokens: float
    lora: bool = False
    layers: int = 0  # with context and attention_width: the attention FLOPs; 0 leaves them out
    context: int = 0
    attention_width: int = 0  # query heads x head dimension
    model_parallel: int = 1  # GPUs one model replica is split over (tensor x pipeline)
    zero3: bool = False
    batch_tokens: float = DEFAULT_BATCH_TOKENS
    checkpointing: bool = False  # activation checkpointing: one more forward per step


@dataclass(frozen=True)
class TrainingTime:
    seconds: float
    compute_s: float
    exposed_communication_s: float
    gpus: int

    @property
    def days(self) -> float:
        return self.seconds / SECONDS_PER_DAY

    @property
    def gpu_hours(self) -> float:
        return self.seconds * self.gpus / 3600.0


def job_flops(job: Job) -> float:
    return training_flops(
        params=job.params, tokens=job.tokens, lora=job.lora, layers=job.layers, context=job.context,
        attention_width=job.attention_width, checkpointing=job.checkpointing,
    )  # fmt: skip


def allreduce_s(*, job: Job, cluster: Cluster) -> float:
    """One step's data-parallel gradient all-reduce, hierarchical as NCCL runs it on a cluster.

    A GPU holds ``S`` = trainable parameters x 2 bytes / model-parallel degree. The data-parallel
    peers inside a node (``g`` = GPUs per node / model-parallel degree) reduce over the scale-up
    link first (a ring: ``2 (g - 1) / g x S``); the nodes then all-reduce the node's share over all
    the node's network ports together (``2 (n - 1) / n x S / g`` per port, each GPU's port at
    ``scale_out_gbs``). A model split over a whole node leaves each GPU's peers in other nodes only.
    """
    model_parallel = max(1, job.model_parallel)
    if cluster.gpus // model_parallel <= 1:
        return 0.0
    trainable = job.params * (LORA_TRAINABLE_SHARE if job.lora else 1.0)
    shard = trainable * GRADIENT_BYTES / model_parallel * (ZERO3_TRAFFIC if job.zero3 else 1.0)
    in_node = max(1, cluster.gpus_per_node // model_parallel)
    seconds = 0.0
    if in_node > 1:
        if cluster.scale_up_gbs <= 0:
            raise ValueError("the scale-up bandwidth must be positive")
        seconds += 2.0 * (in_node - 1) / in_node * shard / (cluster.scale_up_gbs * 1e9)
    if cluster.nodes > 1:
        if cluster.scale_out_gbs <= 0:
            raise ValueError("the scale-out bandwidth must be positive")
        nodes = cluster.nodes
        seconds += 2.0 * (nodes - 1) / nodes * shard / in_node / (cluster.scale_out_gbs * 1e9)
    return seconds


def exposed_communication_s(*, job: Job, cluster: Cluster) -> float:
    """The all-reduce time the backward pass does not hide, over the whole run (module doc)."""
    per_step = allreduce_s(job=job, cluster=cluster)
    if per_step == 0.0:
        return 0.0
    steps = max(1.0, job.tokens / job.batch_tokens)
    step_flops = job_flops(job) / steps
    backward_s = (0.5 if job.lora else 2.0 / 3.0) * step_flops / cluster.achieved_flops
    return steps * max(0.0, per_step - backward_s)


def training_time(*, job: Job, cluster: Cluster) -> TrainingTime:
    """How long ``job`` takes on ``cluster`` (module doc)."""
    compute = job_flops(job) / cluster.achieved_flops
    exposed = exposed_communication_s(job=job, cluster=cluster)
    return TrainingTime(compute + exposed, compute, exposed, cluster.gpus)


def gpus_for_days(
    *, job: Job, days: float, gpus_per_node: int, template: Cluster, max_nodes: int = 100_000
) -> TrainingTime | None:
    """The fewest nodes of ``gpus_per_node`` GPUs (``template``'s figures) that finish ``job`` within
    ``days``; None when even ``max_nodes`` do not. Time falls as nodes are added (the compute term
    falls as 1/nodes, the exposed term cannot grow past the ring's bound), so a bisection finds it."""
    if days <= 0:
        raise ValueError("days must be positive")

    def time_on(nodes: int) -> TrainingTime:
        cluster = Cluster(nodes, gpus_per_node, template.peak_tflops, template.mfu,
                          template.scale_up_gbs, template.scale_out_gbs)  # fmt: skip
        return training_time(job=job, cluster=cluster)

    limit = days * SECONDS_PER_DAY
    if time_on(max_nodes).seconds > limit:
        return None
    low, high = 1, max_nodes
    while low < high:
        middle = (low + high) // 2
        if time_on(middle).seconds <= limit:
            high = middle
        else:
            low = middle + 1
    return time_on(low)


def model_parallel_min(*, params: float, memory_gib: float, lora: bool = False) -> int:
    """The fewest GPUs (a power of two, as tensor x pipeline splits are) whose memory holds one
    replica's model state."""
    if params <= 0 or memory_gib <= 0:
        raise ValueError("params and memory must be positive")
    state = params * (STATE_BYTES_LORA if lora else STATE_BYTES_FULL)
    needed = state / (memory_gib * 2**30 * STATE_MEMORY_SHARE)
    return 1 if needed <= 1 else 2 ** math.ceil(math.log2(needed))


def nodes_for_gpus(*, gpus: int, gpus_per_node: int) -> tuple[int, int]:
    """``gpus`` as (nodes, GPUs per node): whole nodes where there are more GPUs than one node holds."""
    if gpus < 1:
        raise ValueError("gpus must be at least 1")
    if gpus <= gpus_per_node:
        return 1, gpus
    return math.ceil(gpus / gpus_per_node), gpus_per_node
