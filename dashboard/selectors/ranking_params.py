"""The rankings' parameters, parsed from GET parameters the same way for the pages and /api/v1/.

Stable interface (the API builds on it; change only by adding fields)
--------------------------------------------------------------------
``ranking_params_from_query(query: Mapping[str, str]) -> RankingParams``
    Parses GET parameters; raises ``RankingParamError(field, message)`` on a bad value.
    Parameters (all optional):

    ========== ================================================ =================
    name       values                                           default
    ========== ================================================ =================
    use_case   training | fine-tuning | inference-16bit |       training
               inference-8bit
    precision  16bit | 8bit | 32bit (those the use case allows) the use case's first
    min_vram   number of GiB >= 0                               none
    vendor     vendor slug (nvidia, amd ...)                    all
    segment    consumer | workstation | datacenter | ...        all
    mode       rent | buy                                       rent
    price      typical | cheapest | spot  (rent: median of the  typical
               providers' cheapest current on-demand offers,
               cheapest current on-demand offer, cheapest
               spot offer; "median" = typical)
    condition  new | used  (buy)                                new
    kwh_price  your electricity price per kWh in the page       none
               currency, 0 to 100 (buy, LLM serving: adds the
               electricity of a million output tokens)
    provider   provider slug (rent)                             all
    region     substring of the offer region (rent)             all
    currency   USD | CNY                                        USD
    baseline   GPU slug = 1.0                                   a100-sxm4-80-gb
    basis      all | measured                                   all
    sort       perf_per_dollar | perf | perf_per_kw             perf_per_dollar
    show       eligible | all  (GPUs that fail the use case's   eligible
               memory floor or tensor-format need: hidden, or
               listed with the reason)
    model_size the LLM use cases' model sizes (70b, 8b ...)     the use case's first
    interactivity  LLM serving: output tokens/s per user the     20 (llm-serving)
               ranking is priced at: 10 | 20 | 50 | 100 | max
               (max = the highest throughput per GPU)
    input_len  LLM serving: prompt tokens per request          1000 (llm-serving)
    output_len LLM serving: output tokens per request          1000 (llm-serving)
    gpu_price[<gpu slug>]  your price per GPU-hour for that     none
               GPU, in the page currency (0.001 to 1000;
               repeatable): replaces any offer's price
    mlperf     closed-available | all  (LLM use cases: include    closed-available
               MLPerf results of the open division and of
               preview or research systems, or only closed
               results on available systems)
    ========== ================================================ =================
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any

from django.utils.translation import gettext as _

from catalog.models import Segment
from catalog.money import CURRENCIES
from dashboard.ranking.maths import BASELINE_SLUG_DEFAULT
from dashboard.ranking.use_cases import USE_CASES, UseCase
from gpuatlas.query_numbers import (
    ELECTRICITY_PER_KWH,
    GPU_PRICE_PER_HOUR,
    MEMORY_GIB,
    NumberRange,
    QueryNumberError,
    number_parse,
)
from llm.question import DEFAULT_INPUT_TOKENS, DEFAULT_OUTPUT_TOKENS, DEFAULT_TARGET, TARGETS, length_parse

MODES = ("rent", "buy")
PRICE_HOW = ("typical", "cheapest", "spot", "median")  # "median" is read as "typical": shared links use it
CONDITIONS = ("new", "used")
BASES = ("all", "measured")
SHOWS = ("eligible", "all")
SORTS = ("perf_per_dollar", "perf", "perf_per_kw")
MLPERF_ROWS = ("closed-available", "all")
_SLUG = re.compile(r"^[a-z0-9][a-z0-9._-]{0,119}$")
GPU_PRICE_PREFIX = "gpu_price["
_GPU_PRICE = re.compile(r"^gpu_price\[(?P<slug>[^\]]*)\]$")
GPU_PRICES_MAX = 50


class RankingParamError(ValueError):
    """A query parameter with an invalid value; ``field`` names the parameter."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


@dataclass(frozen=True)
class RankingParams:
    use_case: str = "training"
    precision: str = ""
    min_vram: float | None = None
    vendor: str = ""
    segment: str = ""
    mode: str = "rent"
    price: str = "typical"
    condition: str = "new"
    provider: str = ""
    region: str = ""
    currency: str = "USD"
    baseline: str = BASELINE_SLUG_DEFAULT
    basis: str = "all"
    sort: str = "perf_per_dollar"
    show: str = "eligible"
    model_size: str = ""
    mlperf: str = "closed-available"
    interactivity: str = ""  # LLM serving: a TARGETS value
    input_len: int | None = None  # LLM serving: prompt tokens per request
    output_len: int | None = None  # LLM serving: output tokens per request
    gpu_prices: tuple[tuple[str, float], ...] = ()  # (gpu slug, price per GPU-hour in the page currency), sorted
    kwh_price: float | None = None  # buy mode: the owner's electricity price per kWh in the page currency

    def __post_init__(self) -> None:
        if self.price == "median":
            object.__setattr__(self, "price", "typical")
        if not self.precision:
            object.__setattr__(self, "precision", USE_CASES[self.use_case].default_precision)
        if not self.model_size and USE_CASES[self.use_case].is_llm:
            object.__setattr__(self, "model_size", USE_CASES[self.use_case].default_model_size)
        if not self.interactivity and USE_CASES[self.use_case].llm_mode == "batched":
            object.__setattr__(self, "interactivity", DEFAULT_TARGET)
        if USE_CASES[self.use_case].llm_mode == "batched":
            if self.input_len is None:
                object.__setattr__(self, "input_len", DEFAULT_INPUT_TOKENS)
            if self.output_len is None:
                object.__setattr__(self, "output_len", DEFAULT_OUTPUT_TOKENS)

    @property
    def gpu_price_map(self) -> dict[str, float]:
        return dict(self.gpu_prices)

    @property
    def use_case_def(self) -> UseCase:
        return USE_CASES[self.use_case]

    def to_query(self) -> dict[str, str]:
        """The non-default parameters, for shareable links."""
        default = RankingParams(use_case=self.use_case)
        out = {} if self.use_case == "training" else {"use_case": self.use_case}
        for name, value in asdict(self).items():
            if name in ("use_case", "gpu_prices"):
                continue
            if value != getattr(default, name) and value not in (None, ""):
                out[name] = f"{value:g}" if isinstance(value, float) else str(value)
        for slug, price in self.gpu_prices:
            out[f"gpu_price[{slug}]"] = f"{price:g}"
        return out

    def with_changes(self, **changes: Any) -> RankingParams:
        if "use_case" in changes and "precision" not in changes:
            changes["precision"] = ""
        if "use_case" in changes and "model_size" not in changes:
            changes["model_size"] = ""
        if "use_case" in changes and "interactivity" not in changes:
            changes["interactivity"] = ""
        if "use_case" in changes:
            changes.setdefault("input_len", None)
            changes.setdefault("output_len", None)
        return replace(self, **changes)


def _choice(query: Mapping[str, str], name: str, allowed: tuple[str, ...], default: str) -> str:
    value = (query.get(name) or "").strip()
    if not value:
        return default
    if value not in allowed:
        raise RankingParamError(
            name,
            _("unknown value %(value)r; expected one of: %(allowed)s")
            % {"value": value[:40], "allowed": ", ".join(allowed)},
        )
    return value


def _slug(query: Mapping[str, str], name: str) -> str:
    value = (query.get(name) or "").strip().lower()
    if value and not _SLUG.match(value):
        raise RankingParamError(name, _("not a valid identifier (lower-case letters, digits, dashes)"))
    return value


def _number(raw: str, *, field: str, bounds: NumberRange) -> float:
    try:
        return number_parse(raw, field=field, bounds=bounds)
    except QueryNumberError as error:
        raise RankingParamError(error.field, error.message) from None


def _length(query: Mapping[str, str], name: str, default: int) -> int:
    try:
        return length_parse(query, name, default=default)
    except QueryNumberError as error:
        raise RankingParamError(error.field, error.message) from None


def gpu_prices_from_query(query: Mapping[str, str]) -> tuple[tuple[str, float], ...]:
    """The ``gpu_price[<gpu slug>]=<price per GPU-hour>`` parameters, validated and sorted by slug."""
    prices: dict[str, float] = {}
    for name in query:
        found = _GPU_PRICE.match(name)
        if found is None:
            continue
        field = name[:140]
        slug = found["slug"].strip().lower()
        if not _SLUG.match(slug):
            raise RankingParamError(field, _("not a GPU identifier (lower-case letters, digits, dashes)"))
        raw = (query.get(name) or "").strip()
        if not raw:
            continue
        prices[slug] = _number(raw, field=field, bounds=GPU_PRICE_PER_HOUR)
    if len(prices) > GPU_PRICES_MAX:
        raise RankingParamError("gpu_price", _("at most %(most)d GPUs can be priced") % {"most": GPU_PRICES_MAX})
    return tuple(sorted(prices.items()))


def ranking_params_from_query(query: Mapping[str, str]) -> RankingParams:
    """Validated ranking parameters from a GET query; RankingParamError names the bad field."""
    use_case = _choice(query, "use_case", tuple(USE_CASES), "training")
    uc = USE_CASES[use_case]
    precision = _choice(query, "precision", uc.precision_families, uc.default_precision)
    raw_vram = (query.get("min_vram") or "").strip()
    min_vram = _number(raw_vram, field="min_vram", bounds=MEMORY_GIB) if raw_vram else None
    currency = (query.get("currency") or "USD").strip().upper()
    if currency not in CURRENCIES:
        raise RankingParamError(
            "currency", _("unknown currency %(value)r; expected USD or CNY") % {"value": currency[:10]}
        )
    raw_kwh = (query.get("kwh_price") or "").strip()
    kwh_price = _number(raw_kwh, field="kwh_price", bounds=ELECTRICITY_PER_KWH) if raw_kwh else None
    region = (query.get("region") or "").strip()
    if len(region) > 64:
        raise RankingParamError("region", _("at most 64 characters"))
    if "\x00" in region:
        raise RankingParamError("region", _("NUL characters are not allowed"))
    return RankingParams(
        use_case=use_case,
        precision=precision,
        min_vram=min_vram,
        vendor=_slug(query, "vendor"),
        segment=_choice(query, "segment", tuple(Segment.values), ""),
        mode=_choice(query, "mode", MODES, "rent"),
        price=_choice(query, "price", PRICE_HOW, "typical"),
        condition=_choice(query, "condition", CONDITIONS, "new"),
        provider=_slug(query, "provider"),
        region=region,
        currency=currency,
        baseline=_slug(query, "baseline") or uc.default_baseline or BASELINE_SLUG_DEFAULT,
        basis=_choice(query, "basis", BASES, "all"),
        sort=_choice(query, "sort", SORTS, "perf_per_dollar"),
        show=_choice(query, "show", SHOWS, "eligible"),
        model_size=_choice(query, "model_size", uc.model_sizes, uc.default_model_size) if uc.is_llm else "",
        mlperf=_choice(query, "mlperf", MLPERF_ROWS, "closed-available"),
        interactivity=_choice(query, "interactivity", TARGETS, DEFAULT_TARGET) if uc.llm_mode == "batched" else "",
        input_len=_length(query, "input_len", DEFAULT_INPUT_TOKENS) if uc.llm_mode == "batched" else None,
        output_len=_length(query, "output_len", DEFAULT_OUTPUT_TOKENS) if uc.llm_mode == "batched" else None,
        gpu_prices=gpu_prices_from_query(query),
        kwh_price=kwh_price,
    )
