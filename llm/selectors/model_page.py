"""Reads for the LLM method page (/llm-model/): the fitted constants and their error, the
communication figures, the measured range, the 70B landmarks and the systems outside the
catalogue."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from benchmarks_app.models import LabImportRow
from catalog.models import Architecture, Gpu, TensorPeak, Vendor
from llm.estimate.constants import LlmConstants
from llm.estimate.loo import LooReport
from llm.models import ServingModelFit
from llm.selectors.figures import LlmModelState, llm_model_state, llm_ranking_figures
from llm.serving import comm
from llm.serving.shapes import MODEL_SHAPES, SIZE_CLASSES


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


_LANDMARKS = (
    ("llm-serving", "70b", "any", ("h100-sxm5-80-gb", "h200-sxm-141-gb", "b200")),
    ("llm-chat", "70b", "4bit", ("h100-pcie-80-gb", "h100-sxm5-80-gb", "h200-sxm-141-gb")),
)


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


def llm_landmarks(*, constants: LlmConstants) -> list[Landmark]:
    """The 70B class on the GPUs the issue names: the estimate beside the best measured figure."""
    out = []
    state = LlmModelState(constants, LooReport({}, [], 0), 0)
    for use_case, size, family, slugs in _LANDMARKS:
        gpus = list(Gpu.objects.with_related().filter(slug__in=slugs))
        peaks: dict[int, dict[str, float | None]] = defaultdict(dict)
        for peak in TensorPeak.objects.filter(gpu__in=gpus).values("gpu_id", "precision", "supported", "dense_tflops"):
            peaks[peak["gpu_id"]][peak["precision"]] = peak["dense_tflops"] if peak["supported"] else None
        common = {"use_case": use_case, "size": size, "precision_family": family, "include_all_rows": False,
                  "gpus": gpus, "peaks_by_gpu": peaks, "state": state}  # fmt: skip
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
    """A link kind's all-reduce figures (llm.serving.comm) and the factor fitted on it."""

    kind: str
    busbw_share: str  # share of the per-direction line rate, as the source gives it
    latency_us: float
    sources: tuple[str, ...]
    fitted_factor: float | None


def llm_link_figures(*, constants: LlmConstants) -> list[LinkFigure]:
    host = ", ".join(f"{share:.2f} ({gpus} GPUs)" for gpus, share in sorted(comm.PCIE_HOST_BUSBW_SHARE.items()))
    shares = {"fabric": f"{comm.FABRIC_BUSBW_SHARE:.2f}", "pcie_p2p": f"{comm.PCIE_P2P_BUSBW_SHARE:.2f}",
              "pcie_host": host}  # fmt: skip
    return [
        LinkFigure(
            kind,
            shares[kind],
            (comm.FABRIC_LATENCY_S if kind == "fabric" else comm.PCIE_LATENCY_S) * 1e6,
            comm.SOURCES[kind],
            constants.communication_factor.get(kind),
        )
        for kind in ("fabric", "pcie_p2p", "pcie_host")
    ]


@dataclass(frozen=True)
class MeasuredRange:
    """What the calibration rows of one use case contain (llm.estimate.coverage)."""

    use_case: str  # serving | chat
    vendors: list[str]
    architectures: list[str]
    configurations: list[str]  # configuration codes (layer, fabric, pcie_p2p ...)
    precisions: list[str]  # "NVIDIA FP8", ...
    error: float | None  # the error shown outside the range
    typical: float | None


def llm_measured_ranges(*, state: LlmModelState) -> list[MeasuredRange]:
    keys = state.error.coverage.keys
    vendors = dict(Vendor.objects.values_list("slug", "name"))
    architectures = dict(Architecture.objects.values_list("slug", "name"))
    out = []
    for use_case, kind in (("serving", "serving"), ("chat", "decode")):
        of = [k for k in keys if k[1] == kind]
        out.append(
            MeasuredRange(
                use_case,
                sorted(vendors.get(k[2], k[2]) for k in of if k[0] == "vendor"),
                sorted(architectures.get(k[2], k[2]) for k in of if k[0] == "architecture"),
                # A link without catalogue figures is never inside the range (llm.estimate.coverage).
                sorted(k[2] for k in of if k[0] == "configuration" and k[2] != "unknown"),
                sorted(f"{vendors.get(k[2], k[2])} {k[3].upper()}" for k in of if k[0] == "precision"),
                state.constants.outside_error_pct.get(use_case),
                state.constants.typical_error_pct.get(use_case),
            )
        )
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


@dataclass(frozen=True)
class LlmModelPage:
    state: LlmModelState
    gpu_names: dict[str, str]
    outside_catalogue: list[OutsideLine]
    landmarks: list[Landmark]
    size_classes: list[tuple[str, str, str]]  # slug, reference model, its source
    links: list[LinkFigure]
    measured_ranges: list[MeasuredRange]
    intervals: list[IntervalLine]


def llm_model_page() -> LlmModelPage:
    """What the LLM method page shows: the fitted constants, the error, the communication
    figures, the measured range, the systems outside the catalogue."""
    state = llm_model_state()
    slugs = {e.gpu_key for e in state.error.by_gpu}
    names = {gpu.slug: gpu.display_name for gpu in Gpu.objects.filter(slug__in=slugs).only("slug", "name", "name_zh")}
    sizes = [
        (slug, MODEL_SHAPES[c.reference].name, MODEL_SHAPES[c.reference].source) for slug, c in SIZE_CLASSES.items()
    ]
    return LlmModelPage(state, names, llm_outside_catalogue(), llm_landmarks(constants=state.constants), sizes,
                        llm_link_figures(constants=state.constants), llm_measured_ranges(state=state),
                        llm_serving_intervals())  # fmt: skip
