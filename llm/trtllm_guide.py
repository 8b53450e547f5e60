"""Read the ``trtllm-bench`` runs of a TensorRT-LLM performance guide (markdown).

NVIDIA's guides (``docs/source/blogs/Best_perf_practice_on_DeepSeek-R1_in_TensorRT-LLM.md``; copies
and their commits in ``llm/data/trtllm/SOURCES.md``) give, per ``###`` section, the commands that
ran a benchmark and the report ``trtllm-bench`` printed. One section with a report is one run:

* the GPU: the section title's first word (``### H200 max-throughput``);
* the checkpoint and the parallelism: the ``trtllm-bench`` command (``--model``/``-m``, ``--tp``,
  ``--pp``, ``--ep``, ``--concurrency`` (requests in flight in the whole system),
  ``--max_batch_size`` (per rank), ``--max_num_tokens``), with or without ``\\`` line
  continuations;
* the options: the YAML the section writes with ``cat > ... <<EOF`` (``enable_attention_dp``,
  ``kv_cache_dtype`` or ``kv_cache_config: dtype``, ``speculative_config``);
* the prompt and output lengths: the section's ``prepare_dataset.py`` command (``--input-mean``,
  ``--output-mean``; standard deviations 0: fixed lengths), else its sentence
  ``ISL = 1K, OSL = 2K`` (a dataset's means). Where the report gives both total and output
  throughput, their ratio must agree with the lengths (1 + input / output, within 2 %);
* the figures: ``Per GPU Output Throughput`` (output tokens/s per GPU) and ``Per User Output
  Throughput`` (output tokens/s per user, over the whole request: ``[w/ ctx]``).

A section with a report that lacks one of these is not read as a run; ``GuideParse.skipped``
says which and why. Pure text in, runs out: no database.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import Any

import yaml


class GuideFormatError(ValueError):
    """The text holds no ``trtllm-bench`` report this reader knows."""


@dataclass(frozen=True)
class GuideRun:
    section: str  # the ``###`` title
    line: int  # 1-based line of the section title
    gpu_name: str  # as the title names it
    checkpoint: str  # the --model argument
    tensor_parallel: int
    pipeline_parallel: int
    expert_parallel: int
    attention_data_parallel: bool
    speculative: bool
    kv_cache_dtype: str  # as the options set it; "auto": the checkpoint's own
    concurrency: int | None  # requests in flight in the whole system
    max_batch_size: int | None  # per rank
    max_num_tokens: int | None
    input_tokens: int
    output_tokens: int
    fixed_lengths: bool  # synthetic dataset with standard deviation 0; False: a dataset's means
    tokens_per_s_per_gpu: float
    tokens_per_s_per_user: float | None
    report: dict[str, float]  # every figure of the report, by its label as printed

    @property
    def gpu_count(self) -> int:
        return self.tensor_parallel * self.pipeline_parallel

    @property
    def parallelism(self) -> str:
        if self.attention_data_parallel and self.expert_parallel == self.tensor_parallel:
            return f"DEP{self.expert_parallel}"
        text = f"TP{self.tensor_parallel}"
        if self.expert_parallel > 1:
            text += f" EP{self.expert_parallel}"
        if self.pipeline_parallel > 1:
            text += f" PP{self.pipeline_parallel}"
        return text + (" attention DP" if self.attention_data_parallel else "")


@dataclass
class GuideParse:
    runs: list[GuideRun] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # "line N, section: why"


_SECTION = re.compile(r"^### +(?P<title>.+?)\s*$")
_FENCE = re.compile(r"^```")
_REPORT_LINE = re.compile(r"^(?P<label>[A-Za-z][^:]*?)\s*:\s*(?P<value>-?\d+(?:\.\d+)?)\s*$")
_HEREDOC = re.compile(r"cat\s*>\s*\S+\s*<<\s*'?(?P<tag>\w+)'?")
_STATED_LENGTHS = re.compile(
    r"ISL\s*=\s*(?P<isl>\d+(?:\.\d+)?)\s*(?P<ik>[Kk])?\s*,\s*OSL\s*=\s*(?P<osl>\d+(?:\.\d+)?)\s*(?P<ok>[Kk])?"
)
_LENGTH_AGREEMENT = 0.02


def guide_parse(text: str) -> GuideParse:
    """The runs of a guide (module doc). Raises GuideFormatError where no report is found."""
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if _SECTION.match(line)]
    out = GuideParse()
    reports = 0
    for n, start in enumerate(starts):
        end = starts[n + 1] if n + 1 < len(starts) else len(lines)
        title = _SECTION.match(lines[start])["title"]  # type: ignore[index]
        body = lines[start + 1 : end]
        blocks = _code_blocks(body)
        report = next((_report(b) for b in blocks if any("PERFORMANCE OVERVIEW" in x for x in b)), None)
        if report is None:
            continue
        reports += 1
        try:
            out.runs.append(_run(title, start + 1, body, blocks, report))
        except GuideFormatError as exc:
            out.skipped.append(f"line {start + 1}, {title}: {exc}")
    if not reports:
        raise GuideFormatError("no trtllm-bench report (a block with 'PERFORMANCE OVERVIEW') under a '###' section")
    return out


def _code_blocks(body: list[str]) -> list[list[str]]:
    blocks: list[list[str]] = []
    current: list[str] | None = None
    for line in body:
        if _FENCE.match(line.strip()):
            if current is None:
                current = []
            else:
                blocks.append(current)
                current = None
        elif current is not None:
            current.append(line)
    return blocks


def _report(block: list[str]) -> dict[str, float]:
    figures = {}
    for line in block:
        found = _REPORT_LINE.match(line.strip())
        if found:
            figures[found["label"].strip()] = float(found["value"])
    return figures


def _figure(report: dict[str, float], prefix: str) -> float | None:
    return next((v for k, v in report.items() if k.startswith(prefix)), None)


def _run(title: str, line: int, body: list[str], blocks: list[list[str]], report: dict[str, float]) -> GuideRun:
    gpu = title.split()[0]
    per_gpu = _figure(report, "Per GPU Output Throughput")
    if per_gpu is None or per_gpu <= 0:
        raise GuideFormatError("the report has no 'Per GPU Output Throughput'")
    command: str | None = None
    options: dict[str, Any] = {}
    for block in blocks:
        command = command or _bench_command(block)
        options = options or _options(block)
    if command is None:
        raise GuideFormatError("no trtllm-bench command")
    args = _arguments(command)
    checkpoint = args.get("--model") or args.get("-m")
    if not checkpoint:
        raise GuideFormatError("the trtllm-bench command names no --model")
    lengths = _lengths(body, blocks)
    if lengths is None:
        raise GuideFormatError("no prompt and output lengths (a prepare_dataset.py command or 'ISL = ..., OSL = ...')")
    input_tokens, output_tokens, fixed = lengths
    total, output = _figure(report, "Total Token Throughput"), _figure(report, "Total Output Throughput")
    if total and output:
        stated, published = 1 + input_tokens / output_tokens, total / output
        if abs(published / stated - 1) > _LENGTH_AGREEMENT:
            raise GuideFormatError(
                f"lengths {input_tokens}/{output_tokens} disagree with the report (total / output throughput "
                f"{published:.3f}, the lengths give {stated:.3f})"
            )
    kv = options.get("kv_cache_dtype") or (options.get("kv_cache_config") or {}).get("dtype") or "auto"
    return GuideRun(
        section=title,
        line=line,
        gpu_name=gpu,
        checkpoint=checkpoint,
        tensor_parallel=_count(args, "--tp", 1),
        pipeline_parallel=_count(args, "--pp", 1),
        expert_parallel=_count(args, "--ep", 1),
        attention_data_parallel=bool(options.get("enable_attention_dp")),
        speculative=bool(options.get("speculative_config")),
        kv_cache_dtype=str(kv).lower(),
        concurrency=_optional_count(args, "--concurrency"),
        max_batch_size=_optional_count(args, "--max_batch_size"),
        max_num_tokens=_optional_count(args, "--max_num_tokens"),
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        fixed_lengths=fixed,
        tokens_per_s_per_gpu=per_gpu,
        tokens_per_s_per_user=_figure(report, "Per User Output Throughput"),
        report=report,
    )


def _bench_command(block: list[str]) -> str | None:
    for i, line in enumerate(block):
        if line.strip().startswith("trtllm-bench"):
            # The command runs to the end of the block or the first blank line, continued with or
            # without backslashes.
            parts = []
            for part in block[i:]:
                if not part.strip():
                    break
                parts.append(part.strip().rstrip("\\").strip())
            return " ".join(parts)
    return None


def _arguments(command: str) -> dict[str, str]:
    try:
        tokens = shlex.split(command)
    except ValueError as exc:
        raise GuideFormatError(f"the trtllm-bench command does not parse: {exc}") from None
    args = {}
    for i, token in enumerate(tokens):
        if token.startswith("-") and i + 1 < len(tokens) and not tokens[i + 1].startswith("-"):
            args[token] = tokens[i + 1]
    return args


def _count(args: dict[str, str], key: str, default: int) -> int:
    found = _optional_count(args, key)
    return default if found is None else found


def _optional_count(args: dict[str, str], key: str) -> int | None:
    if key not in args:
        return None
    try:
        value = int(args[key])
    except ValueError:
        raise GuideFormatError(f"{key} {args[key]!r} is not a whole number") from None
    if value < 1:
        raise GuideFormatError(f"{key} {value} is below 1")
    return value


def _options(block: list[str]) -> dict[str, Any]:
    """The YAML a block writes with ``cat > file <<TAG`` ... ``TAG`` ({} where none)."""
    for i, line in enumerate(block):
        found = _HEREDOC.search(line)
        if not found:
            continue
        content = []
        for inner in block[i + 1 :]:
            if inner.strip() == found["tag"]:
                break
            content.append(inner)
        try:
            loaded = yaml.safe_load("\n".join(content))
        except yaml.YAMLError as exc:
            raise GuideFormatError(f"the options file does not parse as YAML: {exc}") from None
        return loaded if isinstance(loaded, dict) else {}
    return {}


def _lengths(body: list[str], blocks: list[list[str]]) -> tuple[int, int, bool] | None:
    for block in blocks:
        text = " ".join(x.strip().rstrip("\\") for x in block)
        if "prepare_dataset" in text:
            mean_in, mean_out = re.search(r"--input-mean[ =](\d+)", text), re.search(r"--output-mean[ =](\d+)", text)
            if mean_in and mean_out:
                stdev = re.findall(r"--(?:input|output)-stdev[ =](\d+(?:\.\d+)?)", text)
                return int(mean_in[1]), int(mean_out[1]), bool(stdev) and all(float(s) == 0 for s in stdev)
    for line in body:
        found = _STATED_LENGTHS.search(line)
        if found:
            isl = float(found["isl"]) * (1024 if found["ik"] else 1)
            osl = float(found["osl"]) * (1024 if found["ok"] else 1)
            return round(isl), round(osl), False
    return None
