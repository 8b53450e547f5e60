"""Catalogue pages: the searchable GPU list and the GPU page."""

from __future__ import annotations

from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import render
from django.utils.translation import gettext_lazy as _

from catalog.forms import GpuFilterForm
from catalog.models import Architecture, Gpu, Vendor
from catalog.selectors import gpu_catalogue, gpu_for_page
from dashboard.fragments import gpu_page_body, page_response


def gpu_list_view(request: HttpRequest) -> HttpResponse:
    form = GpuFilterForm(request.GET or None)
    filters = dict(form.cleaned_data) if form.is_valid() else {}
    scope = filters.pop("scope", "") or "dl"
    sort = filters.pop("sort", "") or ""
    rows = gpu_catalogue(scope=scope, sort=sort, **{k: v for k, v in filters.items() if v not in (None, "")})
    page = Paginator(rows, 50).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    sortless = query.copy()
    sortless.pop("sort", None)
    scopeless = query.copy()
    scopeless.pop("scope", None)
    scopeless.pop("page", None)
    return render(
        request,
        "catalog/gpu_list.html",
        {
            "form": form,
            "page": page,
            "scope": scope,
            "sort": sort,
            "query_string": query.urlencode(),
            "sortless_query": sortless.urlencode(),
            "all_href": "?" + "&".join(filter(None, [scopeless.urlencode(), "scope=all"])),
            "dl_href": "?" + scopeless.urlencode(),
            "vendors": Vendor.objects.all(),
            "architectures": Architecture.objects.all(),
            "columns": CATALOGUE_COLUMNS,
            "all_count": Gpu.objects.count(),
        },
    )


# (sort key, header, unit): the sortable columns of the catalogue, in page order.
CATALOGUE_COLUMNS = (
    ("memory", _("Memory"), "GiB"),
    ("bandwidth", _("Bandwidth"), "GB/s"),
    ("bf16", _("BF16 dense"), "TFLOPS"),
    ("fp8", _("FP8 dense"), "TFLOPS"),
    ("tdp", _("TDP"), "W"),
    ("price", _("Typical price"), _("USD/GPU-hour")),
    ("released", _("Released"), ""),
)


def gpu_detail_view(request: HttpRequest, slug: str) -> HttpResponse | StreamingHttpResponse:
    # The specs part is the catalogue's; the dashboard adds offers, price history, results and
    # tiers through its own selector and template (dashboard/gpu_detail.html extends this one).
    from dashboard.selectors_pages import gpu_offers, money_for

    gpu = gpu_for_page(slug=slug)
    if gpu is None:
        raise Http404(f"No GPU with the slug {slug!r}.")
    currency = request.GET.get("currency", "USD").upper()
    currency = currency if currency in ("USD", "CNY") else "USD"
    if request.GET.get("format") == "csv":
        from dashboard.csv_export import csv_response

        money = money_for(currency)
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
