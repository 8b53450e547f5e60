"""What pages call each workload, in the page's language.

Workload rows carry the English name and description their definition gave (the client's
workloads.json, the Lambda suites); pages show these instead, translated, and fall back to the
row's own text for a workload defined later.
"""

from __future__ import annotations

from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

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
}

# Lambda's suites: which one a version of its workloads belongs to.
LAMBDA_SLUGS = frozenset(
    ("resnet50", "ssd", "bert_base_squad", "bert_large_squad", "gnmt", "ncf", "tacotron2", "waveglow")
    + ("transformerxlbase", "transformerxllarge")
)


def workload_display_name(*, slug: str, version: str = "", fallback: str = "") -> str:
    """The workload's name for pages; Lambda's newer suite is told apart by its version."""
    text = WORKLOAD_TEXT.get(slug)
    name = str(text[0]) if text else (fallback or slug)
    major = version.split(".")[0] if version else ""
    if slug in LAMBDA_SLUGS and major and major != "1":
        name = str(_("%(name)s, Lambda suite v%(major)s") % {"name": name, "major": major})
    return name


def workload_display_description(*, slug: str, fallback: str = "") -> str:
    text = WORKLOAD_TEXT.get(slug)
    return str(text[1]) if text else fallback
