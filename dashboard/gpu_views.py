"""The GPU page (/gpus/<slug>/, named dashboard:gpu-detail): the catalogue's specs with the
dashboard's offers, price history, results and standings (dashboard/gpu_detail.html extends the
catalogue's template), and its offers as CSV; its results page (/gpus/<slug>/results/): every
measured configuration, a page at a time."""

from __future__ import annotations

from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import render
from django.utils.translation import gettext as _

from benchmarks_app.selectors import gpu_training_runs
from catalog.money import currency_from_query, display_money
from catalog.selectors.gpus import gpu_for_page
from catalog.selectors.prices import gpu_offers
from dashboard.csv_export import csv_response
from dashboard.fragments import gpu_page_body
from dashboard.selectors.gpus import gpu_results_lines
from gpuatlas.data_version import compute_spend
from gpuatlas.page_bodies import page_response
from gpuatlas.render_limits import page_renders_limited

# Rows per page of a GPU's results page.
RESULTS_PER_PAGE = 100


@page_renders_limited
def gpu_detail_view(request: HttpRequest, slug: str) -> HttpResponse | StreamingHttpResponse:
    gpu = gpu_for_page(slug=slug)
    if gpu is None:
        raise Http404(f"No GPU with the slug {slug!r}.")
    currency = currency_from_query(request.GET.get("currency"))
    if request.GET.get("format") == "csv":
        money = display_money(currency=currency)
        offers, _total = gpu_offers(gpu=gpu, money=money, limit=None)
        header = [
            "provider",
            "instance_type",
            "region",
            "gpu_count",
            "vcpus_per_gpu",
            "ram_gib_per_gpu",
            "price_per_gpu_hour",
            "currency",
            "is_spot",
            "observed_at",
            "observed_date_estimated",
            "form_factor_not_stated",
        ]
        rows = [
            [
                o.provider,
                o.instance_type,
                o.region,
                o.gpu_count,
                o.vcpus_per_gpu,
                o.ram_gib_per_gpu,
                o.price_per_gpu_hour,
                money.currency,
                o.is_spot,
                o.last_seen.isoformat(),
                o.date_is_estimate,
                o.variant_ambiguous,
            ]
            for o in offers
        ]
        return csv_response(filename=f"offers-{gpu.slug}.csv", header=header, rows=rows)

    # The body is the same for every visitor: rendered once per data version, language and
    # currency (dashboard/fragments.py); the header around it is rendered per request.
    body = gpu_page_body(gpu=gpu, currency=currency)
    return page_response(request, template="dashboard/gpu_detail.html", body=body, context={"gpu": gpu})


@page_renders_limited
def gpu_training_runs_view(request: HttpRequest, slug: str) -> HttpResponse:
    gpu = gpu_for_page(slug=slug)
    if gpu is None:
        raise Http404(f"No GPU with the slug {slug!r}.")
    runs = gpu_training_runs(gpu_id=gpu.pk)
    if not runs:
        raise Http404(f"{slug!r} has no MLPerf Training run.")
    page = Paginator(runs, RESULTS_PER_PAGE).get_page(request.GET.get("page"))
    return render(request, "dashboard/gpu_training_runs.html", {"gpu": gpu, "page": page})


@page_renders_limited
def gpu_results_view(request: HttpRequest, slug: str) -> HttpResponse:
    gpu = gpu_for_page(slug=slug)
    if gpu is None:
        raise Http404(f"No GPU with the slug {slug!r}.")
    compute_spend()  # not cached: one page of a long list, asked for by few
    lines, baseline_name = gpu_results_lines(gpu=gpu)
    workload = request.GET.get("workload", "")
    context = {"gpu": gpu, "baseline_name": baseline_name, "workload": workload, "total": len(lines)}
    if workload:
        lines = [line for line in lines if line.workload_slug == workload]
        if not lines:
            error = _("workload: %(gpu)s has no measured result of a workload %(workload)r.") % {
                "gpu": gpu.display_name,
                "workload": workload,
            }
            return render(request, "dashboard/gpu_results.html", {**context, "error": error}, status=400)
    page = Paginator(lines, RESULTS_PER_PAGE).get_page(request.GET.get("page"))
    return render(request, "dashboard/gpu_results.html", {**context, "page": page})
