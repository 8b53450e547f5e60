"""Page bodies of the rankings, tier list and GPU page, rendered once per data version: with the
API's bodies (api/views/base.py), the site's one cache layer.

At scale most of a request goes into building Plotly figures over hundreds of points and
rendering hundreds of table rows, not into SQL. The bodies depend only on the page's
parameters, the active language and the data, so each is rendered to HTML once and cached under
``data_versioned`` (the key holds the parameters, the language and the data version; writers
bump the version when they commit, so a price import or an ingest verdict shows within the
debounce period). ``pages_warm`` renders the busiest ones; the bump asks for it (gpuatlas/data_version.py).

A body's key is its parsed parameters (``RankingParams``): parameters a page does not read, their
order and their spelling make no new key, and at most DATA_VERSION_CACHE_VARIANTS parameter sets
of a page are stored per data version (gpuatlas/data_version.py), user prices included: a flood
of distinct URLs adds no keys past that. Each address may have only so many bodies computed a
minute (dashboard/views.py).

The bodies are rendered without a request and the page around them per request
(gpuatlas/page_bodies.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.conf import settings
from django.core.paginator import Page, Paginator
from django.db.models import Sum
from django.utils import translation
from django.utils.http import urlencode
from django.utils.translation import gettext as _

from benchmarks_app.comparison_rules import MIN_COMMUNITY_N
from benchmarks_app.models import ResultAggregate
from benchmarks_app.selectors import gpu_training_run_groups, gpu_training_runs
from benchmarks_app.services.workloads import LAMBDA_SOURCE
from catalog.models import Gpu, Provider, Segment, Vendor
from catalog.selectors.gpus import gpu_for_page
from catalog.selectors.prices import price_status
from dashboard.figures.rankings import perf_price_scatter_figure, rankings_bar_figure, tiers_figure
from dashboard.figures.serving import ServingCurveLine, serving_curve_line, serving_curves_figure
from dashboard.ranking.maths import MIN_FIT_GPUS, TIER_NAMES, TIER_THRESHOLDS, pareto_frontier
from dashboard.ranking.use_cases import MODEL_SIZE_LABELS, PRECISION_FAMILY_LABELS, USE_CASES, use_case_requirement
from dashboard.selectors.gpus import gpu_page_compute
from dashboard.selectors.ranking_params import CURRENCIES, RankingParams, ranking_params_from_query
from dashboard.selectors.ranking_rows import Ranking, RankingRow
from dashboard.selectors.rankings import rankings_compute
from dashboard.selectors.tiers import tiers_compute
from gpuatlas.data_version import data_versioned
from gpuatlas.page_bodies import body_render
from llm.question import MAX_THROUGHPUT, TARGETS, target_rate
from llm.selectors.energy import gpu_energy_curves, power_curves_current


def filter_options() -> dict[str, Any]:
    """The choices of the filter form (three queries)."""
    return {
        "use_cases": list(USE_CASES.values()),
        "precision_labels": PRECISION_FAMILY_LABELS,
        "vendors": list(Vendor.objects.filter(gpus__is_curated=True).distinct().values_list("slug", "name")),
        "segments": Segment.choices,
        "providers": list(Provider.objects.values_list("slug", "name")),
        "baselines": [
            (gpu.slug, gpu.display_name)
            for gpu in Gpu.objects.curated().order_by("name").only("slug", "name", "name_zh")
        ],
        "currencies": CURRENCIES,
        "price_how": [
            ("typical", _("typical (median of providers)")),
            ("cheapest", _("cheapest on-demand")),
            ("spot", _("cheapest spot")),
        ],
        "conditions": [("new", _("new")), ("used", _("used"))],
        "bases": [("all", _("measured and estimated")), ("measured", _("measured only"))],
        "shows": [("eligible", _("only GPUs that can do it")), ("all", _("all GPUs"))],
        "model_size_labels": MODEL_SIZE_LABELS,
        "interactivity_targets": [
            (
                target,
                _("maximum throughput")
                if target == MAX_THROUGHPUT
                else _("%(rate)s tokens/s per user") % {"rate": target},
            )
            for target in TARGETS
        ],
        "mlperf_rows": [
            ("closed-available", _("MLPerf: closed division, available systems")),
            ("all", _("MLPerf: also open division, preview and rdi")),
        ],
        "sorts": [
            ("perf_per_dollar", _("performance per price")),
            ("perf", _("performance")),
            ("perf_per_kw", _("performance per kW (measured or estimated power, else TDP)")),
        ],
    }


def _labels(ranking: Ranking) -> dict[str, str]:
    params = ranking.params
    if params.mode == "rent":
        price_label = _("%(currency)s per GPU-hour") % {"currency": ranking.currency}
        value_label = _("Performance per %(currency)s/GPU-hour") % {"currency": ranking.currency}
    else:
        price_label = _("Purchase price, %(currency)s") % {"currency": ranking.currency}
        value_label = _("Performance per 1,000 %(currency)s") % {"currency": ranking.currency}
    perf_label = _("Performance (%(baseline)s = 1.0)") % {"baseline": ranking.baseline_name}
    if ranking.use_case.is_llm:
        batched = ranking.use_case.llm_mode == "batched"
        perf_label = _("Output tokens/s per GPU") if batched else _("Tokens/s of one stream")
        value_label = (
            _("Tokens/s per %(currency)s/GPU-hour") % {"currency": ranking.currency}
            if params.mode == "rent"
            else _("Tokens/s per 1,000 %(currency)s") % {"currency": ranking.currency}
        )
    return {"price": price_label, "value": value_label, "perf": perf_label}


def _switch_hrefs(params: RankingParams) -> dict[str, str]:
    """One-click links that flip the eligibility and the measured-only switches."""
    return {
        "show_all_href": "?" + urlencode(params.with_changes(show="all").to_query()),
        "show_eligible_href": "?" + urlencode(params.with_changes(show="eligible").to_query()),
        "measured_only_href": "?" + urlencode(params.with_changes(basis="measured").to_query()),
        "all_bases_href": "?" + urlencode(params.with_changes(basis="all").to_query()),
    }


# Rows of the ranking table per page: a serving ranking's row (its interval, source, price origin,
# a price box and a watch bell) is about 2 KB, and the curves chart draws the rows shown; the
# bar and value charts keep every GPU.
RANKING_ROWS_PER_PAGE = 25


def ranking_page_number(raw: str | None) -> int:
    """The table page a query asks for (``page``): a positive whole number, else the first (the
    paginator takes a number past the last page to the last)."""
    return int(raw) if raw and len(raw) <= 4 and raw.isascii() and raw.isdigit() and int(raw) > 0 else 1


def _page_hrefs(params: RankingParams, page: Page) -> dict[str, str]:
    def href(number: int) -> str:
        return "?" + urlencode({**params.to_query(), "page": str(number)})

    return {
        "previous_href": href(page.previous_page_number()) if page.has_previous() else "",
        "next_href": href(page.next_page_number()) if page.has_next() else "",
    }


@data_versioned("page:rankings", bounded=True)
def rankings_body(*, params: RankingParams, page: int) -> str:
    """The rankings page body for valid parameters, its table at ``page`` (``ranking_page_number``);
    RankingParamError for an unknown baseline."""
    ranking = rankings_compute(params=params)
    table = Paginator(ranking.rows, RANKING_ROWS_PER_PAGE).get_page(page)
    shown = {row.gpu_slug for row in table.object_list}
    labels = _labels(ranking)
    price_unit = ranking.rows[0].price.unit if ranking.rows else ""
    frontier = pareto_frontier(
        [
            (r.gpu_slug, r.price.amount, r.perf)
            for r in ranking.rows
            if r.price.amount is not None and r.perf is not None
        ]
    )
    context = {
        "params": params,
        "ranking": ranking,
        "labels": labels,
        "frontier": set(frontier),
        "bar_figure": rankings_bar_figure(
            ranking.rows,
            value_label=labels["value"],
            currency=ranking.currency,
            price_unit=price_unit,
            baseline_name=ranking.baseline_name,
            title=labels["value"] if ranking.use_case.is_llm else "",
        ),
        "scatter_figure": perf_price_scatter_figure(
            ranking.rows,
            frontier=frontier,
            price_label=labels["price"],
            perf_label=labels["perf"],
            value_label=labels["value"],
            currency=ranking.currency,
            price_unit=price_unit,
        ),
        "serving_figure": _serving_figure(ranking, list(table.object_list)) if ranking.serving_choices else None,
        "table": table,
        **_page_hrefs(params, table),
        # The prices typed on other pages' rows travel with the filter form, as the rows' own boxes do.
        "prices_elsewhere": [(slug, f"{price:g}") for slug, price in params.gpu_prices if slug not in shown],
        "csv_href": "?" + urlencode({**params.to_query(), "format": "csv"}),
        "share_href": "?" + urlencode(params.to_query()),
        **_switch_hrefs(params),
        "requirement": use_case_requirement(ranking.use_case, family=params.precision),
        "memory_floor_citation": ranking.use_case.memory_floor_citation,
        "lab_source": LAMBDA_SOURCE,
        "min_fit_gpus": MIN_FIT_GPUS,
        "priced": sum(1 for r in ranking.rows if r.perf_per_dollar is not None),
        "measured_count": sum(1 for r in ranking.rows if r.perf_basis == "measured"),
        "min_community_n": MIN_COMMUNITY_N,
        "price_window_days": settings.PRICE_FRESHNESS_DAYS,
        "tier_thresholds": TIER_THRESHOLDS,
        **filter_options(),
    }
    return body_render(template="dashboard/rankings.html", context=context)


def serving_curve_lines(ranking: Ranking, rows: Sequence[RankingRow]) -> list[ServingCurveLine]:
    """The curves chart's lines: the ranking's ``rows`` in its order, at the row's price."""
    lines = []
    power_curves = power_curves_current() if ranking.serving_choices else {}
    for row in rows:
        choice = ranking.serving_choices.get(row.gpu_id)
        price = row.price.amount if ranking.params.mode == "rent" else None
        line = (
            serving_curve_line(
                choice=choice, key=row.gpu_slug, name=row.gpu_name, price=price, power_curves=power_curves
            )
            if choice
            else None
        )
        if line is not None:
            lines.append(line)
    return lines


def _serving_figure(ranking: Ranking, rows: Sequence[RankingRow]) -> dict[str, Any]:
    return serving_curves_figure(
        serving_curve_lines(ranking, rows),
        currency=ranking.currency,
        target=target_rate(ranking.params.interactivity),
        title=_("Output tokens/s per GPU against tokens/s per user · %(workload)s")
        % {"workload": ranking.workload_label},
    )


def _tier_bounds() -> dict[str, str]:
    bounds, upper = {}, None
    for name in TIER_NAMES:
        lower = TIER_THRESHOLDS.get(name)
        if lower is None:
            bounds[name] = f"< {upper:.0%}"
        elif upper is None:
            bounds[name] = f"≥ {lower:.0%}"
        else:
            bounds[name] = f"{lower:.0%} – {upper:.0%}"
        upper = lower
    return bounds


@data_versioned("page:tiers", bounded=True)
def tiers_body(*, params: RankingParams) -> str:
    """The tier list page body for valid parameters; RankingParamError for an unknown baseline."""
    tier_list = tiers_compute(params=params)
    tabs = [(uc, "?" + urlencode(params.with_changes(use_case=uc.slug).to_query())) for uc in USE_CASES.values()]
    context = {
        "params": params,
        "tier_list": tier_list,
        "ranking": tier_list.ranking,
        "tabs": tabs,
        "tier_rows": [(name, tier_list.tiers[name]) for name in TIER_NAMES],
        "tier_figure": tiers_figure(
            tier_list.tiers,
            thresholds=tier_list.thresholds,
            currency=tier_list.ranking.currency,
            price_unit=str(tier_list.ranking.rows[0].price.unit) if tier_list.ranking.rows else "",
            mark=tier_list.ranking.tier_mark,
        )
        if any(tier_list.tiers.values())
        else None,
        "tier_bounds": _tier_bounds(),
        "min_community_n": MIN_COMMUNITY_N,
        "min_fit_gpus": MIN_FIT_GPUS,
        "requirement": use_case_requirement(tier_list.ranking.use_case, family=params.precision),
        "memory_floor_citation": tier_list.ranking.use_case.memory_floor_citation,
        "lab_source": LAMBDA_SOURCE,
        "price_window_days": settings.PRICE_FRESHNESS_DAYS,
        "csv_href": "?" + urlencode({**params.to_query(), "format": "csv"}),
        "share_href": "?" + urlencode(params.to_query()),
        **filter_options(),
    }
    return body_render(template="dashboard/tiers.html", context=context)


@data_versioned("page:gpu", key=lambda gpu, currency: (gpu.pk, currency))
def gpu_page_body(*, gpu: Gpu, currency: str) -> str:
    """The GPU page body: the catalogue's specification part (citations, tensor peaks, aliases)
    and what the dashboard adds (standings, offers, price history, results)."""
    context = {
        "gpu": gpu,
        "citations": {c.field: c for c in gpu.citations.all()},
        "tensor_peaks": list(gpu.tensor_peaks.all()),
        "aliases": list(gpu.aliases.values_list("alias", flat=True)),
        "page": gpu_page_compute(gpu=gpu, currency=currency),
        "energy_curves": gpu_energy_curves(gpu=gpu),
        "training_groups": gpu_training_run_groups(gpu_training_runs(gpu_id=gpu.pk)),
    }
    return body_render(template="dashboard/gpu_detail.html", context=context)


# The GPU pages warmed after a bump: those with the most results behind them.
WARM_GPU_PAGES = 20


def pages_warm() -> int:
    """Render the busiest cached pages for the current data version, in every language: the
    default rankings and tier list of each use case, the pages of the most measured GPUs and the
    footer's price status (what a bump would otherwise make their next visitors wait for).
    Returns pages rendered or found cached."""
    params = [ranking_params_from_query({"use_case": slug}) for slug in USE_CASES]
    busiest = ResultAggregate.objects.values("gpu__slug").annotate(results=Sum("n")).order_by("-results", "gpu__slug")
    slugs = [row["gpu__slug"] for row in busiest[:WARM_GPU_PAGES]]
    pages = 0
    for language, _name in settings.LANGUAGES:
        with translation.override(language):  # the language is part of every key
            price_status()
            for ranking_params in params:
                rankings_body(params=ranking_params, page=1)
                tiers_body(params=ranking_params)
                pages += 2
            for slug in slugs:
                gpu = gpu_for_page(slug=slug)
                if gpu is not None:
                    gpu_page_body(gpu=gpu, currency="USD")
                    pages += 1
    return pages
