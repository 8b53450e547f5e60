"""Dashboard pages: rankings, tiers, comparison, architectures, open data.

Views parse, call selectors and figures, render; every table is also served as CSV with
``?format=csv`` (the filters of the page apply).
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse, HttpResponseBase, StreamingHttpResponse
from django.shortcuts import render
from django.utils.http import urlencode
from django.utils.translation import gettext as _

from catalog.models import Gpu
from catalog.money import CURRENCIES, currency_from_query
from catalog.selectors.gpus import gpus_lookup
from dashboard import fragments
from dashboard.csv_export import csv_response
from dashboard.figures.compare import compare_figure
from dashboard.open_data import TABLES
from dashboard.ranking.use_cases import MODEL_SIZE_LABELS, USE_CASES, UseCase
from dashboard.selectors.architectures import architecture_timeline, architectures_compute
from dashboard.selectors.compare import COMPARE_PRECISIONS, Comparison, compare_compute
from dashboard.selectors.ranking_params import RankingParamError, RankingParams, ranking_params_from_query
from dashboard.selectors.ranking_rows import RankingRow, ranking_row_column
from dashboard.selectors.rankings import rankings_compute
from dashboard.selectors.tiers import tiers_compute
from gpuatlas.data_version import compute_spend, data_version_cached
from gpuatlas.page_bodies import body_render, page_response
from gpuatlas.render_limits import page_renders_limited
from llm.selectors.model_page import llm_model_page

# The CSV's columns: published row columns (ranking_rows.ROW_COLUMNS, the API's names), in the
# CSV's order; two keep the names the CSV had before the API existed.
RANKING_CSV_COLUMNS = (
    "rank", "gpu", "gpu_name", "vendor_name", "segment", "memory_gib", "perf", "perf_basis", "perf_measured",
    "perf_estimated", "n", "distinct_submitters", "price", "currency", "price_unit", "price_source",
    "perf_per_dollar", "perf_per_dollar_unit", "perf_per_kw", "tier", "meets_memory_floor", "eligible",
    "ineligible_reasons", "estimate_error_pct", "measured_via",
    "price_provider", "price_instance_type", "price_region", "price_observed_at", "price_age_days",
    "price_date_estimated", "price_min", "price_max", "price_providers",
    "llm_gpu_count", "cost_per_million_tokens", "llm_precision", "llm_source", "llm_source_url", "llm_target",
    "llm_price_basis",
    "scaling_gpu_count", "scaling_efficiency", "scaling_n", "scaling_distinct_submitters", "scaling_interconnect",
    "scaling_tokens_per_s_per_gpu", "scaling_one_gpu_tokens_per_s",
    "estimate_outside_range", "estimate_outside_reasons", "llm_configuration", "llm_workload", "llm_anchor",
    "ranked_value",
    "perf_low", "perf_high", "cost_per_million_tokens_low", "cost_per_million_tokens_high", "interval_kind",
    "energy_basis", "joules_per_token", "joules_per_token_low", "joules_per_token_high",
    "electricity_per_million_tokens", "suite_perf", "training_mfu", "training_mfu_runs",
    "perf_per_kw_power_w", "perf_per_kw_basis",
)  # fmt: skip
_CSV_NAMES = {"gpu": "gpu_slug", "vendor_name": "vendor"}
RANKING_CSV_HEADER = tuple(_CSV_NAMES.get(name, name) for name in RANKING_CSV_COLUMNS)


def _ranking_csv_rows(rows: list[RankingRow]) -> list[list[Any]]:
    def cell(row: RankingRow, name: str) -> Any:
        value = ranking_row_column(row, name)
        return "; ".join(value) if isinstance(value, list) else value

    return [[cell(r, name) for name in RANKING_CSV_COLUMNS] for r in rows]


def _params_or_error(request: HttpRequest) -> tuple[RankingParams, RankingParamError | None]:
    query = request.GET.dict()
    # The filter form keeps the old precision when the use case changes: drop it rather than
    # answer 400 (the API stays strict).
    use_case = USE_CASES.get(query.get("use_case") or "training")
    if use_case and query.get("precision") and query["precision"] not in use_case.precision_families:
        query.pop("precision")
    try:
        return ranking_params_from_query(query), None
    except RankingParamError as error:
        return RankingParams(), error


def _error_page(request: HttpRequest, template: str, params: RankingParams, error: RankingParamError) -> HttpResponse:
    context = {"params": params, "error": error, **fragments.filter_options()}
    return render(request, template, context, status=400)


@page_renders_limited
def rankings_view(request: HttpRequest) -> HttpResponseBase:
    params, error = _params_or_error(request)
    if error is None:
        try:
            if request.GET.get("format") == "csv":
                compute_spend()
                ranking = rankings_compute(params=params)
                return csv_response(
                    filename=f"rankings-{params.use_case}.csv",
                    header=RANKING_CSV_HEADER,
                    rows=_ranking_csv_rows(ranking.rows),
                )
            # The body is the same for every visitor: cached by parameters, language and data
            # version (dashboard/fragments.py); the header around it is rendered per request.
            page = fragments.ranking_page_number(request.GET.get("page"))
            body = fragments.rankings_body(params=params, page=page)
        except RankingParamError as baseline_error:
            error = baseline_error
    if error is not None:
        return _error_page(request, "dashboard/rankings.html", params, error)
    return page_response(request, template="dashboard/rankings.html", body=body)


@page_renders_limited
def tiers_view(request: HttpRequest) -> HttpResponseBase:
    params, error = _params_or_error(request)
    if error is None:
        try:
            if request.GET.get("format") == "csv":
                compute_spend()
                tier_list = tiers_compute(params=params)
                rows = [row for tier in tier_list.tiers.values() for row in tier]
                return csv_response(
                    filename=f"tiers-{params.use_case}.csv", header=RANKING_CSV_HEADER, rows=_ranking_csv_rows(rows)
                )
            body = fragments.tiers_body(params=params)
        except RankingParamError as baseline_error:
            error = baseline_error
    if error is not None:
        return _error_page(request, "dashboard/tiers.html", params, error)
    return page_response(request, template="dashboard/tiers.html", body=body)


COMPARE_MIN, COMPARE_MAX = 2, 4


def _compare_texts(request: HttpRequest) -> list[str]:
    """What the picker sent (one ``gpu`` field per GPU: a name, page slug or alias) and the
    comma-separated slugs of shared links (``gpus``), in order, blanks dropped."""
    texts = [t.strip() for t in request.GET.getlist("gpu") if t.strip()]
    texts += [t.strip() for t in request.GET.get("gpus", "").split(",") if t.strip()]
    return [t[:120] for t in texts]


@page_renders_limited
def compare_view(request: HttpRequest) -> HttpResponseBase:
    texts = _compare_texts(request)
    currency = currency_from_query(request.GET.get("currency"))
    if request.GET.get("format") == "csv":
        compute_spend()
        status, context = _compare_context(texts=texts, currency=currency)
        if "comparison" in context:
            return _compare_csv(context["comparison"], context["use_cases"])
        return render(request, "dashboard/compare.html", context, status=status)
    # The page's body holds nothing of the user: cached by what was asked, like the rankings'.
    status, body = data_version_cached(
        "page:compare", (texts, currency), lambda: _compare_body(texts=texts, currency=currency), bounded=True
    )
    return page_response(request, template="dashboard/compare.html", body=body, status=status)


def _compare_body(*, texts: list[str], currency: str) -> tuple[int, str]:
    """The comparison page's status and body (rendered without a request)."""
    status, context = _compare_context(texts=texts, currency=currency)
    return status, body_render(template="dashboard/compare.html", context=context)


def _compare_context(*, texts: list[str], currency: str) -> tuple[int, dict[str, Any]]:
    """The comparison of the GPUs named by ``texts`` in ``currency``, or the picker with why not."""
    context: dict[str, Any] = {
        "picker": (texts + [""] * COMPARE_MAX)[:COMPARE_MAX] if len(texts) <= COMPARE_MAX else texts,
        "choices": list(Gpu.objects.curated().order_by("name").values_list("slug", "name")),
        "currency": currency,
        "currencies": CURRENCIES,
        "precisions": COMPARE_PRECISIONS,
    }
    if not texts:
        return 200, context
    if not (COMPARE_MIN <= len(texts) <= COMPARE_MAX):
        context["error"] = _("Choose between %(min)s and %(max)s different GPUs (you gave %(n)s).") % {
            "min": COMPARE_MIN,
            "max": COMPARE_MAX,
            "n": len(texts),
        }
        return 400, context
    lookups = gpus_lookup(texts=texts)
    unknown = [found for found in lookups if found.gpu is None]
    if unknown:
        context["unknown"] = unknown
        context["error"] = _("No GPU in the catalogue is called %(names)s.") % {
            "names": ", ".join(f"“{found.text}”" for found in unknown)
        }
        return 404, context
    gpus = [found.gpu for found in lookups if found.gpu is not None]
    if len({g.id for g in gpus}) != len(gpus):
        context["error"] = _("Choose between %(min)s and %(max)s different GPUs (you gave %(n)s).") % {
            "min": COMPARE_MIN,
            "max": COMPARE_MAX,
            "n": len({g.id for g in gpus}),
        }
        return 400, context
    comparison = compare_compute(gpus=gpus, currency=currency)
    columns = comparison.columns
    use_cases = list(USE_CASES.values())
    names = [c.gpu.name for c in columns]
    figure = compare_figure(
        names,
        [str(uc.label) for uc in use_cases],
        [[c.cells[uc.slug].relative for uc in use_cases] for c in columns],
        [[c.cells[uc.slug].relative_basis if c.cells[uc.slug].relative else "" for uc in use_cases] for c in columns],
    )
    slugs = ",".join(c.gpu.slug for c in columns)
    context.update(
        {
            "picker": (names + [""] * COMPARE_MAX)[:COMPARE_MAX],
            "comparison": comparison,
            "columns": columns,
            "figure": figure,
            "table": [(uc, [c.cells[uc.slug] for c in columns]) for uc in use_cases],
            "peak_rows": [
                (p, [(c.peaks.get(p, "unknown"), c.peak_sources.get(p)) for c in columns]) for p in COMPARE_PRECISIONS
            ],
            "peak_sources": [sorted(set(c.peak_sources.values())) for c in columns],
            "use_cases": use_cases,
            "model_size_labels": MODEL_SIZE_LABELS,
            "share_href": "?" + urlencode({"gpus": slugs, **({"currency": currency} if currency != "USD" else {})}),
            "csv_href": "?" + urlencode({"gpus": slugs, "currency": currency, "format": "csv"}),
        }
    )
    return 200, context


# Where each compared price comes from (catalog.selectors.prices.PriceProvenance fields).
_ORIGIN_FIELDS = ("provider", "observed_at", "date_is_estimate", "age_days")


def _compare_csv(comparison: Comparison, use_cases: list[UseCase]) -> StreamingHttpResponse:
    header = ["gpu_slug", "gpu_name", "memory_gib", "memory_bandwidth_gbs", "interconnect_gbs", "tdp_w"]
    header += [f"{p}_dense_tflops" for p in COMPARE_PRECISIONS]
    header += ["typical_price_per_gpu_hour", "cheapest_price_per_gpu_hour", "currency", "price_providers"]
    header += [f"{which}_{field}" for which in ("typical", "cheapest") for field in _ORIGIN_FIELDS]
    for uc in use_cases:
        header += [
            f"{uc.slug}_perf",
            f"{uc.slug}_relative_to_first",
            f"{uc.slug}_basis",
            f"{uc.slug}_n",
            f"{uc.slug}_estimate_error_pct",
            f"{uc.slug}_relative_per_price",
            f"{uc.slug}_cost_per_million_tokens",
            f"{uc.slug}_eligible",
        ]
    rows = []
    for col in comparison.columns:
        gpu = col.gpu
        line: list[Any] = [
            gpu.slug,
            gpu.name,
            gpu.memory_gib,
            gpu.memory_bandwidth_gbs,
            gpu.interconnect_gbs,
            gpu.tdp_w,
        ]
        line += [
            col.peaks.get(p, "") if col.peaks.get(p, "") is not None else "unsupported" for p in COMPARE_PRECISIONS
        ]
        line += [col.typical_price, col.cheapest_price, comparison.money.currency, col.price_providers]
        for origin in (col.typical_origin, col.cheapest_origin):
            line += [getattr(origin, field) if origin else "" for field in _ORIGIN_FIELDS]
        for uc in use_cases:
            cell = col.cells[uc.slug]
            r = cell.row
            line += (
                [
                    r.perf,
                    cell.relative,
                    r.perf_basis,
                    r.n,
                    r.estimate_error_pct,
                    cell.per_price,
                    r.cost_per_million_tokens,
                    r.eligible,
                ]  # fmt: skip
                if r
                else [""] * 8
            )
        rows.append(line)
    return csv_response(filename="compare.csv", header=header, rows=rows)


@page_renders_limited
def architectures_view(request: HttpRequest) -> HttpResponse | StreamingHttpResponse:
    if request.GET.get("format") == "csv":
        compute_spend()  # a download, read from the database each time
        cards = architectures_compute()
        header = [
            "slug",
            "name",
            "vendor",
            "release_month",
            "tensor_core_generation",
            "tf32",
            "bf16",
            "fp8",
            "fp4",
            "sparsity",
            "min_cuda",
            "gpus",
            "source",
        ]
        rows = [
            [
                a.slug,
                a.name,
                a.vendor.name,
                a.release_month,
                a.tensor_core_generation,
                a.supports_tf32,
                a.supports_bf16,
                a.supports_fp8,
                a.supports_fp4,
                a.supports_sparsity,
                a.min_cuda_version,
                " | ".join(g.name for g in c.gpus),
                a.source,
            ]  # fmt: skip
            for c in cards
            for a in [c.architecture]
        ]
        return csv_response(filename="architectures.csv", header=header, rows=rows)
    body = data_version_cached("page:architectures", (), _architectures_body)
    return page_response(request, template="dashboard/architectures.html", body=body)


def _architectures_body() -> str:
    cards = architectures_compute()
    context = {"cards": cards, "timeline": architecture_timeline(cards)}
    return body_render(template="dashboard/architectures.html", context=context)


@page_renders_limited
def open_data_view(request: HttpRequest) -> HttpResponse | StreamingHttpResponse:
    table_name = request.GET.get("table", "")
    if table_name:
        table = TABLES.get(table_name)
        if table is None:
            return render(
                request,
                "dashboard/open_data.html",
                {"tables": TABLES.values(), "error": _("Unknown table %(name)r.") % {"name": table_name[:40]}},
                status=404,
            )
        compute_spend()  # a whole table read from the database, never cached
        return csv_response(filename=f"{table.name}.csv", header=table.header, rows=table.rows())
    return render(request, "dashboard/open_data.html", {"tables": TABLES.values()})


@page_renders_limited
def llm_model_view(request: HttpRequest) -> HttpResponse:
    """How the LLM figures are made: the estimate model, its fitted constants and its error."""
    body = data_version_cached("page:llm-model", (), _llm_model_body)
    return page_response(request, template="dashboard/llm_model.html", body=body)


def _llm_model_body() -> str:
    context = {"page": llm_model_page(), "labels": MODEL_SIZE_LABELS}
    return body_render(template="dashboard/llm_model.html", context=context)
