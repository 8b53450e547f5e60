"""What pages call each workload, in the page's language.

Workload rows carry the English name and description their definition gave (the client's
workloads.json, the Lambda suites); pages show these instead, translated, and fall back to the
row's own text for a workload defined later.
"""

from __future__ import annotations

import re

from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

WORKLOAD_TEXT: dict[str, tuple[Promise, Promise]] = {
    "matmul": (
        _("Dense matrix multiply"),
        _(
            "C = A × B on random inputs in each precision (FP32 with TF32 off, TF32, FP16, BF16, FP8 on GPUs "
            "that have it), at 8192 and at the fastest size of a short sweep; the result is checked against "
            "a float64 reference. TFLOPS = 2·m·n·k per second."
        ),
    ),
    "matmul-stress": (
        _("Stress test: 8192×8192 FP32 matmul, 100 times"),
        _(
            "The stress test of the AutoDL performance guide: an 8192×8192 float32 matmul run 100 times back to "
            "back, on random inputs (zeros would run faster and inflate the score)."
        ),
    ),
    "membw-copy": (
        _("Memory bandwidth: copy"),
        _("Copies a buffer of at least 4 GiB in GPU memory; GB/s counts the bytes read and written."),
    ),
    "membw-triad": (
        _("Memory bandwidth: triad"),
        _("a = b + s·c over three buffers in GPU memory in one kernel; GB/s counts the three buffers."),
    ),
    "pcie-h2d": (
        _("Host-to-GPU transfer (PCIe)"),
        _("Copies 1 GiB from pinned host memory to the GPU: the host link, not the GPU's own memory."),
    ),
    "pcie-d2h": (
        _("GPU-to-host transfer (PCIe)"),
        _("Copies 1 GiB from the GPU to pinned host memory: the host link, not the GPU's own memory."),
    ),
    "transformer-train": (
        _("Transformer block training (BF16)"),
        _(
            "Forward and backward pass of one GPT block in BF16 (batch 8, sequence 2048, width 2048, 16 heads) "
            "on synthetic data; tokens per second."
        ),
    ),
    "transformer-infer": (
        _("Transformer block inference (BF16)"),
        _("The same block's forward pass for inference, all 2048 positions at once (prefill); tokens per second."),
    ),
    "llm-train": (
        _("LLM training step (Llama 3 8B layers, BF16)"),
        _(
            "Forward pass, backward pass and AdamW step of 4 decoder layers at Llama 3 8B's shapes, 8 sequences of "
            "4,096 tokens per step, in BF16 with FP32 master weights as mixed-precision training runs them, on "
            "synthetic data; tokens per second. Its model FLOP rate divided by the GPU's dense BF16 peak is its "
            "model FLOPs utilisation (MFU)."
        ),
    ),
    "transformer-train-ddp": (
        _("Transformer block training, data-parallel (BF16)"),
        _(
            "The same block's training step under PyTorch DistributedDataParallel (NCCL), one process per GPU, "
            "on 1, 2, 4 … N GPUs of one host; tokens per second of the whole group."
        ),
    ),
    "allreduce-busbw": (
        _("All-reduce bus bandwidth (NCCL)"),
        _(
            "NCCL all-reduce of FP32 buffers of 1 MiB to 1 GiB per GPU between the GPUs of one host; bus "
            "bandwidth as nccl-tests defines it."
        ),
    ),
    "resnet50": (_("ResNet-50 training"), _("ResNet-50 v1.5 image classification on ImageNet.")),
    "ssd": (_("SSD300 training"), _("SSD300 object detection on COCO 2017.")),
    "bert_base_squad": (
        _("BERT-Base fine-tuning (SQuAD)"),
        _("BERT-Base fine-tuned for question answering on SQuAD v1.1."),
    ),
    "bert_large_squad": (
        _("BERT-Large fine-tuning (SQuAD)"),
        _("BERT-Large fine-tuned for question answering on SQuAD v1.1."),
    ),
    "gnmt": (_("GNMT training"), _("GNMT v2 translation on WMT16 English–German.")),
    "ncf": (_("NCF training"), _("Neural collaborative filtering (recommendation) on MovieLens-20M.")),
    "tacotron2": (_("Tacotron 2 training"), _("Tacotron 2 speech synthesis on LJSpeech.")),
    "waveglow": (_("WaveGlow training"), _("WaveGlow vocoder on LJSpeech.")),
    "transformerxlbase": (_("Transformer-XL Base training"), _("Transformer-XL Base language model on WikiText-103.")),
    "transformerxllarge": (
        _("Transformer-XL Large training"),
        _("Transformer-XL Large language model on WikiText-103."),
    ),
    "llm-decode": (
        _("LLM inference: prefill and decode with a KV cache (Llama 3 8B shapes)"),
        _(
            "A Llama-architecture decoder with random weights at the shapes of Llama 3 8B, served from a KV cache: "
            "prefill fills the cache from the prompts in one pass, decode then generates one token per sequence "
            "per step; at batch 1 (one stream) and a large batch, in BF16 and, where the GPU has it, FP8. "
            "Tokens per second."
        ),
    ),
    "llm-decode-tp": (
        _("LLM serving sweep with tensor parallelism (Llama 3 70B shapes, NCCL)"),
        _(
            "The llm-decode serving sweep at the shapes of Llama 3 70B (80 layers, 70.6 B parameters), split over "
            "the GPUs of one host with Megatron's tensor parallelism (two all-reduces per layer over NCCL, captured "
            "in the step's CUDA graph), every layer run; a configuration that does not fit is skipped with the GiB "
            "it needs. BF16 and FP8. Output tokens per second of the group, per GPU and per user, with the energy "
            "of every GPU of the group."
        ),
    ),
    "inferencex-serving": (
        _("InferenceX serving runs"),
        _(
            "SemiAnalysis InferenceX: serving runs at a fixed number of requests in flight with random prompts of "
            "fixed lengths. Output tokens/s over every GPU of the run (InferenceX's total throughput per GPU times "
            "output / (input + output) length)."
        ),
    ),
    "trtllm-guide": (
        _("TensorRT-LLM performance guides"),
        _(
            "NVIDIA's TensorRT-LLM performance guides: trtllm-bench throughput runs at a stated number of requests "
            "in flight and batch size per rank, each result citing its guide and section. Output tokens/s per GPU "
            "as the report prints it."
        ),
    ),
    "llamacpp-tg": (
        _("llama.cpp text generation (one stream)"),
        _(
            "llama.cpp's llama-bench text generation: tokens per second of one stream (batch 1) on the whole GPU "
            "configuration (layers split across the GPUs), as published in XiongjieDai/GPU-Benchmarks-on-LLM-Inference."
        ),
    ),
    "llamacpp-pp": (
        _("llama.cpp prompt processing (prefill)"),
        _(
            "llama.cpp's llama-bench prompt processing: prompt tokens per second of the whole GPU configuration, "
            "as published in XiongjieDai/GPU-Benchmarks-on-LLM-Inference."
        ),
    ),
    "llm-eval-rate": (
        _("LLM generation rate, one request (llama.cpp or Ollama)"),
        _(
            "The generation rate of a single request (Ollama's eval rate or llama-bench tg128) on a whole system, "
            "as published in geerlingguy/ai-benchmarks."
        ),
    ),
}

# MLPerf Inference workloads are named by the importer "mlperf-<benchmark>-<scenario>-<unit>".
_MLPERF = re.compile(
    r"^mlperf-(?P<bench>.+)-(?P<scenario>offline|server|interactive|singlestream|multistream)-(?P<unit>.+)$"
)
_MLPERF_SCENARIOS = {
    "offline": pgettext_lazy("MLPerf scenario", "Offline"),
    "server": pgettext_lazy("MLPerf scenario", "Server"),
    "interactive": pgettext_lazy("MLPerf scenario", "Interactive"),
    "singlestream": pgettext_lazy("MLPerf scenario", "SingleStream"),
    "multistream": pgettext_lazy("MLPerf scenario", "MultiStream"),
}
# Units of workload rows, as pages show them.
UNITS = {
    "tokens/s": _("tokens/s"),
    "tokens/s per accelerator": _("tokens/s per accelerator"),
    "samples/s": _("samples/s"),
    "samples/s per accelerator": _("samples/s per accelerator"),
    "queries/s per accelerator": _("queries/s per accelerator"),
    "tasks/s per accelerator": _("tasks/s per accelerator"),
    "sequences/s": _("sequences/s"),
    "images/s": _("images/s"),
    "items/s": _("items/s"),
    "ms": _("ms"),
    "s": pgettext_lazy("unit", "s"),
}

# Lambda's suites: which one a version of its workloads belongs to.
LAMBDA_SLUGS = frozenset(
    ("resnet50", "ssd", "bert_base_squad", "bert_large_squad", "gnmt", "ncf", "tacotron2", "waveglow")
    + ("transformerxlbase", "transformerxllarge")
)


def workload_display_unit(unit: str) -> str:
    """A workload's unit for pages (TFLOPS, GB/s and units we do not know are shown as they are)."""
    return str(UNITS.get(unit, unit))


def _mlperf_text(slug: str, version: str) -> tuple[str, str] | None:
    found = _MLPERF.match(slug)
    if found is None:
        return None
    bench, scenario = found.group("bench").replace("_", "."), found.group("scenario")
    words = {"benchmark": bench, "scenario": str(_MLPERF_SCENARIOS[scenario]), "round": version}
    if found.group("unit").startswith("latency"):
        name = _("MLPerf Inference %(benchmark)s, %(scenario)s scenario: latency") % words
        description = (
            _(
                "MLPerf Inference v%(round)s, benchmark %(benchmark)s, %(scenario)s scenario: the published latency of the whole system (not divided)."
            )
            % words
        )
    else:
        name = _("MLPerf Inference %(benchmark)s, %(scenario)s scenario: throughput") % words
        description = (
            _(
                "MLPerf Inference v%(round)s, benchmark %(benchmark)s, %(scenario)s scenario: the published system result divided by the system's accelerator count."
            )
            % words
        )
    return str(name), str(description)


# NVIDIA's TensorRT-LLM performance overview, one workload per release (the version).
_TRTLLM_TEXT = {
    "trtllm-serving": (
        _("TensorRT-LLM %(release)s online serving at fixed request rates"),
        _(
            "NVIDIA's TensorRT-LLM performance overview, release %(release)s: online serving at fixed request rates "
            "(mean TTFT and inter-token latency published). The published output tokens/s of the configuration "
            "divided by its GPU count (TP x PP), or as published per GPU."
        ),
    ),
    "trtllm-throughput": (
        _("TensorRT-LLM %(release)s maximum throughput"),
        _(
            "NVIDIA's TensorRT-LLM performance overview, release %(release)s: maximum throughput (requests issued at "
            "an unbounded rate). The published output tokens/s of the configuration divided by its GPU count "
            "(TP x PP), or as published per GPU."
        ),
    ),
}


def _release_text(slug: str, version: str) -> tuple[str, str] | None:
    text = _TRTLLM_TEXT.get(slug)
    if text is None or not version:
        return None
    return str(text[0]) % {"release": version}, str(text[1]) % {"release": version}


def workload_display_name(*, slug: str, version: str = "", fallback: str = "") -> str:
    """The workload's name for pages; Lambda's newer suite is told apart by its version."""
    mlperf = _mlperf_text(slug, version) or _release_text(slug, version)
    if mlperf is not None:
        return mlperf[0]
    text = WORKLOAD_TEXT.get(slug)
    name = str(text[0]) if text else (fallback or slug)
    major = version.split(".")[0] if version else ""
    if slug in LAMBDA_SLUGS and major and major != "1":
        name = str(_("%(name)s, Lambda suite v%(major)s") % {"name": name, "major": major})
    return name


def workload_display_description(*, slug: str, version: str = "", fallback: str = "") -> str:
    mlperf = _mlperf_text(slug, version) or _release_text(slug, version)
    if mlperf is not None:
        return mlperf[1]
    text = WORKLOAD_TEXT.get(slug)
    return str(text[1]) if text else fallback
