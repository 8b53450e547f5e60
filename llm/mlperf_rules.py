"""MLPerf Inference LLM benchmarks: the models they run, their mean output length, and the
latency limits of their Server and Interactive scenarios per round.

Limits are LoadGen's ``mlperf.conf`` (copied per round in ``llm/data/mlperf_rules/``, see its
SOURCES.md): ``<benchmark>.Server.ttft_latency`` (first token) and ``tpot_latency`` (time per
output token), in ms at the 99th percentile. The Interactive scenario is the
``<benchmark>-interactive`` entry. Offline has no latency bound. A round without a table here
takes the latest earlier round that defines the benchmark and says so; a benchmark no table
defines gets no bound and the reason, never an invented one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

RULES_URL = "https://github.com/mlcommons/inference/blob/{commit}/{path}"
RULES_FILES = {
    "4.1": ("379ee5345a25ee123fd5faec33285b6e8be0dadf", "mlperf.conf"),
    "5.1": ("e05fda54b31c6859361f5d91660f1c11e6fa847d", "loadgen/mlperf.conf"),
    "6.1": ("b0662794362bc2c22c33c3e4a0c66ef83411ecf0", "loadgen/mlperf.conf"),
}

# (round, mlperf.conf benchmark key) -> (ttft_latency ms, tpot_latency ms), as the copied files set them.
LATENCY_LIMITS: dict[tuple[str, str], tuple[float, float]] = {
    ("4.1", "llama2-70b"): (2000, 200),
    ("4.1", "mixtral-8x7b"): (2000, 200),
    ("5.1", "llama2-70b"): (2000, 200),
    ("5.1", "llama2-70b-interactive"): (450, 40),
    ("5.1", "mixtral-8x7b"): (2000, 200),
    ("5.1", "llama3_1-405b"): (6000, 175),
    ("5.1", "llama3_1-405b-interactive"): (4500, 80),
    ("5.1", "llama3_1-8b"): (2000, 100),
    ("5.1", "llama3_1-8b-interactive"): (500, 30),
    ("5.1", "deepseek-r1"): (2000, 80),
    ("6.1", "llama2-70b"): (2000, 200),
    ("6.1", "llama2-70b-interactive"): (450, 40),
    ("6.1", "mixtral-8x7b"): (2000, 200),
    ("6.1", "llama3_1-405b"): (6000, 175),
    ("6.1", "llama3_1-405b-interactive"): (4500, 80),
    ("6.1", "llama3_1-8b"): (2000, 100),
    ("6.1", "llama3_1-8b-interactive"): (500, 30),
    ("6.1", "deepseek-r1"): (2000, 80),
    ("6.1", "deepseek-r1-interactive"): (1500, 15),
    ("6.1", "gpt-oss-120b"): (3000, 80),
    ("6.1", "gpt-oss-120b-interactive"): (2000, 15),
}


@dataclass(frozen=True)
class MlperfBenchmark:
    """An MLPerf LLM benchmark family: the model key (llm.serving.shapes) and its mean output length."""

    key: str  # the mlperf.conf benchmark key
    model: str
    output_tokens: int | None
    output_source: str


_REFERENCE = "https://github.com/mlcommons/inference/blob/b0662794362bc2c22c33c3e4a0c66ef83411ecf0/language/"
# Published benchmark name (accuracy suffix removed) -> the family. Mean output tokens per sample are
# the reference implementation's accuracy targets ("Tokens per sample" / tokens_per_sample).
BENCHMARKS: tuple[tuple[re.Pattern[str], MlperfBenchmark], ...] = (
    (re.compile(r"^llama2-70b"), MlperfBenchmark("llama2-70b", "llama-2-70b", 294,
                                                  _REFERENCE + "llama2-70b/README.md (Tokens per sample: 294.45)")),
    (re.compile(r"^llama3[._]1-405b"), MlperfBenchmark("llama3_1-405b", "llama-3.1-405b", 685,
                                                       _REFERENCE + "llama3.1-405b/README.md (tokens_per_sample 684.68)")),
    (re.compile(r"^llama3[._]1-8b(?!-edge)"), MlperfBenchmark("llama3_1-8b", "llama-3.1-8b", None, "")),
    (re.compile(r"^mixtral-8x7b"), MlperfBenchmark("mixtral-8x7b", "mixtral-8x7b", 145,
                                                   _REFERENCE + "mixtral-8x7b/README.md (tokens_per_sample 144.84)")),
    (re.compile(r"^deepseek-r1"), MlperfBenchmark("deepseek-r1", "deepseek-r1", 3886,
                                                  _REFERENCE + "deepseek-r1/README.md (mean-output-tok-len 3886.2274)")),
    (re.compile(r"^gpt-oss-120b"), MlperfBenchmark("gpt-oss-120b", "gpt-oss-120b", 1278,
                                                   _REFERENCE + "gpt-oss-120b/README.md (reference mean output length 1278.20)")),
)  # fmt: skip


def mlperf_benchmark(name: str) -> MlperfBenchmark | None:
    """The family of a published benchmark name (``llama2-70b-99.9``, ``llama3.1-405b``), or None."""
    lowered = name.strip().lower()
    return next((family for pattern, family in BENCHMARKS if pattern.match(lowered)), None)


@dataclass(frozen=True)
class LatencyLimits:
    ttft_ms: float | None
    tpot_ms: float | None
    note: str  # where the limits come from, or why there are none

    @property
    def user_rate_floor(self) -> float | None:
        """Output tokens/s each user gets at least: 1000 / the per-token limit (a p99 bound)."""
        return 1000.0 / self.tpot_ms if self.tpot_ms else None


def _round_key(round_: str) -> tuple[int, int]:
    major, _, minor = round_.partition(".")
    return int(major), int(minor or 0)


def mlperf_latency_limits(*, round_: str, benchmark: str, scenario: str) -> LatencyLimits:
    """The TTFT and TPOT limits of one round's benchmark in one scenario (see the module doc)."""
    scenario = scenario.lower()
    if scenario == "offline":
        return LatencyLimits(None, None, "Offline: no latency bound (maximum throughput)")
    family = mlperf_benchmark(benchmark)
    if family is None:
        return LatencyLimits(None, None, f"benchmark {benchmark!r} is not in the table of MLPerf LLM benchmarks")
    if scenario not in ("server", "interactive"):
        return LatencyLimits(None, None, f"scenario {scenario!r} has no per-token limit")
    key = family.key + ("-interactive" if scenario == "interactive" else "")
    if (round_, key) in LATENCY_LIMITS:
        ttft, tpot = LATENCY_LIMITS[(round_, key)]
        commit, path = RULES_FILES[round_]
        return LatencyLimits(
            ttft, tpot, f"MLPerf Inference v{round_} rules: {RULES_URL.format(commit=commit, path=path)}"
        )
    earlier = sorted((r for r, k in LATENCY_LIMITS if k == key and _round_key(r) < _round_key(round_)), key=_round_key)
    if earlier:
        ttft, tpot = LATENCY_LIMITS[(earlier[-1], key)]
        commit, path = RULES_FILES[earlier[-1]]
        return LatencyLimits(
            ttft,
            tpot,
            f"v{round_} rules not in the table: the limits of v{earlier[-1]} "
            f"({RULES_URL.format(commit=commit, path=path)}), the latest earlier round that sets them",
        )
    return LatencyLimits(None, None, f"no MLPerf rules in the table set {key} limits for v{round_} or earlier")
