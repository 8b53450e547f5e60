"""The GPU page (/gpus/<slug>/, named dashboard:gpu-detail): the catalogue's specs with the
dashboard's offers, price history, results and standings (dashboard/gpu_detail.html extends the
catalogue's template), and its offers as CSV."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse

from catalog.money import currency_from_query, display_money
from catalog.selectors.gpus import gpu_for_page
from catalog.selectors.prices import gpu_offers
from dashboard.csv_export import csv_response
from dashboard.fragments import gpu_page_body, page_response
from dashboard.render_limits import page_renders_limited


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
