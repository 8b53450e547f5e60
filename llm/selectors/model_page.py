"""Reads for the LLM method page (/llm-model/): the serving model's stored fit (constants,
held-out error, intervals, measured range), the single-stream constants and their error, the
communication figures, the 70B chat landmarks and the systems outside the catalogue. Nothing is
fitted on a read."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from benchmarks_app.models import LabImportRow
from catalog.models import Gpu, TensorPeak
from llm.models import ServingModelFit
from llm.selectors.figures import llm_ranking_figures
from llm.selectors.serving import serving_fit_current
from llm.selectors.single_stream import stream_fit_current
from llm.serving import comm
from llm.serving.fit import ServingFit
from llm.serving.shapes import MODEL_SHAPES, SIZE_CLASSES
from llm.serving.single_stream import StreamFit


@dataclass(frozen=True)
class OutsideLine:
    system: str
    model: str
    test: str
    tokens_per_s: float | None
    source: str


def llm_outside_catalogue() -> list[OutsideLine]:
    """Measured systems outside the GPU catalogue (Apple silicon, whole systems), with figures."""
    rows = LabImportRow.objects.filter(outcome=LabImportRow.Outcome.NOT_A_CATALOGUE_GPU).order_by(
        "dataset", "name_reported"
    )
    out = []
    for row in rows:
        data = row.row or {}
        model = f"{data.get('model') or data.get('model_label', '')} {data.get('quant', '')}".strip()
        out.append(OutsideLine(row.name_reported, model, str(data.get("test", "")), data.get("value"), row.source))
    return out


# One stream at 4 bits on the GPUs people ask about: GeForce cards of three generations, the RTX PRO
# 6000 (the RTX 5090's bandwidth, no catalogue tensor figures), the H100 and H200, the DGX Spark.
_LANDMARKS = (
    ("llm-chat", "8b", "4bit", ("geforce-rtx-3090", "geforce-rtx-4090", "geforce-rtx-5090",
                                "rtx-pro-6000-blackwell-server", "h100-sxm5-80-gb", "gb10")),
    ("llm-chat", "70b", "4bit", ("geforce-rtx-3090", "geforce-rtx-4090", "geforce-rtx-5090", "h100-pcie-80-gb",
                                 "h100-sxm5-80-gb", "h200-sxm-141-gb")),
)  # fmt: skip


@dataclass(frozen=True)
class Landmark:
    """The model's estimate for a named GPU beside its best measured figure."""

    use_case: str
    size: str
    gpu_name: str
    estimate: float | None
    gpu_count: int
    measured: float | None
    measured_source: str

    def line(self) -> str:
        unit = "tokens/s per GPU" if self.use_case == "llm-serving" else "tokens/s (one stream)"
        estimate = f"{self.estimate:.4g} {unit} on {self.gpu_count} GPU(s)" if self.estimate else "does not fit"
        measured = f"measured {self.measured:.4g} ({self.measured_source})" if self.measured else "no measurement"
        return f"{self.use_case} {self.size} {self.gpu_name}: estimated {estimate}; {measured}"


def llm_landmarks(*, stream: StreamFit) -> list[Landmark]:
    """One stream on the landmark GPUs: the single-stream estimate beside the best measured figure."""
    out = []
    for use_case, size, family, slugs in _LANDMARKS:
        gpus = list(Gpu.objects.with_related().filter(slug__in=slugs))
        peaks: dict[int, dict[str, float | None]] = defaultdict(dict)
        for peak in TensorPeak.objects.filter(gpu__in=gpus).values("gpu_id", "precision", "supported", "dense_tflops"):
            peaks[peak["gpu_id"]][peak["precision"]] = peak["dense_tflops"] if peak["supported"] else None
        common = {"size": size, "precision_family": family, "include_all_rows": False, "gpus": gpus,
                  "peaks_by_gpu": peaks, "stream": stream}  # fmt: skip
        measured = llm_ranking_figures(**common)  # type: ignore[arg-type]
        estimated = llm_ranking_figures(**common, measured=False)  # type: ignore[arg-type]
        for gpu in sorted(gpus, key=lambda g: g.slug):
            m, e = measured[gpu.id], estimated[gpu.id]
            is_measured = m.basis == "measured"
            out.append(
                Landmark(
                    use_case,
                    size,
                    gpu.name,
                    e.tokens_per_s,
                    e.gpu_count,
                    m.tokens_per_s if is_measured else None,
                    m.source if is_measured else "",
                )  # fmt: skip
            )
    return out


@dataclass(frozen=True)
class LinkFigure:
    """A link kind's all-reduce figures (llm.serving.comm), from nccl-tests, not fitted."""

    kind: str
    busbw_share: str  # share of the per-direction line rate, as the source gives it
    latency_us: float
    sources: tuple[str, ...]


def llm_link_figures() -> list[LinkFigure]:
    host = ", ".join(f"{share:.2f} ({gpus} GPUs)" for gpus, share in sorted(comm.PCIE_HOST_BUSBW_SHARE.items()))
    shares = {"fabric": f"{comm.FABRIC_BUSBW_SHARE:.2f}", "pcie_p2p": f"{comm.PCIE_P2P_BUSBW_SHARE:.2f}",
              "pcie_host": host}  # fmt: skip
    return [
        LinkFigure(
            kind,
            shares[kind],
            (comm.FABRIC_LATENCY_S if kind == "fabric" else comm.PCIE_LATENCY_S) * 1e6,
            comm.SOURCES[kind],
        )  # fmt: skip
        for kind in ("fabric", "pcie_p2p", "pcie_host")
    ]


@dataclass(frozen=True)
class ErrorLine:
    """One cell of the serving model's held-out error table: leaving out each ``check`` (a GPU or a
    model) in turn, the points of ``group`` (a scenario or engine class) ``where`` (inside or
    outside the measured range)."""

    check: str
    group: str
    where: str
    n: int
    median_pct: float
    p90_pct: float


def llm_serving_errors(fit: ServingFit | None) -> list[ErrorLine]:
    if fit is None:
        return []
    return [
        ErrorLine(check, group, where, int(c["n"]), float(c["median_pct"]), float(c["p90_pct"]))
        for check, groups in fit.errors.items()
        for group, cells in groups.items()
        for where, c in sorted(cells.items())
    ]


@dataclass(frozen=True)
class StreamLine:
    """The single-stream constants of one engine class (and weight-format group), with the engine's
    leave-one-GPU-out error."""

    key: str
    efficiency: float
    overhead_ms: float
    points: int
    median_pct: float | None
    p90_pct: float | None


def llm_stream_lines(stream: StreamFit) -> list[StreamLine]:
    out = []
    for key in sorted(stream.efficiency):
        error = stream.errors.get(key.split("/")[0])
        out.append(StreamLine(key, stream.efficiency[key], stream.overhead_ms[key], stream.points.get(key, 0),
                              float(error["median_pct"]) if error else None,
                              float(error["p90_pct"]) if error else None))  # fmt: skip
    return out


@dataclass(frozen=True)
class IntervalLine:
    """The 80 % interval of one kind of extrapolation (llm.serving.heldout) as stored with the fit:
    an estimate ``e`` of this kind reads ``e / p90`` to ``e / p10``; ``coverage``: the share of
    held-out points inside the interval made without their GPU."""

    kind: str
    n: int
    low_pct: float  # the interval's lower end, per cent of the estimate
    high_pct: float
    coverage_pct: float | None


def llm_serving_intervals() -> list[IntervalLine]:
    """The newest stored fit's intervals by kind (never computed on a read)."""
    stored = ServingModelFit.objects.newest()
    checks = stored.errors.get("serving_checks", {}) if stored and isinstance(stored.errors, dict) else {}
    out = []
    for kind, v in checks.get("intervals", {}).items():
        coverage = v.get("coverage")
        out.append(IntervalLine(kind, int(v["n"]), 100.0 / v["p90"], 100.0 / v["p10"],
                                coverage * 100 if coverage == coverage and coverage is not None else None))  # fmt: skip
    return out


def constant_lines(constants: dict[str, object]) -> list[tuple[str, list[tuple[str, str]]]]:
    """The fitted constants as the page lists them: one line per hardware or engine class where a
    constant has one value per class, every figure to three significant digits."""

    def figure(value: object) -> str:
        return f"{value:,.3g}" if isinstance(value, float) else f"{value:,}" if isinstance(value, int) else str(value)

    def lines(value: object) -> list[tuple[str, str]]:
        if isinstance(value, dict):  # one figure per class; none fitted yet: a dash
            return [(key, figure(v)) for key, v in sorted(value.items())] or [("", "—")]
        return [("", figure(value))]

    return [(name, lines(value)) for name, value in constants.items()]


@dataclass(frozen=True)
class LlmModelPage:
    fitted_at: str
    points: int
    constants: list[tuple[str, list[tuple[str, str]]]]  # name, (key or "", value in 3 significant digits)
    errors: list[ErrorLine]
    regimes: list[tuple[str, ...]]  # hardware class, engine class, configuration of the fitted points
    stream: list[StreamLine]
    outside_catalogue: list[OutsideLine]
    landmarks: list[Landmark]
    size_classes: list[tuple[str, str, str]]  # slug, reference model, its source
    links: list[LinkFigure]
    intervals: list[IntervalLine]


def llm_model_page() -> LlmModelPage:
    """What the LLM method page shows, from the newest stored fit."""
    fit = serving_fit_current()
    stored = ServingModelFit.objects.newest()
    stream = stream_fit_current()
    sizes = [
        (slug, MODEL_SHAPES[c.reference].name, MODEL_SHAPES[c.reference].source) for slug, c in SIZE_CLASSES.items()
    ]
    return LlmModelPage(
        fitted_at=f"{stored.fitted_at:%Y-%m-%d}" if stored else "",
        points=fit.points if fit else 0,
        constants=constant_lines(fit.constants.as_dict()) if fit else [],
        errors=llm_serving_errors(fit),
        regimes=sorted(fit.regimes) if fit else [],
        stream=llm_stream_lines(stream),
        outside_catalogue=llm_outside_catalogue(),
        landmarks=llm_landmarks(stream=stream),
        size_classes=sizes,
        links=llm_link_figures(),
        intervals=llm_serving_intervals(),
    )
