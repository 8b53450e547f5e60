"""Catalogue pages: the searchable GPU list (the GPU page is the dashboard's: dashboard/urls.py, dashboard/gpu_views.py)."""

from __future__ import annotations

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.translation import gettext_lazy as _

from catalog.forms import GpuFilterForm
from catalog.models import Architecture, Gpu, Vendor
from catalog.selectors.gpus import gpu_catalogue
from gpuatlas.data_version import compute_spend
from gpuatlas.render_limits import page_renders_limited


@page_renders_limited
def gpu_list_view(request: HttpRequest) -> HttpResponse:
    compute_spend()  # the filtered, sorted catalogue, read on every request
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
