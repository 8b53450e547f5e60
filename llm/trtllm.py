"""Read NVIDIA's TensorRT-LLM performance overview (``docs/source/performance/perf-overview.md``).

The file has changed layout between releases; all of these are read (``llm/data/trtllm/SOURCES.md``):

* one wide table (0.1x releases): header ``| Throughput (tokens / sec) | | GPU | H200 141GB HBM3 | ...``,
  a ``Precision`` row (FP8, FP16 per GPU column), then rows ``| model | TP size | input, output | ...``
  with the model and TP size carried down blank cells;
* one table per model (1.x releases) under a heading naming the model (``#### Llama 4 Scout``; or
  ``# Qwen3 235B A22B - RTX 6000 Pro Blackwell Server Edition``, model and GPU): rows ``ISL/OSL``,
  columns ``<GPU><br/>TP<n> (FP8)``, or ``**<n> GPUs**<br/>TP<a>,PP<b> (FP4)`` for the GPU named in
  the heading or on the line above the table. ``DEP<n>`` is attention data-parallel with the
  experts spread over the same ``n`` GPUs (``trtllm-bench --tp n --ep n`` with
  ``enable_attention_dp``), kept on the row as such;
* an online-serving table: model, GPU, TP, input and output length, QPS (``INF``: unbounded), the
  requests completed per second, mean TTFT and mean inter-token latency (ms), output tokens/s;
  precision from the sentence above it. A row whose offered rate kept fewer than one request in
  flight is rate-limited (``TrtllmRow.rate_limited``).

Units are read from the text above each table and the line right below it (``unit: output tokens
per second per GPU``): a per-GPU unit (``tokens/sec/gpu``, "per GPU") is per GPU; anything else is
the whole configuration's output tokens/s. Figures are as published;
an empty cell is no measurement. Pure text in, rows out: no database.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from llm.selectors.rows import model_slug_normalise


class TrtllmFormatError(ValueError):
    """The file has no table this reader knows; the message says what was found."""


@dataclass(frozen=True)
class TrtllmRow:
    """One published figure."""

    table: str  # throughput | serving
    model_name: str  # as published
    model: str | None  # llm.serving.shapes key, None for a model without a shape
    gpu_name: str  # as published
    tensor_parallel: int
    pipeline_parallel: int
    precision: str  # fp4 | fp8 | bf16 | fp16
    input_tokens: int
    output_tokens: int
    tokens_per_s: float  # output tokens/s as published (total or per GPU: per_gpu)
    per_gpu: bool
    version: str  # the release the table says it was measured with ("" when it names none)
    line: int  # 1-based line of the row in the file
    qps: float | None = None  # serving: request rate; None for an unbounded rate (INF)
    ttft_ms: float | None = None
    itl_ms: float | None = None
    expert_parallel: int = 1  # GPUs the experts are spread over (DEP<n>: n)
    attention_data_parallel: bool = False  # DEP<n>: attention data-parallel over the n GPUs
    requests_per_s: float | None = None  # serving: requests completed per second, as published

    @property
    def requests_in_flight(self) -> float | None:
        """A serving row at a fixed rate: the requests in flight on average, by Little's law, the
        completed rate (output tokens/s / output length) x a request's life (TTFT + (output - 1) x
        ITL). None at an unbounded rate or without both latencies."""
        if self.table != "serving" or self.qps is None or self.ttft_ms is None or self.itl_ms is None:
            return None
        rate = self.tokens_per_s_per_gpu * self.gpu_count / self.output_tokens
        return rate * (self.ttft_ms + (self.output_tokens - 1) * self.itl_ms) / 1000.0

    @property
    def rate_limited(self) -> bool:
        """The offered rate, not the GPUs, set the throughput: fewer than one request in flight on
        average, so the GPUs idled between requests (the table serves every request offered: its
        ``Tput(req/s)`` is the ``QPS``). Its output tokens/s is the offered rate x the output length,
        below what even one request after another gives at its tokens/s per user: a lower bound on
        what the configuration does, not a capacity."""
        in_flight = self.requests_in_flight
        return in_flight is not None and in_flight < 1.0

    @property
    def parallelism(self) -> str:
        """As the table names it: ``TP8``, ``DEP4``, ``TP2,PP2``."""
        width = f"{'DEP' if self.attention_data_parallel else 'TP'}{self.tensor_parallel}"
        return width + (f",PP{self.pipeline_parallel}" if self.pipeline_parallel > 1 else "")

    @property
    def gpu_count(self) -> int:
        return self.tensor_parallel * self.pipeline_parallel

    @property
    def tokens_per_s_per_gpu(self) -> float:
        return self.tokens_per_s if self.per_gpu else self.tokens_per_s / self.gpu_count


_PRECISIONS = {
    "fp4": "fp4",
    "nvfp4": "fp4",
    "fp8": "fp8",
    "bf16": "bf16",
    "fp16": "fp16",
    "int8": "int8",
    "int4": "int4",
}
_VERSION = re.compile(r"generated using version\s+v?(\d+(?:\.\d+)+)", re.IGNORECASE)
_PRECISION_SENTENCE = re.compile(r"\b(FP4|NVFP4|FP8|BF16|FP16|INT8|INT4)\s+precision", re.IGNORECASE)
_PER_GPU = re.compile(r"tokens/se?c?/gpu|per[- ]gpu", re.IGNORECASE)
_TP_PP = re.compile(r"(DEP|TP)\s*(\d+)(?:\s*,\s*PP\s*(\d+))?", re.IGNORECASE)
# trtllm-bench sizes ``max_batch_size`` from the KV cache only for NVFP4, FP8, FP8 block-scale and
# unquantised checkpoints (tensorrt_llm/bench/build/build.py, get_benchmark_engine_settings); a
# checkpoint of any other format, gpt-oss's MXFP4 among them, runs at the LLM API's default per
# rank (tensorrt_llm/llmapi/llm_args.py, max_batch_size = 2048): llm/data/trtllm/SOURCES.md.
BENCH_DEFAULT_MAX_BATCH = 2048
# Checkpoints published under another name with the architecture of a shape key.
MODEL_ALIASES = {"deepseek-r1-0528": "deepseek-r1"}
_PAREN_PRECISION = re.compile(r"\((FP4|NVFP4|FP8|BF16|FP16|INT8|INT4)\)", re.IGNORECASE)


def model_key(name: str) -> str | None:
    """A published model name -> a shape key: ``LLaMA v3.1 70B`` -> ``llama-3.1-70b``; None if unknown."""
    text = re.sub(r"\bv(\d)", r"\1", name.strip(), flags=re.IGNORECASE)
    alias = MODEL_ALIASES.get(re.sub(r"[\s_]+", "-", text.lower()))
    return alias or model_slug_normalise(text)


def _cells(line: str) -> list[str]:
    inner = line.strip()
    inner = inner[1:] if inner.startswith("|") else inner
    inner = inner[:-1] if inner.endswith("|") else inner
    return [c.strip() for c in inner.split("|")]


def _plain(cell: str) -> str:
    return re.sub(r"\*+", "", re.sub(r"<br\s*/?>", " ", cell, flags=re.IGNORECASE)).strip()


def _number(cell: str) -> float | None:
    text = cell.replace(",", "").strip()
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return value if value > 0 else None


def _lengths(cell: str) -> tuple[int, int] | None:
    found = re.fullmatch(r"\s*(\d+)\s*[/,]\s*(\d+)\s*", cell)
    return (int(found[1]), int(found[2])) if found else None


def _precision(text: str) -> str | None:
    found = _PAREN_PRECISION.search(text) or _PRECISION_SENTENCE.search(text)
    return _PRECISIONS[found[1].lower()] if found else None


@dataclass
class _Table:
    start: int  # 0-based line index of the header
    lines: list[tuple[int, list[str]]]  # (0-based line index, cells), separator rows removed
    context: str  # the text between the previous heading and the table
    heading: str  # the nearest heading above
    caption: str  # the non-empty line right above the table
    trailer: str = ""  # the non-empty line right below the table


def _tables(text: str) -> list[_Table]:
    lines = text.splitlines()
    tables: list[_Table] = []
    heading, context_start, i = "", 0, 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
            if not line.startswith("####"):  # a section: what it says of units and releases holds under it
                context_start = i
        if line.lstrip().startswith("|"):
            start = i
            rows = []
            while i < len(lines) and lines[i].lstrip().startswith("|"):
                cells = _cells(lines[i])
                if not all(re.fullmatch(r":?-+:?", c) for c in cells if c) or not any(cells):
                    rows.append((i, cells))
                i += 1
            caption = next((lines[j].strip() for j in range(start - 1, -1, -1) if lines[j].strip()), "")
            trailer = next((lines[j].strip() for j in range(i, len(lines)) if lines[j].strip()), "")
            tables.append(_Table(start, rows, "\n".join(lines[context_start:start]), heading, caption, trailer))
            continue
        i += 1
    return tables


def trtllm_parse(text: str, *, default_version: str = "") -> list[TrtllmRow]:
    """Every figure of the file's throughput and serving tables (see the module doc)."""
    rows: list[TrtllmRow] = []
    known = 0
    for table in _tables(text):
        header = [_plain(c) for c in table.lines[0][1]] if table.lines else []
        version_found = _VERSION.search(table.context)
        version = version_found[1] if version_found else default_version
        per_gpu = bool(_PER_GPU.search(table.context) or _PER_GPU.search(table.trailer)) or any(
            _PER_GPU.search(h) for h in header
        )
        if header and header[0].lower().startswith("throughput"):
            known += 1
            rows.extend(_wide(table, version=version, per_gpu=per_gpu))
        elif header and header[0].lower().startswith("sequence length"):
            known += 1
            rows.extend(_per_model(table, version=version, per_gpu=per_gpu))
        elif any("QPS" in _plain(c) for _, cells in table.lines[:3] for c in cells):
            known += 1
            rows.extend(_serving(table, version=version, per_gpu=per_gpu))
    if not known:
        raise TrtllmFormatError("no throughput or serving table of the TensorRT-LLM performance overview found")
    return rows


def _wide(table: _Table, *, version: str, per_gpu: bool) -> list[TrtllmRow]:
    header = [_plain(c) for c in table.lines[0][1]]
    gpus = header[3:]
    precisions: list[str | None] = [None] * len(gpus)
    out: list[TrtllmRow] = []
    model_name, tp = "", 0
    for index, cells in table.lines[1:]:
        if len(cells) > 1 and cells[1].lower() == "precision":
            precisions = [_PRECISIONS.get(c.strip().lower()) for c in cells[3:]]
            continue
        lengths = _lengths(cells[2]) if len(cells) > 2 else None
        if lengths is None:
            continue
        model_name = cells[0] or model_name
        tp = int(cells[1]) if cells[1].strip().isdigit() else tp
        for column, gpu in enumerate(gpus):
            value = _number(cells[3 + column]) if 3 + column < len(cells) else None
            precision = precisions[column] if column < len(precisions) else None
            if value is None or precision is None or not tp or not gpu:
                continue
            out.append(TrtllmRow("throughput", model_name, model_key(model_name), gpu, tp, 1, precision,
                                 lengths[0], lengths[1], value, per_gpu, version, index + 1))  # fmt: skip
    return out


def _per_model(table: _Table, *, version: str, per_gpu: bool) -> list[TrtllmRow]:
    header = table.lines[0][1]
    # "Qwen3 235B A22B - RTX 6000 Pro Blackwell Server Edition": the model, then the GPU of every column.
    model_name, _, heading_gpu = (part.strip() for part in table.heading.partition(" - "))
    columns: list[tuple[str, str, int, int, str] | None] = []
    for cell in header[1:]:
        text = _plain(cell)
        parallel = _TP_PP.search(text)
        precision = _precision(cell)
        if parallel is None or precision is None:
            columns.append(None)
            continue
        gpu = text[: parallel.start()].strip()
        if re.fullmatch(r"\d+\s+GPUs?", gpu):
            # "**4 GPUs**<br/>TP2,PP2": the GPU is named in the heading or on the line above the table
            gpu = heading_gpu or table.caption
        columns.append((gpu, parallel[1].upper(), int(parallel[2]), int(parallel[3] or 1), precision))
    out: list[TrtllmRow] = []
    for index, cells in table.lines[1:]:
        lengths = _lengths(cells[0]) if cells else None
        if lengths is None:
            continue
        for column, spec in enumerate(columns):
            value = _number(cells[1 + column]) if 1 + column < len(cells) else None
            if spec is None or value is None:
                continue
            gpu, mode, width, pp, precision = spec
            dep = mode == "DEP"
            out.append(TrtllmRow("throughput", model_name, model_key(model_name), gpu, width, pp, precision,
                                 lengths[0], lengths[1], value, per_gpu, version, index + 1,
                                 expert_parallel=width if dep else 1, attention_data_parallel=dep))  # fmt: skip
    return out


def _serving(table: _Table, *, version: str, per_gpu: bool) -> list[TrtllmRow]:
    header_at = next(i for i, (_, cells) in enumerate(table.lines) if any("QPS" in _plain(c) for c in cells))
    names = [_plain(c).lower() for c in table.lines[header_at][1]]

    def column(*words: str) -> int:
        return next(i for i, n in enumerate(names) if all(w in n for w in words))

    at = {
        "model": column("model"), "gpu": column("gpu"), "tp": column("tp"), "input": column("input"),
        "output": column("output length"), "qps": column("qps"), "ttft": column("ttft"), "itl": column("itl"),
        "tput": column("output tput"), "requests": column("req/s"),
    }  # fmt: skip
    precision = _precision(table.context)
    out: list[TrtllmRow] = []
    carried: dict[str, str] = {}
    for index, cells in table.lines[header_at + 1 :]:
        if len(cells) <= max(at.values()):
            continue
        for key in ("model", "gpu", "tp", "input", "output"):
            carried[key] = cells[at[key]] or carried.get(key, "")
        value, qps_text = _number(cells[at["tput"]]), cells[at["qps"]].strip().upper()
        if value is None or precision is None or not carried.get("tp", "").isdigit() or not carried.get("gpu"):
            continue
        if not (carried.get("input", "").isdigit() and carried.get("output", "").isdigit()):
            continue
        out.append(
            TrtllmRow(
                "serving",
                carried["model"],
                model_key(carried["model"]),
                carried["gpu"],
                int(carried["tp"]),
                1,
                precision,
                int(carried["input"]),
                int(carried["output"]),
                value,
                per_gpu,
                version,
                index + 1,
                qps=None if qps_text == "INF" else _number(qps_text),
                ttft_ms=_number(cells[at["ttft"]]),
                itl_ms=_number(cells[at["itl"]]),
                requests_per_s=_number(cells[at["requests"]]),
            )  # fmt: skip
        )
    return out
